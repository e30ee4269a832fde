#if canImport(Glibc)
    import Glibc
#endif

/// The `.kiln/` directory of a project: the one place that knows its layout.
///
/// | Path | Owner | What |
/// | --- | --- | --- |
/// | `.kiln/.gitignore` | this type | `*`, so `git add -A` never commits build state |
/// | `.kiln/lock` | `ProjectLock` | one run at a time (`flock`), holding the runner's pid |
/// | `.kiln/state.db` (+ `-wal`, `-shm`) | `BuildState` | job records, file hashes (SQLite) |
/// | `.kiln/snapshot` | `UpToDateSnapshot` | what the last run's verdicts rested on |
/// | `.kiln/taskfile.cache` | `TaskfileCache` | the checked Taskfile and the files it came from |
/// | `.kiln/hooks/NAME.plan` | `HookPlan` | what a hook's tasks look at, for the quick answer |
/// | `.kiln/hooks/files-XXXXXX` | `kiln hook` | file lists handed to the run it starts; removed after |
///
/// Every cache here can be deleted at any time; each file checks its own bytes.
///
/// Threading: a value type; any thread.
public struct KilnDirectory: Sendable {
    /// The directory's name under the project root.
    public static let name = ".kiln"

    /// The project root.
    public let root: String

    /// The `.kiln` directory of the project at `root` (absolute).
    public init(root: String) {
        self.root = root
    }

    /// `ROOT/.kiln`.
    public var path: String { root == "/" ? "/" + Self.name : root + "/" + Self.name }
    /// The project lock.
    public var lock: String { path + "/lock" }
    /// The build state's database.
    public var stateDatabase: String { path + "/state.db" }
    /// The build state's write-ahead log.
    public var stateLog: String { path + "/state.db-wal" }
    /// The up-to-date snapshot.
    public var snapshot: String { path + "/snapshot" }
    /// The Taskfile cache.
    public var taskfileCache: String { path + "/taskfile.cache" }
    /// What the last plan's project-boundary check rested on (``BoundaryMemo`` in the host).
    public var boundaryMemo: String { path + "/boundary" }
    /// The hook plans' and hook file lists' directory.
    public var hooks: String { path + "/hooks" }

    /// The saved plan of `hook`.
    public func hookPlan(_ hook: String) -> String { hooks + "/" + hook + ".plan" }

    /// Makes `.kiln` when it is missing, and its `.gitignore` when that is.
    ///
    /// - Returns: 0, or the `errno` of the failure (`EROFS`, `EACCES`, `ENOSPC`…).
    @discardableResult
    public func create() -> Int32 {
        if mkdir(path, 0o755) != 0, errno != EEXIST { return errno }
        // Marked ignored, as pytest's cache is — also a .kiln made before kiln did this. O_EXCL:
        // an existing file (the user's own, too) is left as it is.
        let ignore = path + "/.gitignore"
        let descriptor = open(ignore, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        if descriptor >= 0 {
            let text = Array("# Kiln's build state: never committed.\n*\n".utf8)
            _ = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
        return 0
    }

    /// Makes `.kiln/hooks` (and `.kiln`) when missing.
    ///
    /// - Returns: 0, or the `errno` of the failure.
    @discardableResult
    public func createHooks() -> Int32 {
        let made = create()
        guard made == 0 else { return made }
        return mkdir(hooks, 0o755) == 0 || errno == EEXIST ? 0 : errno
    }
}
