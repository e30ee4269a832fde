#if canImport(Glibc)
import Glibc
#endif

/// Whether a path matches a `sources:` pattern: `*`, `?` and `[…]` within a segment (`fnmatch`,
/// hidden names only for patterns that name them), `**` for any number of directories (never a
/// hidden one). The one definition the host's globbing, `kiln affected` and the hook launcher
/// share, so they can't disagree about a file.
///
/// Threading: stateless; any thread.
public enum GlobPattern {
    /// Whether `path` (relative, `/`-separated) matches `pattern`.
    public static func matches(_ pattern: String, _ path: String) -> Bool {
        let patternSegments = pattern.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let pathSegments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        return match(patternSegments[...], pathSegments[...])
    }

    /// Whether `text` (a pattern or one of its segments) has wildcards.
    public static func isMagic(_ text: String) -> Bool {
        text.contains { $0 == "*" || $0 == "?" || $0 == "[" }
    }

    private static func match(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        guard let segment = pattern.first else { return path.isEmpty }
        if segment == "**" {
            // Zero directories, or one more (never a hidden one), then `**` again.
            if match(pattern.dropFirst(), path) { return true }
            guard let first = path.first, !first.hasPrefix("."), path.count > 1 else { return false }
            return match(pattern, path.dropFirst())
        }
        guard let name = path.first else { return false }
        let matched = isMagic(segment) ? fnmatch(segment, name, FNM_PERIOD) == 0 : segment == name
        return matched && match(pattern.dropFirst(), path.dropFirst())
    }
}
