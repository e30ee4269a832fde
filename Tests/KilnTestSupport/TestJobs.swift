import KilnJobs

/// A job whose `main` runs a closure that receives the job itself — a subclass that overrides
/// `main()`, as users write them.
///
/// Threading: as ``Job``; `@unchecked Sendable` as ``Job``, its own state is an immutable closure.
public final class ClosureJob: Job, @unchecked Sendable {
    private let work: @Sendable (ClosureJob) throws -> Void

    /// Creates a job named `name` whose `main` calls `work` with the job.
    public init(_ name: String? = nil, work: @escaping @Sendable (ClosureJob) throws -> Void = { _ in }) {
        self.work = work
        super.init()
        self.name = name
    }

    /// Calls the closure.
    public override func main() throws {
        try work(self)
    }
}

/// An asynchronous job: `start()` calls ``Job/beginExecution()``, hands the job to `onStart`
/// and returns; whoever holds the job calls ``Job/finish(error:)`` later, from any thread.
///
/// Threading: as ``Job``; `@unchecked Sendable` as ``Job``, its own state is an immutable closure.
public final class ManualAsyncJob: Job, @unchecked Sendable {
    private let onStart: @Sendable (ManualAsyncJob) -> Void

    /// Creates a job named `name` that calls `onStart` once it is executing.
    public init(_ name: String? = nil, onStart: @escaping @Sendable (ManualAsyncJob) -> Void = { _ in }) {
        self.onStart = onStart
        super.init()
        self.name = name
    }

    /// `true`: the job finishes after `start()` returns.
    public override var isAsynchronous: Bool { true }

    /// Begins execution and launches the work (`onStart`); a cancelled job launches nothing.
    public override func start() throws(JobError) {
        guard try beginExecution() else { return }
        onStart(self)
    }
}
