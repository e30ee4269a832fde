import KilnPaths
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// What a Taskfile's variables may read besides the Taskfile: the environment kiln runs in, the
/// variables and arguments on the command line (`kiln run build VERSION=2 -- -v`), the flags, and
/// the directory kiln was started in.
///
/// The loaded model depends on the parts its templates read, so the Taskfile cache records each
/// part a load read (as a hash, never the value) and is valid only while they are the same.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskfileContext: Sendable {
    /// `NAME=value` arguments, in order: they replace (or add to) the main Taskfile's `vars`.
    public var variables: [(name: String, value: String)] = []
    /// The arguments after `--`: `{{.CLI_ARGS}}` (shell-quoted, joined) and `{{.CLI_ARGS_LIST}}`.
    public var arguments: [String] = []
    /// `--force`, `--silent`, `--verbose`, `--yes`: `{{.CLI_FORCE}}` and the rest.
    public var force = false
    /// `--silent`.
    public var silent = false
    /// `--verbose`.
    public var verbose = false
    /// `--yes`.
    public var assumeYes = false
    /// Where kiln was started: `{{.USER_WORKING_DIR}}`.
    public var workingDirectory: String
    /// The environment kiln runs in.
    public var environment: [String: String]
    /// Whose own dynamic variables (`sh:` under a task's `vars:`) run while the Taskfile loads.
    /// go-task runs a task's only when it runs the task: `kiln list` runs none, `kiln run build`
    /// those of `build` and what it depends on or calls. (A file's own `vars:` always run.)
    public var dynamicScope: DynamicScope = .all
    /// What stops the load's dynamic variables' commands on Ctrl-C (`nil`: nothing but the
    /// signal itself, where it reaches them). Not part of what the model depends on.
    public var interruption: LoadInterruption?

    /// Which tasks' own dynamic variables run while loading.
    ///
    /// Threading: a value type.
    public enum DynamicScope: Sendable, Equatable {
        /// Every task's.
        case all
        /// No task's: their values are empty (a listing).
        case none
        /// Those of these tasks (names or aliases; `default` when empty) and the tasks they need.
        case tasks([String])
        /// Those of the tasks this git hook runs, and the tasks they need.
        case hook(String)
    }

    /// A context with these parts.
    public init(workingDirectory: String, environment: [String: String]) {
        self.workingDirectory = workingDirectory
        self.environment = environment
    }

    /// The process's own: its environment and directory, nothing on the command line.
    public static var process: TaskfileContext {
        TaskfileContext(workingDirectory: Path.currentDirectory, environment: System.environment)
    }

    /// The special variables every template sees (go-task's), from this context and `root`,
    /// the main Taskfile's path.
    func specialVariables(rootTaskfile: String) -> [String: TemplateValue] {
        [
            "ROOT_TASKFILE": .string(rootTaskfile),
            "ROOT_DIR": .string(Path.directory(of: rootTaskfile)),
            "USER_WORKING_DIR": .string(workingDirectory),
            "TASK_VERSION": .string(Self.taskVersion),
            "TASK_EXE": .string(Self.executable),
            "PATH_LIST_SEPARATOR": ":",
            "FILE_PATH_SEPARATOR": "/",
            "CLI_ARGS": .string(arguments.map(GoShell.quote).joined(separator: " ")),
            "CLI_ARGS_LIST": .list(arguments.map(TemplateValue.string)),
            "CLI_FORCE": .bool(force),
            "CLI_SILENT": .bool(silent),
            "CLI_VERBOSE": .bool(verbose),
            "CLI_OFFLINE": .bool(true),
            "CLI_ASSUME_YES": .bool(assumeYes),
        ]
    }

    /// The special variables whose value comes from the context (the others come from the
    /// Taskfile's own path): a load that reads one records it.
    static let contextual: Set<String> = [
        "USER_WORKING_DIR", "CLI_ARGS", "CLI_ARGS_LIST", "CLI_FORCE", "CLI_SILENT", "CLI_VERBOSE", "CLI_ASSUME_YES",
        "TASK_EXE",
    ]

    /// The go-task version kiln answers to in `{{.TASK_VERSION}}`.
    static let taskVersion = "3.54.0 (kiln)"

    /// The path kiln runs from: `{{.TASK_EXE}}`.
    static let executable: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "kiln" }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Whether this context still gives a recorded requirement's value: its key, and the hash of
    /// its value then (``TaskfileCacheHeader/read(_:taskfilePath:holds:)``).
    func holds(_ key: String, _ valueHash: UInt64?) -> Bool {
        TaskfileRequirement(key: key, context: self).valueHash == valueHash
    }

    /// The current value of a recorded requirement (``TaskfileRequirement``).
    func value(of requirement: String) -> String? {
        if requirement.hasPrefix("env:") { return environment[String(requirement.dropFirst(4))] }
        if requirement == "cli:variables" {
            return variables.map { "\($0.name)=\($0.value)" }.joined(separator: "\u{0}")
        }
        if requirement.hasPrefix("special:") {
            let name = String(requirement.dropFirst(8))
            return specialVariables(rootTaskfile: "/").first { $0.key == name }.map { $0.value.printed }
        }
        return nil
    }
}

/// Something a loaded Taskfile's model depends on outside its files: an environment variable it
/// read (`env:HOME`), the command line's variables (`cli:variables`), a special variable from the
/// context (`special:CLI_ARGS`). The Taskfile cache's header keeps a hash of the value (or that
/// there was none); the model itself holds the resolved variables, so the cache file is readable
/// by its owner only.
///
/// Threading: a value type; safe to pass between threads.
struct TaskfileRequirement: Sendable, Hashable {
    var key: String
    var valueHash: UInt64?

    /// The requirement as `context` has it now.
    init(key: String, context: TaskfileContext) {
        self.key = key
        valueHash = TaskfileCacheHeader.requirementHash(context.value(of: key))
    }

    init(key: String, valueHash: UInt64?) {
        self.key = key
        self.valueHash = valueHash
    }

}
