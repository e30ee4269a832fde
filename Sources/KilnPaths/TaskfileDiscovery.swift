#if canImport(Glibc)
import Glibc
#endif

/// Where kiln looks for a project's Taskfile when none is named: in the directory it runs in,
/// then each parent, the first of ``names`` found. The host and the hook launcher share it.
///
/// Threading: stateless; any thread.
public enum TaskfileDiscovery {
    /// The file names a Taskfile may have, in the order they are tried.
    public static let names = ["Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml"]

    /// The Taskfile in `directory` (absolute, normalized: no `.`, `..` or doubled `/`) or its
    /// nearest parent that has one; `nil` when none has.
    public static func discover(from directory: String) -> String? {
        var current = directory
        while true {
            for name in names {
                let candidate = current == "/" ? "/" + name : current + "/" + name
                var info = stat()
                if stat(candidate, &info) == 0 { return candidate }
            }
            guard current != "/", let slash = current.lastIndex(of: "/") else { return nil }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
        }
    }
}
