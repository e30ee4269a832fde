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
    /// Set by the first ``Job/finish(error:)`` call, so a second one, even racing, is refused.
    var finishClaimed = false
    var isCancelled = false
    var requiresSuccessfulDependencies = false
    /// Set once a depth-first search from this job found no cycle (see `CycleDetector`).
    var cycleChecked = false
    var priority = Job.Priority.normal
    var threadPriority = 0.5
    var unfinishedDependencies = 0
    var dependencies: [Job] = []
    /// Identities of `dependencies`, kept once there are many, so adding one stays O(1).
    var dependencyIndex: Set<ObjectIdentifier>?
    /// The jobs that wait for this one, each retained once by the list: `Unmanaged`, so the
    /// finishing job notifies them and lets them go without counting references per visit.
    /// Whoever takes an element out of the list takes over its retain.
    var dependents: [Unmanaged<Job>] = []
    /// Finished, its completion block not yet run: a dependent added now waits for it in
    /// ``lateDependents``, as those added before the job finished do.
    var completionPending = false
    var completionBlock: (@Sendable () -> Void)?
    var error: (any Error)?
    /// The queue the job was added to. Kept after the job finished (``JobQueue/current`` in a
    /// completion block needs it); a finished job therefore keeps its queue alive while it lives.
    var queue: JobQueue?

    /// What most jobs never use, kept apart: a job without any of it destroys one `nil` instead
    /// of three empty arrays, a name and a cancellation reason.
    struct Rare {
        /// Dependents added while the completion block was pending, released after it ran;
        /// retained as ``JobState/dependents`` are.
        var lateDependents: [Unmanaged<Job>] = []
        var cancellationReason: JobCancellationReason?
        var name: String?
        var observers: [ObservationEntry] = []
        var finishWaiters: [@Sendable () -> Void] = []
    }

    /// Made on the first write to one of its fields (the accessors below); reads of a job
    /// without it see the defaults.
    var rare: Rare?

    /// Modifies `rare`, making it first if it isn't there.
    private mutating func withRare<Result>(_ body: (inout Rare) -> Result) -> Result {
        if rare == nil { rare = Rare() }
        return body(&rare!)
    }

    var lateDependents: [Unmanaged<Job>] { rare?.lateDependents ?? [] }

    var cancellationReason: JobCancellationReason? {
        get { rare?.cancellationReason }
        set { withRare { $0.cancellationReason = newValue } }
    }

    var name: String? {
        get { rare?.name }
        set { withRare { $0.name = newValue } }
    }

    var observers: [ObservationEntry] { rare?.observers ?? [] }

    /// Adds a dependent while the completion block is pending.
    mutating func appendLateDependent(_ job: Unmanaged<Job>) {
        withRare { $0.lateDependents.append(job) }
    }

    /// Takes the late dependents out.
    mutating func takeLateDependents() -> [Unmanaged<Job>] {
        guard rare != nil else { return [] }
        var taken: [Unmanaged<Job>] = []
        swap(&taken, &rare!.lateDependents)
        return taken
    }

    mutating func appendObserver(_ entry: ObservationEntry) {
        withRare { $0.observers.append(entry) }
    }

    mutating func appendFinishWaiter(_ waiter: @escaping @Sendable () -> Void) {
        withRare { $0.finishWaiters.append(waiter) }
    }

    /// Takes `job` out of the dependents (or the late dependents); the caller releases the
    /// returned reference, outside the lock.
    mutating func removeDependent(_ job: Job) -> Unmanaged<Job>? {
        let identity = Unmanaged.passUnretained(job).toOpaque()
        if let index = dependents.firstIndex(where: { $0.toOpaque() == identity }) {
            return dependents.remove(at: index)
        }
        if let index = rare?.lateDependents.firstIndex(where: { $0.toOpaque() == identity }) {
            return rare!.lateDependents.remove(at: index)
        }
        return nil
    }

    /// Whether `job` is already a dependency.
    mutating func hasDependency(_ job: Job) -> Bool {
        if let dependencyIndex { return dependencyIndex.contains(ObjectIdentifier(job)) }
        if dependencies.count >= 16 {
            dependencyIndex = Set(dependencies.map(ObjectIdentifier.init))
            return dependencyIndex!.contains(ObjectIdentifier(job))
        }
        return dependencies.contains { $0 === job }
    }

    /// Dependencies satisfied (or cancelled), ignoring subclass conditions.
    var baseReadiness: Bool { isCancelled || unfinishedDependencies == 0 }

    /// On its ready list, and taken off it when it stops being ready (a dependency added, a
    /// readiness condition gone false). A cancelled job stays: its queue flushes it whatever it
    /// waits for, and nothing would put it back.
    var leavesReadyListWhenNotReady: Bool { phase == .readyQueued && !isCancelled }

    // MARK: Cancellation

    /// What happens to a job right after it has been cancelled.
    enum AfterCancel {
        /// In no queue and not started: finish it now, without running `main` — if it is still
        /// in no queue then (``Job`` checks again: another thread may have added it meanwhile).
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
        /// Misuse; the caller builds the ``JobError`` once the lock is released (its message
        /// reads the job's `description`, which takes the lock and may be overridden).
        case failure(BeginFailure)
    }

    /// Why a job may not start.
    enum BeginFailure {
        case alreadyFinished, alreadyExecuting, enqueued, startingByQueue
        case notReady(unfinished: Int)

        func error(for description: String) -> JobError {
            switch self {
            case .alreadyFinished:
                JobError(.alreadyFinished, "\(description) has already finished; jobs are single-shot")
            case .alreadyExecuting: JobError(.alreadyExecuting, "\(description) is already executing")
            case .enqueued: JobError(.enqueued, "\(description) belongs to a queue; the queue starts it, not start()")
            case .startingByQueue: JobError(.enqueued, "\(description) is being started by its queue")
            case .notReady(let unfinished):
                JobError(.notReady, "\(description) is not ready: \(unfinished) dependencies unfinished")
            }
        }
    }

    /// Moves the job to executing if it may start.
    ///
    /// - Parameter byQueue: The caller is the queue's worker that took the job off the ready list.
    mutating func begin(byQueue: Bool) -> BeginOutcome {
        switch phase {
        case .finished:
            return isCancelled ? .nothing : .failure(.alreadyFinished)
        case .executing:
            return .failure(.alreadyExecuting)
        case .waiting, .readyQueued:
            return .failure(.enqueued)
        case .starting where !byQueue:
            return .failure(.startingByQueue)
        case .starting, .free:
            if isCancelled { return .finishCancelled }
            if unfinishedDependencies > 0 { return .failure(.notReady(unfinished: unfinishedDependencies)) }
            phase = .executing
            return .run(threadPriority: threadPriority)
        }
    }

    /// Why a job can't be added to a queue.
    enum EnqueueFailure {
        case alreadyFinished, alreadyEnqueued, alreadyStarted

        func error(for description: String) -> JobError {
            switch self {
            case .alreadyFinished:
                JobError(.alreadyFinished, "\(description) has already finished; jobs are single-shot")
            case .alreadyEnqueued: JobError(.alreadyEnqueued, "\(description) is already in a queue")
            case .alreadyStarted: JobError(.alreadyExecuting, "\(description) has already started")
            }
        }
    }

    /// Everything that must happen after a job reached `finished`, outside the lock.
    struct FinishActions {
        var wasExecuting: Bool
        var failed: Bool
        var cancelled: Bool
        /// Each retained: the caller releases them once it has notified them.
        var dependents: [Unmanaged<Job>]
        var completionBlock: (@Sendable () -> Void)?
        var waiters: [@Sendable () -> Void]
        /// Uncounted: the job keeps its queue after it finished.
        var queue: Unmanaged<JobQueue>?
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
        // Moved out, not copied and cleared: no reference counting for what changes hands.
        var actions = FinishActions(
            wasExecuting: wasExecuting,
            failed: self.error != nil || isCancelled,
            cancelled: isCancelled,
            dependents: [],
            completionBlock: completionBlock.take(),
            waiters: [],
            queue: queue.map(Unmanaged.passUnretained)
        )
        swap(&actions.dependents, &dependents)
        if rare != nil { swap(&actions.waiters, &rare!.finishWaiters) }
        completionPending = actions.completionBlock != nil
        dependencies = []
        dependencyIndex = nil
        return actions
    }
}
