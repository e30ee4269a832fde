#if canImport(Glibc)
    import Glibc
#endif

/// Where kiln looks for a project's Taskfile when none is named: in the directory it runs in,
/// then each parent, the first of ``names`` found. The host and the hook launcher share it.
///
/// Threading: stateless; any thread.
public enum TaskfileDiscovery {
    /// The file names a Taskfile may have, in the order they are tried: go-task's
    /// (`DefaultTaskfiles` in go-task 3.54), for a project's Taskfile and an included directory.
    public static let names = [
        "Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "taskfile.yaml",
        "Taskfile.dist.yml", "taskfile.dist.yml", "Taskfile.dist.yaml", "taskfile.dist.yaml",
    ]

    /// The Taskfile in `directory` itself, the first of ``names`` there; `nil` when it has none.
    public static func file(in directory: String) -> String? {
        for name in names {
            let candidate = directory == "/" ? "/" + name : directory + "/" + name
            var info = stat()
            if stat(candidate, &info) == 0 { return candidate }
        }
        return nil
    }

    /// The Taskfile in `directory` (absolute, normalized: no `.`, `..` or doubled `/`) or its
    /// nearest parent that has one; `nil` when none has.
    public static func discover(from directory: String) -> String? {
        var current = directory
        while true {
            if let found = file(in: current) { return found }
            guard current != "/", let slash = current.lastIndex(of: "/") else { return nil }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
        }
    }
}
