import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// What `kiln run --watch` watches between (and during) runs, as go-task's watch mode does: the
/// files the `sources:` of the planned tasks match — the tasks asked for, their dependencies and
/// the tasks they call — and the Taskfiles. A source counts as changed when its content does (a
/// file saved unchanged is not a change), or when one appears or goes (a directory the patterns
/// read changed, and they match other files now). The declared outputs of the planned tasks
/// are not watched, even where a pattern matches them: a run writing them must not start
/// another. Paths under `node_modules`, `.git`, `.hg`, `.task` and `.kiln` aren't watched
/// (go-task's list, and kiln's own).
///
/// It polls: each ``firstChange()`` looks at every watched path (`stat`, and a hash for a file
/// whose status changed), about 1 ms per thousand paths.
///
/// Threading: ``firstChange()`` from one thread at a time; the type is `Sendable` for that
/// thread to be any.
public final class SourceWatch: Sendable {
    /// What it watches the sources of (none: only ``State/taskfiles``).
    private let plan: BuildPlan?
    private let root: String
    private let state: HostMutex<State>

    private struct State {
        /// Each Taskfile, and its status when the watch began.
        var taskfiles: [String: FileSignature?]
        /// Each source file (absolute), its status and content's hash when last looked at.
        var sources: [String: (stat: FileSignature?, hash: ContentHash?)]
        /// Each directory the patterns read, and its status then.
        var directories: [String: FileSignature?]
    }

    /// Watches what `plan` reads: its sources' files as they are now.
    public init(plan: BuildPlan) {
        self.plan = plan
        root = plan.taskfile.root
        var taskfiles: [String: FileSignature?] = [:]
        for file in plan.taskfile.files { taskfiles[file] = FileSignature.of(file) }
        let (files, directories) = Self.sources(of: plan)
        var sources: [String: (stat: FileSignature?, hash: ContentHash?)] = [:]
        for file in files { sources[file] = (FileSignature.of(file), try? FileContent.hash(file)) }
        state = HostMutex(State(taskfiles: taskfiles, sources: sources, directories: directories))
    }

    /// Watches `files` alone (absolute; a Taskfile that didn't load, so nothing more is known),
    /// shown relative to `root`.
    public init(files: [String], root: String) {
        plan = nil
        self.root = root
        var taskfiles: [String: FileSignature?] = [:]
        for file in files { taskfiles[file] = FileSignature.of(file) }
        state = HostMutex(State(taskfiles: taskfiles, sources: [:], directories: [:]))
    }

    /// How many files it watches (Taskfiles and sources).
    public var count: Int { state.withLock { $0.taskfiles.count + $0.sources.count } }

    /// The first watched path (relative to the project root) that changed since the watch began
    /// — since the last call, for changes that turned out not to be ones — or `nil`.
    public func firstChange() -> String? {
        state.withLock { state -> String? in
            for (file, signature) in state.taskfiles where FileSignature.of(file) != signature {
                return Path.relative(file, to: root)
            }
            for (file, seen) in state.sources {
                let signature = FileSignature.of(file)
                guard signature != seen.stat else { continue }
                let hash = try? FileContent.hash(file)
                if hash != seen.hash { return Path.relative(file, to: root) }
                state.sources[file] = (signature, hash)
            }
            let movedDirectories = state.directories.contains { FileSignature.of($0.key) != $0.value }
            guard movedDirectories, let plan else { return nil }
            // A directory changed: the patterns may match other files now.
            let (files, directories) = Self.sources(of: plan)
            let known = Set(state.sources.keys)
            if let different = files.symmetricDifference(known).sorted().first {
                return Path.relative(different, to: root)
            }
            state.directories = directories
            return nil
        }
    }

    /// The source files of `plan`'s tasks (absolute, without the declared outputs and the
    /// directories nobody watches), and the directories their patterns read.
    private static func sources(of plan: BuildPlan) -> (files: Set<String>, directories: [String: FileSignature?]) {
        var files = Set<String>()
        var visited: [VisitedDirectory] = []
        for task in plan.tasks where !task.definition.sources.isEmpty {
            for file in plan.sourceFiles(of: task, visited: &visited) {
                files.insert(Path.absolute(file, base: task.definition.directory))
            }
        }
        plan.forEachDeclaredOutput { _, output in files.remove(Path.normalize(output)) }
        files = files.filter { !Self.isUnwatched($0) }
        var directories: [String: FileSignature?] = [:]
        for directory in visited where !Self.isUnwatched(directory.path) {
            directories[directory.path] = directory.stat
        }
        return (files, directories)
    }

    /// Paths go-task's watch mode skips, and kiln's own directory.
    private static func isUnwatched(_ path: String) -> Bool {
        ["node_modules", ".git", ".hg", ".task", ".kiln"].contains {
            path.containsText("/\($0)/") || path.hasSuffix("/\($0)")
        }
    }
}
