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
    private let resolvedDirectories = Mutex<[String: String]>([:])

    /// The boundary of the project rooted at `root` (absolute, normalized).
    init(root: String) {
        self.root = root
        resolvedRoot = Self.resolvingLinks(root)
    }

    /// Whether `path` (absolute) is inside the project: lexically, and with every link on the way
    /// resolved. With `followingLastLink`, a link at `path` itself is followed too — what a
    /// command writing to `path` does; without it, `path` is the entry itself — what removing it
    /// touches.
    func contains(_ path: String, followingLastLink: Bool) -> Bool {
        let normalized = Path.normalize(path)
        guard Path.isInside(normalized, root: root) else { return false }
        if normalized == root { return true }
        let directory = resolvedDirectory(Path.directory(of: path))
        var resolved = Path.normalize(Path.join(directory, Path.lastComponent(path)))
        if followingLastLink, Self.isLink(resolved) { resolved = Self.resolvingLinks(resolved) }
        return Path.isInside(resolved, root: resolvedRoot)
    }

    private func resolvedDirectory(_ directory: String) -> String {
        if let known = resolvedDirectories.withLock({ $0[directory] }) { return known }
        let resolved = Self.resolvingLinks(directory)
        resolvedDirectories.withLock { $0[directory] = resolved }
        return resolved
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

    private static func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }
}
