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
    /// - Throws: ``TaskKindRegistryError`` if another kind already has the name.
    public func register<Kind: TaskKind>(_ kind: Kind, origin: String) throws(TaskKindRegistryError) {
        let entry = RegisteredTaskKind(kind, origin: origin)
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
    /// `built-in`, or the plugin file it came from.
    public let origin: String
    private let prepare: @Sendable (ConfigurationValue, TaskDescription) throws(TaskConfigurationError) -> PreparedTask

    init<Kind: TaskKind>(_ kind: Kind, origin: String) {
        name = kind.name
        version = kind.version
        self.origin = origin
        prepare = { value, task throws(TaskConfigurationError) in
            let configuration = try kind.configuration(from: value, task: task)
            return PreparedTask(
                kindName: kind.name,
                kindVersion: kind.version,
                summary: { request in kind.summary(of: configuration, request: request) },
                make: { request, context in try kind.makeJob(configuration: configuration, request: request, context: context) }
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
    /// The kind's name.
    public let kindName: String
    /// The kind's version.
    public let kindVersion: String
    let summary: @Sendable (JobRequest) -> String
    let make: @Sendable (JobRequest, TaskContext) throws -> Job

    /// What a job will do, in one line.
    public func summary(for request: JobRequest) -> String { summary(request) }

    /// Makes a job.
    ///
    /// - Throws: Whatever the kind throws.
    public func makeJob(_ request: JobRequest, context: TaskContext) throws -> Job { try make(request, context) }
}
