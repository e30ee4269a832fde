/// The lifecycle of one job, as a value type whose transitions return what the caller must do next.
///
/// ``Job`` keeps one `JobState` under its lock, calls a transition while holding it, and then
/// performs the returned action — notify observers, release dependents, run the completion
/// block — after unlocking, so no user code ever runs under an engine lock. Phases are ordered,
/// so "has it started?" is a comparison.
///
/// Threading: a value type; only ever mutated under its job's lock.
struct JobState {
    /// Where the job is in its single-shot life.
    enum Phase: UInt8, Comparable {
        /// In no queue and not started.
        case free
        /// In a queue, waiting for dependencies or custom readiness.
        case waiting
        /// On its queue's ready list, waiting for a slot.
        case readyQueued
        /// Taken off the ready list by a worker, which is about to call `start()`.
        case starting
        /// `main` (or an asynchronous job's work) is running.
        case executing
        /// Done, with or without running `main`.
        case finished

        static func < (lhs: Phase, rhs: Phase) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    var phase = Phase.free
    var isCancelled = false
    var requiresSuccessfulDependencies = false
    /// Set once a depth-first search from this job found no cycle (see `CycleDetector`).
    var cycleChecked = false
    var priority = Job.Priority.normal
    var threadPriority = 0.5
    var unfinishedDependencies = 0
    var dependencies: [Job] = []
    var dependents: [Job] = []
    var completionBlock: (@Sendable () -> Void)?
    var error: (any Error)?
    var cancellationReason: JobCancellationReason?
    var name: String?
    var observers: [ObservationEntry] = []
    var finishWaiters: [@Sendable () -> Void] = []
    /// The queue the job was added to; kept until the queue has let go of the job.
    var queue: JobQueue?

    /// Dependencies satisfied (or cancelled), ignoring subclass conditions.
    var baseReadiness: Bool { isCancelled || unfinishedDependencies == 0 }

    // MARK: Cancellation

    /// What happens to a job right after it has been cancelled.
    enum AfterCancel {
        /// In no queue and not started: finish it now, without running `main`.
        case finishNow
        /// Waiting in a queue: put it on the ready list so the queue flushes it.
        case flush
        /// Ready, starting or running: nothing more; `start` or the job itself will see the flag.
        case nothing
    }

    /// Marks the job cancelled.
    ///
    /// - Returns: `nil` if it was already cancelled or finished, otherwise what to do next.
    mutating func cancel(reason: JobCancellationReason) -> AfterCancel? {
        guard !isCancelled, phase != .finished else { return nil }
        isCancelled = true
        cancellationReason = reason
        switch phase {
        case .free: return .finishNow
        case .waiting: return .flush
        default: return .nothing
        }
    }

    /// What a finished dependency means for this job.
    enum DependencyOutcome {
        case none
        /// All dependencies are now finished.
        case becameReady(phase: Phase)
        /// `requiresSuccessfulDependencies` is set and the dependency failed or was cancelled.
        case cancelled(AfterCancel)
    }

    /// Records that one dependency finished.
    mutating func dependencyFinished(_ dependency: Job, failed: Bool, cancelled: Bool) -> DependencyOutcome {
        unfinishedDependencies -= 1
        if failed, requiresSuccessfulDependencies, phase < .starting,
            let after = cancel(reason: cancelled ? .dependencyCancelled(dependency) : .dependencyFailed(dependency))
        {
            return .cancelled(after)
        }
        if unfinishedDependencies == 0, !isCancelled, phase < .starting {
            return .becameReady(phase: phase)
        }
        return .none
    }

    // MARK: Starting and finishing

    /// What `start()` must do.
    enum BeginOutcome {
        /// Run the work; the job is now executing.
        case run(threadPriority: Double)
        /// Cancelled before it ran: finish without calling `main`.
        case finishCancelled
        /// Cancelled and already finished: nothing to do.
        case nothing
        case failure(JobError)
    }

    /// Moves the job to executing if it may start.
    ///
    /// - Parameters:
    ///   - byQueue: The caller is the queue's worker that took the job off the ready list.
    ///   - description: Used in error messages.
    mutating func begin(byQueue: Bool, description: @autoclosure () -> String) -> BeginOutcome {
        switch phase {
        case .finished:
            if isCancelled { return .nothing }
            return .failure(JobError(.alreadyFinished, "\(description()) has already finished; jobs are single-shot"))
        case .executing:
            return .failure(JobError(.alreadyExecuting, "\(description()) is already executing"))
        case .waiting, .readyQueued:
            return .failure(
                JobError(.enqueued, "\(description()) belongs to a queue; the queue starts it, not start()")
            )
        case .starting where !byQueue:
            return .failure(JobError(.enqueued, "\(description()) is being started by its queue"))
        case .starting, .free:
            if isCancelled { return .finishCancelled }
            if unfinishedDependencies > 0 {
                return .failure(
                    JobError(.notReady, "\(description()) is not ready: \(unfinishedDependencies) dependencies unfinished")
                )
            }
            phase = .executing
            return .run(threadPriority: threadPriority)
        }
    }

    /// Everything that must happen after a job reached `finished`, outside the lock.
    struct FinishActions {
        var wasExecuting: Bool
        var failed: Bool
        var cancelled: Bool
        var dependents: [Job]
        var completionBlock: (@Sendable () -> Void)?
        var waiters: [@Sendable () -> Void]
        var queue: JobQueue?
    }

    /// Moves the job to finished.
    ///
    /// Dependencies are let go here: they are all finished, and holding them would keep a whole
    /// chain of finished jobs alive (and free it by deep recursion).
    ///
    /// - Returns: `nil` if it had already finished.
    mutating func finish(error: (any Error)?) -> FinishActions? {
        guard phase != .finished else { return nil }
        let wasExecuting = phase == .executing
        if let error, self.error == nil { self.error = error }
        phase = .finished
        let actions = FinishActions(
            wasExecuting: wasExecuting,
            failed: self.error != nil || isCancelled,
            cancelled: isCancelled,
            dependents: dependents,
            completionBlock: completionBlock,
            waiters: finishWaiters,
            queue: queue
        )
        dependents = []
        dependencies = []
        completionBlock = nil
        finishWaiters = []
        return actions
    }
}
