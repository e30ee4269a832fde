/// A misuse of the job engine, thrown to the caller instead of crashing the process.
///
/// The NSOperation documentation says these situations "raise an exception"; Swift on Linux
/// has no exceptions to catch, and a task plugin's mistake must never bring the host down, so
/// KilnJobs throws a ``JobError`` instead. The error is a struct so it can grow: match on
/// ``code``, show ``message`` to people.
///
/// Threading: a value type; safe to pass between threads.
public struct JobError: Error, Sendable, CustomStringConvertible {
    /// What kind of misuse happened. Compare with the static members, e.g. `error.code == .notReady`.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case notReady, alreadyExecuting, alreadyFinished, alreadyEnqueued, enqueued
            case dependencyCycle, waitWouldDeadlock, tooLate, notExecuting, cancelled, notFinished
            case startDidNotBeginExecution
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// `start()` was called on a job whose dependencies (or custom readiness) are not satisfied.
        public static let notReady = Code(.notReady)
        /// `start()` was called on a job that is already executing.
        public static let alreadyExecuting = Code(.alreadyExecuting)
        /// The job has already finished; jobs are single-shot.
        public static let alreadyFinished = Code(.alreadyFinished)
        /// The job is already in a queue; a job enters at most one queue, once.
        public static let alreadyEnqueued = Code(.alreadyEnqueued)
        /// `start()` was called by hand on a job that a queue owns.
        public static let enqueued = Code(.enqueued)
        /// The jobs named in ``JobError/jobs`` depend on each other in a cycle and could never start.
        public static let dependencyCycle = Code(.dependencyCycle)
        /// Waiting here could never return: a job waiting on itself, on a job that depends on it,
        /// or on a job queued behind it in a serial queue.
        public static let waitWouldDeadlock = Code(.waitWouldDeadlock)
        /// A property that can only change before the job starts (completion block, execution blocks)
        /// was changed after it started.
        public static let tooLate = Code(.tooLate)
        /// ``Job/finish(error:)`` was called on a job that is not executing.
        public static let notExecuting = Code(.notExecuting)
        /// The job was cancelled, so it has no result.
        public static let cancelled = Code(.cancelled)
        /// The job has not finished yet, so it has no result.
        public static let notFinished = Code(.notFinished)
        /// An asynchronous job's `start()` returned without calling ``Job/beginExecution()``.
        public static let startDidNotBeginExecution = Code(.startDidNotBeginExecution)

        /// The code's stable name, e.g. `dependencyCycle`.
        public var description: String { base.rawValue }
    }

    /// What kind of misuse happened.
    public let code: Code
    /// A sentence for people: what happened and how to fix it.
    public let message: String
    /// The descriptions of the jobs involved, in order (for a cycle: the cycle, first job repeated at the end).
    public let jobs: [String]

    /// Creates an error. Engine code and job subclasses use it to report misuse.
    ///
    /// - Parameters:
    ///   - code: The kind of misuse.
    ///   - message: A sentence for people.
    ///   - jobs: Descriptions of the jobs involved.
    public init(_ code: Code, _ message: String, jobs: [String] = []) {
        self.code = code
        self.message = message
        self.jobs = jobs
    }

    /// `"<code>: <message>"`.
    public var description: String { "\(code): \(message)" }
}
