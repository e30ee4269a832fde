import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The project root as a boundary: whether a path is inside it once every symbolic link on the
/// way is resolved. The one place that decides it, for the plan's `dir:`, `generates:` and
/// `depfile:` checks, for what `kiln clean` removes and for the depfiles a run deletes, so a link
/// planted in the tree can't lead a write or a removal outside.
///
/// Resolutions of directories are remembered: a 10,000-task plan whose outputs share a few
/// directories resolves each directory once.
///
/// Threading: any thread; the memo is guarded by its mutex.
final class ProjectBoundary: Sendable {
    /// The project root as kiln names it (normalized, absolute).
    let root: String
    /// The root with its own links resolved.
    let resolvedRoot: String
    private let rootPrefix: String
    private let resolvedRootPrefix: String
    /// What is known of each directory (as named): where it resolves to, whether that is inside
    /// the root, and the names of the links in it — one `realpath` and one `readdir` a directory,
    /// so a plan of 10,000 outputs in one directory makes no 10,000 system calls.
    private let directories = HostMutex<Memo>(Memo())

    /// What is known of directories, and the last one asked about (consecutive outputs mostly
    /// share a directory: compared without making a string or hashing one).
    private struct Memo {
        var byPath: [String: Directory] = [:]
        var last: (path: String, directory: Directory)?
    }

    private typealias Directory = (resolved: String, inside: Bool, links: Set<String>)

    /// The boundary of the project rooted at `root` (absolute, normalized).
    init(root: String) {
        self.root = root
        resolvedRoot = Self.resolvingLinks(root)
        rootPrefix = root == "/" ? "/" : root + "/"
        resolvedRootPrefix = resolvedRoot == "/" ? "/" : resolvedRoot + "/"
    }

    /// Whether `path` (absolute) is inside the project: lexically, and with every link on the way
    /// resolved. With `followingLastLink`, a link at `path` itself is followed too — what a
    /// command writing to `path` does; without it, `path` is the entry itself — what removing it
    /// touches. With `fresh`, nothing remembered is used: the file system as it is now (for a
    /// check made while commands run, which may have made directories and links since).
    func contains(_ path: String, followingLastLink: Bool, fresh: Bool = false) -> Bool {
        // Most tasks run in the root itself.
        if path == root { return true }
        // Most paths are normal already: Path.normalize returns those as they are.
        let normalized = Path.normalize(path)
        guard normalized == root || normalized.hasPrefix(rootPrefix) else { return false }
        if normalized == root { return true }
        let slash = normalized.utf8.lastIndex(of: UInt8(ascii: "/"))!
        let directory =
            slash == normalized.startIndex ? normalized[..<normalized.utf8.index(after: slash)] : normalized[..<slash]
        let name = normalized[normalized.utf8.index(after: slash)...]
        // A normal name in a directory that resolves inside the root is inside, unless the
        // name itself is a link that leads out.
        let known =
            fresh
            ? Self.describe(String(directory), resolvedRootPrefix: resolvedRootPrefix, resolvedRoot: resolvedRoot)
            : self.directory(directory)
        guard known.inside else { return false }
        guard followingLastLink, !known.links.isEmpty, known.links.contains(String(name)) else { return true }
        let resolved = Self.resolvingLinks(known.resolved + "/" + name)
        return resolved == resolvedRoot || resolved.hasPrefix(resolvedRootPrefix)
    }

    /// The directories ``contains(_:followingLastLink:fresh:)`` has resolved (and remembered).
    var consultedDirectories: [String] {
        directories.withLock { Array($0.byPath.keys) }
    }

    private func directory(_ directory: Substring) -> Directory {
        let known = directories.withLock { memo -> Directory? in
            if let last = memo.last, last.path == directory { return last.directory }
            guard let entry = memo.byPath[String(directory)] else { return nil }
            memo.last = (String(directory), entry)
            return entry
        }
        if let known { return known }
        let path = String(directory)
        let entry = Self.describe(path, resolvedRootPrefix: resolvedRootPrefix, resolvedRoot: resolvedRoot)
        directories.withLock { memo in
            memo.byPath[path] = entry
            memo.last = (path, entry)
        }
        return entry
    }

    private static func describe(_ directory: String, resolvedRootPrefix: String, resolvedRoot: String) -> Directory {
        let resolved = resolvingLinks(directory)
        let inside = resolved == resolvedRoot || resolved.hasPrefix(resolvedRootPrefix)
        return (resolved, inside, inside ? links(in: resolved) : [])
    }

    /// `path` with every symbolic link resolved: the real path of its longest existing prefix,
    /// then the rest (which, not existing, holds no link), normalized.
    static func resolvingLinks(_ path: String) -> String {
        var existing = path
        var rest: [String] = []
        while true {
            if let real = realpath(existing, nil) {
                defer { free(real) }
                return Path.normalize(([String(cString: real)] + rest.reversed()).joined(separator: "/"))
            }
            guard existing != "/", existing != "." else { return Path.normalize(path) }
            rest.append(Path.lastComponent(existing))
            existing = Path.directory(of: existing)
        }
    }

    /// The names of the symbolic links in `directory`.
    private static func links(in directory: String) -> Set<String> {
        var names: Set<String> = []
        if let handle = opendir(directory) {
            while let entry = readdir(handle) {
                var type = entry.pointee.d_type
                // Most entries say what they are: a name is made only for a link, or for an entry
                // whose type the file system doesn't say (an output directory holds 10k files).
                guard type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) else { continue }
                let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                    String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                if type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    type =
                        lstat(directory + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
                        ? UInt8(DT_LNK) : 0
                }
                if type == UInt8(DT_LNK) { names.insert(name) }
            }
            closedir(handle)
        }
        return names
    }
}
