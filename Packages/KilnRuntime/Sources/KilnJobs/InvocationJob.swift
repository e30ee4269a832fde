import Synchronization

/// A job that calls a method on a target and keeps its result — the Swift stand-in for
/// `NSInvocationOperation`'s target and selector.
///
/// ```swift
/// let job = InvocationJob(target: compiler, method: Compiler.compile, argument: file)
/// try queue.addJob(job)
/// try job.waitUntilFinished()
/// let object = try job.result
/// ```
///
/// Threading: any member from any thread. `@unchecked Sendable` as ``Job``; the outcome is guarded
/// by `outcome`.
public final class InvocationJob<Result: Sendable>: Job, @unchecked Sendable {
    private let invocation: @Sendable () throws -> Result
    private let outcome = EngineLock<Result?>(nil)

    /// Creates a job that calls `method` on `target`, e.g. `InvocationJob(target: t, method: T.run)`.
    ///
    /// Threading: any thread.
    public init<Target: AnyObject & Sendable>(
        target: Target,
        method: @escaping @Sendable (Target) -> () throws -> Result
    ) {
        invocation = { try method(target)() }
        super.init()
    }

    /// Creates a job that calls `method` on `target` with `argument`.
    ///
    /// Threading: any thread.
    public init<Target: AnyObject & Sendable, Argument: Sendable>(
        target: Target,
        method: @escaping @Sendable (Target) -> (Argument) throws -> Result,
        argument: Argument
    ) {
        invocation = { try method(target)(argument) }
        super.init()
    }

    /// Calls the method and stores its result.
    public override func main() throws {
        let value = try invocation()
        outcome.withLock { $0 = value }
    }

    /// What the method returned.
    ///
    /// - Throws: The job's ``Job/error`` if it has one — what the method threw, or the
    ///   `.dependencyCycle` error of a job cancelled for being in a cycle; otherwise ``JobError``
    ///   `.cancelled` if the job was cancelled, `.notFinished` before it has finished.
    ///
    /// Threading: any thread.
    public var result: Result {
        get throws {
            let (phase, cancelled, error) = state.withLock { ($0.phase, $0.isCancelled, $0.error) }
            if let error { throw error }
            if let value = outcome.withLock({ $0 }) { return value }
            if cancelled { throw JobError(.cancelled, "\(description) was cancelled; it has no result") }
            guard phase == .finished else {
                throw JobError(.notFinished, "\(description) has not finished; wait for it before reading its result")
            }
            throw JobError(.notFinished, "\(description) finished without a result")
        }
    }
}
