import KilnPaths

#if canImport(Glibc)
import Glibc
#endif

/// A directory a glob expansion read, and what `stat` said of it just before.
///
/// Threading: a value type.
struct VisitedDirectory: Sendable {
    /// Its absolute path.
    var path: String
    /// When it was looked at (`CLOCK_REALTIME`, ns).
    var seenAt: Int64
    /// Its status then; `nil` when it didn't exist.
    var stat: FileStat?
}

/// Expands `sources:` patterns: `*`, `?` and `[…]` within a path segment, `**` for any number of
/// directories. Paths are relative to a base directory; hidden entries match only patterns that
/// name them (`.*`), and `**` never descends into `.git` or `.kiln`.
///
/// Threading: stateless; safe from any thread.
enum Glob {
    /// The files matching `pattern` under `base`, relative to `base`, sorted.
    static func files(matching pattern: String, in base: String) -> [String] {
        var ignored: [VisitedDirectory] = []
        return files(matching: pattern, in: base, visited: &ignored)
    }

    /// The files matching `pattern` under `base`, relative to `base`, sorted; appends to `visited`
    /// every directory the expansion looked into (absolute), with its status taken *before* it was
    /// read (`nil`: it didn't exist). While none of them changes, the expansion can't change
    /// either: adding, removing or renaming an entry changes its directory's mtime and ctime.
    static func files(matching pattern: String, in base: String, visited: inout [VisitedDirectory]) -> [String] {
        var segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        var prefix = ""
        if pattern.hasPrefix("/") { prefix = "/" }
        // Walk the literal leading segments directly.
        while let first = segments.first, !GlobPattern.isMagic(first), segments.count > 1 {
            prefix += first + "/"
            segments.removeFirst()
        }
        var results: [String] = []
        let start = Path.join(base, prefix)
        walk(directory: start, relative: prefix, segments: segments[...], into: &results, visited: &visited)
        return results.sorted()
    }

    private static func walk(
        directory: String, relative: String, segments: ArraySlice<String>, into results: inout [String],
        visited: inout [VisitedDirectory]
    ) {
        guard let segment = segments.first else { return }
        visited.append(VisitedDirectory(path: directory, seenAt: FileHasher.realTime(), stat: FileStat.of(directory)))
        let rest = segments.dropFirst()
        if segment == "**" {
            // Zero directories…
            walk(directory: directory, relative: relative, segments: rest, into: &results, visited: &visited)
            // …or one more, then `**` again.
            for entry in entries(of: directory) where entry.isDirectory && !entry.name.hasPrefix(".") {
                walk(
                    directory: directory + "/" + entry.name, relative: relative + entry.name + "/", segments: segments,
                    into: &results, visited: &visited
                )
            }
            return
        }
        if !GlobPattern.isMagic(segment) {
            let path = directory + "/" + segment
            var info = stat()
            guard stat(path, &info) == 0 else { return }
            let isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
            if rest.isEmpty {
                if !isDirectory { results.append(relative + segment) }
            } else if isDirectory {
                walk(directory: path, relative: relative + segment + "/", segments: rest, into: &results, visited: &visited)
            }
            return
        }
        for entry in entries(of: directory) where fnmatch(segment, entry.name, FNM_PERIOD) == 0 {
            if rest.isEmpty {
                if !entry.isDirectory { results.append(relative + entry.name) }
            } else if entry.isDirectory {
                walk(
                    directory: directory + "/" + entry.name, relative: relative + entry.name + "/", segments: rest,
                    into: &results, visited: &visited
                )
            }
        }
    }

    /// The entries of `directory` but `.`, `..`, `.git` and `.kiln`, and whether each is a directory.
    static func entries(of directory: String) -> [(name: String, isDirectory: Bool)] {
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
