#if canImport(Glibc)
import Glibc
#endif

/// Expands `sources:` patterns: `*`, `?` and `[…]` within a path segment, `**` for any number of
/// directories. Paths are relative to a base directory; hidden entries match only patterns that
/// name them (`.*`), and `**` never descends into `.git` or `.kiln`.
///
/// Threading: stateless; safe from any thread.
enum Glob {
    /// The files matching `pattern` under `base`, relative to `base`, sorted.
    static func files(matching pattern: String, in base: String) -> [String] {
        var segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        var prefix = ""
        if pattern.hasPrefix("/") { prefix = "/" }
        // Walk the literal leading segments directly.
        while let first = segments.first, !isMagic(first), segments.count > 1 {
            prefix += first + "/"
            segments.removeFirst()
        }
        var results: [String] = []
        let start = Path.join(base, prefix)
        walk(directory: start, relative: prefix, segments: segments[...], into: &results)
        return results.sorted()
    }

    /// Whether a pattern has wildcards.
    static func isMagic(_ text: String) -> Bool {
        text.contains { $0 == "*" || $0 == "?" || $0 == "[" }
    }

    private static func walk(directory: String, relative: String, segments: ArraySlice<String>, into results: inout [String]) {
        guard let segment = segments.first else { return }
        let rest = segments.dropFirst()
        if segment == "**" {
            // Zero directories…
            walk(directory: directory, relative: relative, segments: rest, into: &results)
            // …or one more, then `**` again.
            for entry in entries(of: directory) where entry.isDirectory && !entry.name.hasPrefix(".") {
                walk(
                    directory: directory + "/" + entry.name, relative: relative + entry.name + "/", segments: segments,
                    into: &results
                )
            }
            return
        }
        if !isMagic(segment) {
            let path = directory + "/" + segment
            var info = stat()
            guard stat(path, &info) == 0 else { return }
            let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
            if rest.isEmpty {
                if !isDirectory { results.append(relative + segment) }
            } else if isDirectory {
                walk(directory: path, relative: relative + segment + "/", segments: rest, into: &results)
            }
            return
        }
        for entry in entries(of: directory) where fnmatch(segment, entry.name, FNM_PERIOD) == 0 {
            if rest.isEmpty {
                if !entry.isDirectory { results.append(relative + entry.name) }
            } else if entry.isDirectory {
                walk(directory: directory + "/" + entry.name, relative: relative + entry.name + "/", segments: rest, into: &results)
            }
        }
    }

    private static func entries(of directory: String) -> [(name: String, isDirectory: Bool)] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var result: [(String, Bool)] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." || name == ".git" || name == ".kiln" { continue }
            var isDirectory = entry.pointee.d_type == UInt8(DT_DIR)
            if entry.pointee.d_type == UInt8(DT_UNKNOWN) || entry.pointee.d_type == UInt8(DT_LNK) {
                var info = stat()
                isDirectory = stat(directory + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
            }
            result.append((name, isDirectory))
        }
        return result
    }
}
