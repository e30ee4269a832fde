/// Which job a record, a verdict or a published signature belongs to: a plain task's one job, or
/// the job of one file of an `each: sources` task.
///
/// The display label (`lint docs`) is for people only: a plain task named `lint docs` and the
/// file `docs` of an `each:` task `lint` print alike but are different keys. What is stored (the
/// build state's rows, the snapshot) is ``stored``, which tells them apart: a plain task is its
/// name, an `each:` job is its task's name, a NUL, and its file. Neither a task name (refused at
/// load) nor a path can contain a NUL, so the form can't be ambiguous.
///
/// Threading: a value type.
public struct JobKey: Hashable, Sendable, CustomStringConvertible {
    /// The task's full name.
    public let task: String
    /// The file of an `each: sources` job (relative to the task's directory); `nil` for a plain task.
    public let source: String?

    /// The key of the job of `task` for `source` (`nil`: the task's one job).
    public init(task: String, source: String? = nil) {
        self.task = task
        self.source = source
    }

    /// The form kept on disk: unambiguous, and a plain task's key is its name.
    public var stored: String {
        guard let source else { return task }
        return task + "\u{0}" + source
    }

    /// Reads a stored key back.
    public init(stored: String) {
        if let separator = stored.utf8.firstIndex(of: 0) {
            task = String(stored[..<separator])
            source = String(stored[stored.utf8.index(after: separator)...])
        } else {
            task = stored
            source = nil
        }
    }

    /// What people see: `task`, or `task file`.
    public var label: String { source.map { "\(task) \($0)" } ?? task }

    /// The label.
    public var description: String { label }
}
