import KilnJobs
import Synchronization

/// The task kinds the host knows: the built-in `shell` kind and every plugin's kinds, all
/// registered through ``register(_:origin:)`` — the host has no other way in.
///
/// Threading: any member from any thread; guarded by its mutex.
public final class TaskKindRegistry: Sendable {
    private let entries = Mutex<[String: RegisteredTaskKind]>([:])

    /// Creates an empty registry.
    public init() {}

    /// Registers a kind.
    ///
    /// - Parameters:
    ///   - kind: The kind.
    ///   - origin: Where it comes from, for messages: `built-in`, or the plugin's file.
    ///   - pluginVersion: The version of the plugin that provides it, if any; it goes into job
    ///     signatures beside the kind's own.
    /// - Throws: ``TaskKindRegistryError`` if another kind already has the name.
    public func register<Kind: TaskKind>(
        _ kind: Kind,
        origin: String,
        pluginVersion: String? = nil
    ) throws(TaskKindRegistryError) {
        let entry = RegisteredTaskKind(kind, origin: origin, pluginVersion: pluginVersion)
        let existing = entries.withLock { entries -> RegisteredTaskKind? in
            if let existing = entries[kind.name] { return existing }
            entries[kind.name] = entry
            return nil
        }
        if let existing {
            throw TaskKindRegistryError(
                message: "task kind '\(kind.name)' from \(origin) is already registered by \(existing.origin); "
                    + "remove one of the two plugins or rename the kind"
            )
        }
    }

    /// The kind registered under `name`.
    public func kind(named name: String) -> RegisteredTaskKind? {
        entries.withLock { $0[name] }
    }

    /// Every registered kind, sorted by name.
    public var kinds: [RegisteredTaskKind] {
        entries.withLock { Array($0.values) }.sorted { $0.name < $1.name }
    }
}

/// Two kinds claimed one name.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskKindRegistryError: Error, Sendable, CustomStringConvertible {
    /// What happened and how to fix it.
    public var message: String
    /// The message.
    public var description: String { message }
}

/// A kind in the registry, with its configuration type erased.
///
/// Threading: a value type; safe to pass between threads.
public struct RegisteredTaskKind: Sendable {
    /// The kind's name.
    public let name: String
    /// The kind's version.
    public let version: String
    /// The version of the plugin that provides it (`nil`: built in).
    public let pluginVersion: String?
    /// `built-in`, or the plugin file it came from.
    public let origin: String
    private let prepare: @Sendable (ConfigurationValue, TaskDescription) throws(TaskConfigurationError) -> PreparedTask

    init<Kind: TaskKind>(_ kind: Kind, origin: String, pluginVersion: String?) {
        name = kind.name
        version = kind.version
        self.pluginVersion = pluginVersion
        self.origin = origin
        // What job signatures include: the kind's version and its plugin's.
        let signedVersion = pluginVersion.map { "\(kind.version) (plugin \($0))" } ?? kind.version
        prepare = { value, task throws(TaskConfigurationError) in
            PreparedTask(
                ConfiguredKind(
                    kind: kind,
                    version: signedVersion,
                    configuration: try kind.configuration(from: value, task: task)
                )
            )
        }
    }

    /// Validates a task's configuration with the kind.
    ///
    /// - Throws: ``TaskConfigurationError`` from the kind.
    public func prepare(_ value: ConfigurationValue, for task: TaskDescription) throws(TaskConfigurationError)
        -> PreparedTask
    {
        try prepare(value, task)
    }
}

/// A task whose configuration its kind accepted: it can describe and make jobs.
///
/// Threading: a value type; safe to pass between threads; its closures are thread-safe.
public struct PreparedTask: Sendable {
    /// One object per task holding the kind and its typed configuration (a Taskfile with 10k tasks
    /// has 10k of them, so one allocation each, not one per closure).
    private let configured: any AnyConfiguredKind

    init(_ configured: any AnyConfiguredKind) { self.configured = configured }

    /// The kind's name.
    public var kindName: String { configured.kindName }
    /// The kind's version, with its plugin's: what job signatures include.
    public var kindVersion: String { configured.kindVersion }

    /// What a job will do, in one line.
    public func summary(for request: JobRequest) -> String { configured.summary(for: request) }

    /// Makes a job.
    ///
    /// - Throws: Whatever the kind throws.
    public func makeJob(_ request: JobRequest, context: TaskContext) throws -> Job {
        try configured.makeJob(request, context: context)
    }

    /// The resources a job of the task holds when the task claims none.
    public func defaultResources(for request: JobRequest) -> [String] { configured.resources(for: request) }
}

/// A kind with one task's configuration, its type erased.
protocol AnyConfiguredKind: AnyObject, Sendable {
    var kindName: String { get }
    var kindVersion: String { get }
    func summary(for request: JobRequest) -> String
    func makeJob(_ request: JobRequest, context: TaskContext) throws -> Job
    func resources(for request: JobRequest) -> [String]
}

/// `@unchecked Sendable`: both stored properties are immutable and `Sendable`.
final class ConfiguredKind<Kind: TaskKind>: AnyConfiguredKind, @unchecked Sendable {
    let kind: Kind
    let kindVersion: String
    let configuration: Kind.Configuration

    init(kind: Kind, version: String, configuration: Kind.Configuration) {
        self.kind = kind
        self.kindVersion = version
        self.configuration = configuration
    }

    var kindName: String { kind.name }
    func summary(for request: JobRequest) -> String { kind.summary(of: configuration, request: request) }
    func makeJob(_ request: JobRequest, context: TaskContext) throws -> Job {
        try kind.makeJob(configuration: configuration, request: request, context: context)
    }
    func resources(for request: JobRequest) -> [String] { kind.resources(of: configuration, request: request) }
}
