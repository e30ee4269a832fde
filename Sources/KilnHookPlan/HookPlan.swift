import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// What a git hook's tasks look at — their `sources:` patterns, the inputs their depfiles named,
/// the Taskfiles defining them — saved by a full `kiln hook` so the next one can tell that a
/// commit affects none of them without loading kiln's CLI, the Taskfile, or libgit2 (see
/// ``QuickHook``).
///
/// A plan holds the `stat` signature of every file its answer depends on: each Taskfile the load
/// read (and each optional include it looked for and didn't find), the build state when depfiles
/// feed it, and kiln's own executable and library. It is used only while all are unchanged;
/// otherwise the full `kiln hook` runs and saves a new one.
///
/// Threading: a value type.
public struct HookPlan: Sendable, Equatable {
    /// One task of the hook's plan: what makes a changed file touch it.
    ///
    /// Threading: a value type.
    public struct Task: Sendable, Equatable {
        /// The task's directory (absolute): its sources are relative to it.
        public var directory: String
        /// Its `sources:` patterns, templates rendered.
        public var patterns: [String]
        /// Files its jobs' depfiles named last time, relative to ``directory``.
        public var discovered: [String]

        /// A task of `directory` looking at `patterns` and `discovered` files.
        public init(directory: String, patterns: [String], discovered: [String]) {
            self.directory = directory
            self.patterns = patterns
            self.discovered = discovered.sorted()
        }
    }

    /// A file the plan depends on, with its signature when the plan was made (`nil`: absent).
    ///
    /// Threading: a value type.
    public struct Watched: Sendable, Equatable {
        /// The file (absolute).
        public var path: String
        /// Its signature when the plan was made; `nil` when it didn't exist.
        public var signature: FileSignature?

        /// `path` as it is now.
        public init(path: String) {
            self.path = path
            signature = FileSignature.of(path)
        }
    }

    /// The main Taskfile (absolute).
    public var taskfilePath: String
    /// The project root: the main Taskfile's directory.
    public var root: String
    /// The Taskfiles that define the plan's tasks: changing one affects its tasks.
    public var taskfiles: [String]
    /// The plan's tasks (the hook's and their dependencies); none when the hook maps no task.
    public var tasks: [Task]
    /// The files the plan depends on.
    public var watched: [Watched]

    /// A plan for the hook whose Taskfile is `taskfilePath`.
    public init(taskfilePath: String, root: String, taskfiles: [String], tasks: [Task], watched: [Watched]) {
        self.taskfilePath = taskfilePath
        self.root = root
        self.taskfiles = taskfiles.sorted()
        self.tasks = tasks
        self.watched = watched
    }

    /// Whether a change to `changedFiles` (absolute, normalized) affects a task of the plan — the
    /// test `kiln affected` makes for a task directly touched — and how many of them are inside
    /// the project (kiln's own `.kiln/` left out), as the hook reports.
    public func affects(_ changedFiles: [String]) -> (affected: Bool, changedInside: Int) {
        let inside = changedFiles.filter {
            Self.isInside($0, root) && !Self.isInside($0, KilnDirectory(root: root).path)
        }
        let lists = tasks.map { GlobList($0.patterns) }
        for file in inside {
            if taskfiles.contains(file) { return (true, inside.count) }
            for (task, list) in zip(tasks, lists) where Self.isInside(file, task.directory) {
                let relative =
                    file == task.directory
                    ? "." : String(file.dropFirst(task.directory.count + (task.directory == "/" ? 0 : 1)))
                if list.matches(relative) || task.discovered.contains(relative) {
                    return (true, inside.count)
                }
            }
        }
        return (false, inside.count)
    }

    private static func isInside(_ path: String, _ root: String) -> Bool {
        path == root || path.hasPrefix(root == "/" ? "/" : root + "/")
    }

    /// Whether every watched file is as it was, and none was modified so close to `madeAt` (when
    /// the plan's inputs were read) that a later change could leave the same signature (the one
    /// racy-file rule, ``FileSignature/isSettled(at:)``).
    func isCurrent(madeAt: Int64) -> Bool {
        watched.allSatisfy { watched in
            let now = FileSignature.of(watched.path)
            guard now == watched.signature else { return false }
            return now.map { $0.isSettled(at: madeAt) } ?? true
        }
    }
}
