import CKilnSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why a job was cancelled.
///
/// Threading: a value type; safe to pass between threads.
public enum JobCancellationReason: Sendable {
    /// Someone called ``Job/cancel()`` (or ``JobQueue/cancelAllJobs()``).
    case requested
    /// The job requires successful dependencies and this one failed (finished with an error).
    case dependencyFailed(Job)
    /// The job requires successful dependencies and this one was cancelled.
    case dependencyCancelled(Job)
    /// The job is part of a dependency cycle, listed by description, first job repeated at the end.
    case dependencyCycle([String])
}

/// An operation object: a single-shot unit of work with dependencies, a completion block,
/// a priority, observation and cancellation — KilnJobs' counterpart of `NSOperation`.
///
/// Subclass it and override ``main()`` for synchronous work, or override ``start()`` and
/// ``isAsynchronous`` for work that finishes later (see "Asynchronous jobs" below). Add it to a
/// ``JobQueue``, or call ``start()`` yourself.
///
/// ## Lifecycle
/// A job is ready when every dependency has finished — succeeded, failed or cancelled alike — or
/// when it is cancelled. A queue starts it when it is ready and a slot is free; it then executes
/// and finishes exactly once. An error thrown by ``main()`` becomes ``error``; the job still
/// finishes normally.
///
/// ## Asynchronous jobs
/// Override ``start()``: call ``beginExecution()``, which returns `false` if the job was cancelled
/// (it has then already finished), launch the work and return. When the work is done, from any
/// thread, call ``finish(error:)`` once. It sends the `isExecuting`/`isFinished` notifications in
/// the right order, runs the completion block and releases dependents. While the work is in
/// flight the job holds a slot of its queue's width but no thread.
///
/// ## Threading
/// Every public member may be called from any thread at any time. The engine never runs user
/// code — ``main()``, completion blocks, observers, ``isReady`` overrides — while it holds one of
/// its locks. `@unchecked Sendable`: all mutable state is in `state`, guarded by its lock (a `Mutex`),
/// except the intrusive queue links, which are guarded by the scheduler's lock, and
/// `hadDependents`, which `state`'s lock guards too.
open class Job: @unchecked Sendable, CustomStringConvertible {
    /// The lifecycle state; every access goes through `withLock`.
    let state = EngineLock(JobState())
    /// Number of live observations, read without the lock so unobserved jobs pay nothing.
    let observationCount = Atomic<Int>(0)

    // Intrusive links owned by the job's queue, guarded by `Scheduler.core`. They don't count
    // references: the queue retains a job once when linking it and releases it when unlinking it.
    // `Unmanaged`, not `unowned(unsafe)`: following a link then costs no retain and release.
    var queueNext: Unmanaged<Job>?
    var queuePrevious: Unmanaged<Job>?
    var readyNext: Unmanaged<Job>?
    var readyPrevious: Unmanaged<Job>?
    var readyBucket = 2
    var holdsQueueSlot = false
    /// Set, under `state`'s lock, when a dependent is first added to `state`, so `deinit` knows
    /// whether to look for dependents to let go. `deinit` reads it without the lock: the last
    /// release orders every earlier write before it.
    var hadDependents = false

    /// Creates a job that is not in any queue.
    ///
    /// Threading: any thread.
    public init() {}

    deinit {
        // A job that finished has let its dependents go. One that didn't still holds a dependent
        // that finished without it: one that was cancelled.
        guard hadDependents else { return }
        let (dependents, late) = state.withLock { state in
            var dependents: [Unmanaged<Job>] = []
            swap(&dependents, &state.dependents)
            return (dependents, state.takeLateDependents())
        }
        for dependent in dependents { dependent.release() }
        for dependent in late { dependent.release() }
    }

    // MARK: - Work

    /// The job's work. The default does nothing.
    ///
    /// Called once, on the thread that runs ``start()`` — for a queued job, a worker of the shared
    /// pool. Check ``isCancelled`` at convenient points if the work is long. A thrown error becomes
    /// ``error``; the job still finishes.
    ///
    /// - Throws: Anything; it is recorded, never propagated.
    open func main() throws {}

    /// Starts the job on the calling thread.
    ///
    /// The default checks that the job may start, runs ``main()`` and finishes the job. A job
    /// that was cancelled before it started finishes without calling ``main()``.
    ///
    /// An asynchronous subclass overrides this: `guard try beginExecution() else { return }`,
    /// launch the work, return; call ``finish(error:)`` when the work is done.
    ///
    /// Threading: any thread; a queue calls it on one of its workers.
    ///
    /// - Throws: ``JobError`` with `.notReady`, `.alreadyExecuting`, `.alreadyFinished`, or
    ///   `.enqueued` when called by hand on a job that a queue owns.
    open func start() throws(JobError) {
        guard let threadPriority = try begin() else { return }
        let failure = runMain(threadPriority: threadPriority)
        finishExecution(error: failure)
    }

    /// Moves the job from ready to executing, for subclasses that override ``start()``.
    ///
    /// - Returns: `true` if the job is now executing and the caller must eventually call
    ///   ``finish(error:)``; `false` if the job was cancelled — it has then finished, and the
    ///   caller must not start any work.
    /// - Throws: ``JobError`` in the same cases as ``start()``.
    ///
    /// Threading: any thread, once per job.
    public final func beginExecution() throws(JobError) -> Bool {
        try begin() != nil
    }

    /// Finishes an executing asynchronous job: `isExecuting` becomes false and `isFinished` true
    /// (will-change notifications for both, the change, then did-change for both), waiters are
    /// released, the completion block runs and dependents are released.
    ///
    /// Runs the completion block and any dependents' readiness work on the calling thread.
    ///
    /// - Parameter error: The failure of the work, if it failed; it becomes ``error``.
    /// - Throws: ``JobError`` `.notExecuting` if the job is not executing (never started, or
    ///   already finished).
    ///
    /// Threading: any thread, once per job.
    public final func finish(error: (any Error)? = nil) throws(JobError) {
        let claimed = state.withLock { state -> Bool in
            guard state.phase == .executing, !state.finishClaimed else { return false }
            state.finishClaimed = true
            return true
        }
        guard claimed else {
            throw JobError(.notExecuting, "finish(error:) called on \(description), which is not executing")
        }
        finishExecution(error: error)
    }

    /// Checks and performs the transition to executing; `nil` when there is nothing to run.
    private func begin() throws(JobError) -> Double? {
        let context = ThreadContext.existing
        let byQueue = context.map { $0.isWorker && $0.isRunning(self) } ?? false
        if !byQueue {
            // A queue only starts jobs it found ready; a hand start checks the (overridable) readiness.
            let (phase, cancelled) = state.withLock { ($0.phase, $0.isCancelled) }
            if phase == .free, !cancelled, !isReady {
                throw JobError(.notReady, "\(description) is not ready")
            }
        }
        let observed = isObserved
        let announced = observed && !isCancelled && state.withLock { $0.phase < .executing }
        if announced { deliver(.isExecuting, .willChange) }
        let outcome = state.withLock { $0.begin(byQueue: byQueue) }
        // Every will-change gets its did-change, even when nothing changed.
        if announced { deliver(.isExecuting, .didChange) }
        switch outcome {
        case .run(let threadPriority):
            if byQueue, let context { context.currentJobBegan = true }
            return threadPriority
        case .finishCancelled:
            finishExecution(error: nil)
            return nil
        case .nothing:
            return nil
        case .failure(let failure):
            throw failure.error(for: description)
        }
    }

    /// Runs `main` with the thread priority applied; returns what it threw.
    private func runMain(threadPriority: Double) -> (any Error)? {
        ThreadContext.current.running(self) {
            let restore = threadPriority == 0.5 ? nil : ThreadPriority.apply(threadPriority)
            defer { if let restore { ThreadPriority.restore(restore) } }
            do {
                try main()
                return nil
            } catch {
                return error
            }
        }
    }

    /// Called by a worker for a job it took off a ready list.
    final func runFromQueue(_ context: ThreadContext) {
        var thrown: JobError?
        context.currentJobBegan = false
        do {
            try start()
        } catch {
            thrown = error
        }
        if context.currentJobBegan, thrown == nil { return }
        // A plugin's `start()` that threw or forgot `beginExecution()` must not wedge the queue.
        let stuck = state.withLock { $0.phase == .starting }
        if stuck {
            finishExecution(
                error: thrown
                    ?? JobError(
                        .startDidNotBeginExecution,
                        "\(description): start() returned without calling beginExecution(); the job was finished"
                    )
            )
        }
    }

    /// The single finishing path: state change, notifications, waiters, completion block,
    /// dependents, queue slot — in that order, none under a lock. A dependent added after the
    /// state changed but before the completion block ran is released after the block too.
    final func finishExecution(error: (any Error)?) {
        finishExecution(error: error, onlyInNoQueue: false)
    }

    /// Finishes a job cancelled in no queue (``JobState/AfterCancel/finishNow``), unless a queue
    /// took it since the cancellation decided so: another thread's `addJob` between the two. The
    /// queue then starts it as any cancelled job, and its `start()` runs — the hook a subclass
    /// may rely on to pass the cancellation on; finishing it here, behind the queue's back, would
    /// skip it. Returns `true` when it didn't finish the job here (a queue has it, or it had
    /// finished): the caller then flushes it, which does nothing unless it waits in a queue.
    private func finishCancelledInNoQueue() -> Bool {
        !finishExecution(error: nil, onlyInNoQueue: true)
    }

    /// The finishing path; with `onlyInNoQueue`, only a job in no queue and not started is
    /// finished. Returns whether this call finished the job.
    @discardableResult
    private func finishExecution(error: (any Error)?, onlyInNoQueue: Bool) -> Bool {
        let observed = isObserved
        if observed {
            // A job finished only in no queue isn't executing (a queue may start it meanwhile:
            // then this call changes nothing, and announces nothing of `isExecuting`).
            let executing = !onlyInNoQueue && state.withLock { $0.phase == .executing }
            if executing { deliver(.isExecuting, .willChange) }
            deliver(.isFinished, .willChange)
        }
        let finished = state.withLock { state -> JobState.FinishActions? in
            if onlyInNoQueue, state.phase != .free { return nil }
            return state.finish(error: error)
        }
        guard let actions = finished else {
            // The will-change announced a change that didn't happen: close it, value unchanged.
            if onlyInNoQueue, observed { deliver(.isFinished, .didChange) }
            return false
        }
        if observed {
            if actions.wasExecuting { deliver(.isExecuting, .didChange) }
            deliver(.isFinished, .didChange)
        }
        for waiter in actions.waiters { waiter() }
        let context = ThreadContext.current
        // Retained once each (see `JobState.dependents`), until they are let go below.
        var dependents = actions.dependents
        if let completion = actions.completionBlock {
            context.running(self, completion)
            // And those added while it ran.
            let late = state.withLock { state -> [Unmanaged<Job>] in
                state.completionPending = false
                return state.takeLateDependents()
            }
            dependents += late
        }
        // Dependents that became ready are pushed together with the slot release, under one
        // acquisition of the scheduler lock; the worker that ran the job takes its next job there too.
        var readied = ReadiedJobs()
        let (failed, cancelled) = (actions.failed, actions.cancelled)
        for dependent in dependents {
            let ready = dependent._withUnsafeGuaranteedRef { dependent in
                dependent.dependencyDidFinish(self, failed: failed, cancelled: cancelled) && dependent.readyForQueue()
            }
            if ready { readied.append(dependent) }
        }
        if let queue = actions.queue {
            let handOff = context.isWorker && context.isRunning(self)
            // The job holds its queue (`JobState.queue`), and the caller holds the job.
            queue._withUnsafeGuaranteedRef {
                $0.jobDidFinish(self, readied: readied, handOffTo: handOff ? context : nil)
            }
        } else if !readied.isEmpty {
            Scheduler.shared.makeReady(readied.all)
        }
        // Only now: a readied dependent is held by its queue, which may have started it already.
        for dependent in dependents { dependent.release() }
        return true
    }

    // MARK: - State

    /// Whether the job may start: every dependency has finished, or the job is cancelled.
    ///
    /// A subclass may override it to add conditions of its own (`super.isReady && myCondition`)
    /// and must then call ``readinessDidChange()`` (or wrap the change in ``updateReadiness(_:)``)
    /// whenever the condition changes; its queue re-evaluates the job at once. A cancelled job is
    /// always treated as ready by its queue, whatever the override says.
    ///
    /// Threading: any thread; the engine calls overrides without holding any lock.
    open var isReady: Bool { state.withLock { $0.baseReadiness } }

    /// Whether the job is running: between ``start()`` (or ``beginExecution()``) and finishing.
    ///
    /// Threading: any thread.
    public final var isExecuting: Bool { state.withLock { $0.phase == .executing } }

    /// Whether the job has finished, with or without running `main`. Never goes back to `false`.
    ///
    /// Threading: any thread.
    public final var isFinished: Bool { state.withLock { $0.phase == .finished } }

    /// Whether ``cancel()`` was called, or the job was cancelled because of a failed dependency
    /// (see ``requiresSuccessfulDependencies``) or a dependency cycle.
    ///
    /// Threading: any thread.
    public final var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// Whether the job finishes later than ``start()`` returns (NSOperation's `isAsynchronous`,
    /// formerly `isConcurrent`). Subclasses that override ``start()`` override this to return
    /// `true`. The engine itself treats both kinds alike: a queue slot is held until the job
    /// finishes.
    ///
    /// Threading: any thread.
    open var isAsynchronous: Bool { false }

    /// The failure recorded when the job finished: what ``main()`` threw, what was passed to
    /// ``finish(error:)``, or a ``JobError`` for a dependency cycle. `nil` for success and for
    /// plain cancellation.
    ///
    /// Threading: any thread.
    public final var error: (any Error)? { state.withLock { $0.error } }

    /// Why the job was cancelled, or `nil` if it was not.
    ///
    /// Threading: any thread.
    public final var cancellationReason: JobCancellationReason? { state.withLock { $0.cancellationReason } }

    /// Whether a job waits for this one alone: a dependent, not yet started, whose only unfinished
    /// dependency is this job, so that this job's end makes it ready. A caller that may put off
    /// finishing a job (kiln's build state lets records share a commit) asks it first: a job
    /// something waits for is finished at once.
    ///
    /// Dependents added later, and dependents that wait for other unfinished jobs too, don't count.
    ///
    /// Threading: any thread; a snapshot (dependents may be added, or become ready, meanwhile).
    public final var isAwaited: Bool {
        // Read under this job's lock, then each dependent's under its own: never two at once.
        // Retained here: the job may finish and let them go meanwhile.
        let (dependents, late) = state.withLock { state in
            (state.dependents.map { $0.takeUnretainedValue() }, state.lateDependents.map { $0.takeUnretainedValue() })
        }
        func waitsForThisAlone(_ dependent: Job) -> Bool {
            dependent.state.withLock { $0.phase < .starting && $0.unfinishedDependencies <= 1 }
        }
        return dependents.contains(where: waitsForThisAlone) || late.contains(where: waitsForThisAlone)
    }

    /// A name for people and for error messages.
    ///
    /// Threading: any thread.
    public final var name: String? {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    /// The name, or the class and address.
    ///
    /// Threading: any thread.
    open var description: String {
        if let name { return name }
        return "\(type(of: self))(0x\(String(UInt(bitPattern: ObjectIdentifier(self)), radix: 16)))"
    }

    /// When set, a dependency that fails (finishes with an ``error``) or is cancelled cancels this
    /// job before it runs, with that dependency as its ``cancellationReason``. Off by default, as
    /// in NSOperation, where a job runs once its dependencies finished however they finished.
    ///
    /// Build systems set it: a compile step must not run after its code generator failed.
    /// Changing it after the job started has no effect.
    ///
    /// Threading: any thread.
    public final var requiresSuccessfulDependencies: Bool {
        get { state.withLock { $0.requiresSuccessfulDependencies } }
        set { state.withLock { $0.requiresSuccessfulDependencies = newValue } }
    }

    /// The priority among the ready jobs of the job's queue. Changing it while the job waits on
    /// the ready list moves it at once.
    ///
    /// Threading: any thread.
    public final var queuePriority: Priority {
        get { state.withLock { $0.priority } }
        set {
            let observed = isObserved
            if observed { deliver(.queuePriority, .willChange) }
            let queue = state.withLock { state -> JobQueue? in
                state.priority = newValue
                return state.phase == .readyQueued ? state.queue : nil
            }
            queue?.reprioritize(self)
            if observed { deliver(.queuePriority, .didChange) }
        }
    }

    /// The thread priority, 0.0 … 1.0 (default 0.5), applied to the thread only while ``main()``
    /// runs. On Linux it maps to the thread's nice value: `nice = round((0.5 − p) × 40)`, clamped
    /// to −20 … 19 — so 0.5 leaves the thread alone, 0.0 is nice 19 and 1.0 is nice −20. Raising a
    /// thread above its previous nice value needs `CAP_SYS_NICE` (or root); without it the value
    /// stays unchanged. The previous value is restored when `main` returns.
    ///
    /// Threading: any thread.
    public final var threadPriority: Double {
        get { state.withLock { $0.threadPriority } }
        set { state.withLock { $0.threadPriority = min(max(newValue, 0), 1) } }
    }

    /// A block run exactly once after the job finishes — after `main`, or after cancellation —
    /// on the thread that finished the job, before dependents are released (those added while
    /// it is pending too: a dependent never starts before the block has run) and before the job
    /// leaves its queue. Never run under an engine lock. Cleared once it has run, which breaks the
    /// usual reference cycle of a block that captures its job.
    ///
    /// Threading: any thread. Use ``setCompletionBlock(_:)`` to get an error instead of a no-op
    /// when it is too late.
    public final var completionBlock: (@Sendable () -> Void)? {
        get { state.withLock { $0.completionBlock } }
        set { try? setCompletionBlock(newValue) }
    }

    /// Sets the completion block.
    ///
    /// - Throws: ``JobError`` `.tooLate` if the job is executing or finished.
    ///
    /// Threading: any thread.
    public final func setCompletionBlock(_ block: (@Sendable () -> Void)?) throws(JobError) {
        let observed = isObserved
        if observed { deliver(.completionBlock, .willChange) }
        let accepted = state.withLock { state -> Bool in
            guard state.phase < .executing else { return false }
            state.completionBlock = block
            return true
        }
        if observed { deliver(.completionBlock, .didChange) }
        guard accepted else {
            throw JobError(.tooLate, "the completion block of \(description) can't change once it executes")
        }
    }

    // MARK: - Dependencies

    /// The jobs this job waits for. A finished job has let go of them (see the module docs).
    ///
    /// Threading: any thread.
    public final var dependencies: [Job] { state.withLock { $0.dependencies } }

    /// Makes this job wait until `job` has finished. Works across queues. Adding a dependency twice
    /// has no further effect, and so does adding one after this job started.
    ///
    /// A dependency cycle is reported when one of its jobs is enqueued or waited on; if the cycle is
    /// closed after its jobs were enqueued, its jobs are cancelled with
    /// ``JobCancellationReason/dependencyCycle(_:)`` and a ``JobError`` `.dependencyCycle` as
    /// their ``error``, so nothing waits forever.
    ///
    /// Threading: any thread.
    public final func addDependency(_ job: Job) {
        let observed = isObserved
        if observed {
            deliver(.dependencies, .willChange)
            deliver(.isReady, .willChange)
        }
        let (added, queue, wasChecked) = state.withLock { state -> (Bool, JobQueue?, Bool) in
            guard state.phase < .starting, !state.hasDependency(job) else {
                return (false, nil, false)
            }
            // Build graphs have a few dependencies per job: one allocation instead of three.
            if state.dependencies.isEmpty { state.dependencies.reserveCapacity(4) }
            state.dependencies.append(job)
            state.dependencyIndex?.insert(ObjectIdentifier(job))
            state.unfinishedDependencies += 1
            // Only a job on its ready list may have to leave it. Another can't get there from
            // now on: its count of unfinished dependencies is above zero.
            return (true, state.leavesReadyListWhenNotReady ? state.queue : nil, state.cycleChecked)
        }
        if added {
            queue?.withdrawFromReadyList(self)
            let dependencyState = job.state.withLock { state -> (finished: Bool, failed: Bool, cancelled: Bool) in
                if state.phase == .finished {
                    // Its completion block hasn't run yet: this dependent is released after it,
                    // like the dependents it had when it finished (the block may publish what
                    // they read).
                    if state.completionPending {
                        job.hadDependents = true
                        state.appendLateDependent(Unmanaged.passRetained(self))
                        return (false, false, false)
                    }
                    return (true, state.error != nil || state.isCancelled, state.isCancelled)
                }
                if state.dependents.isEmpty { state.dependents.reserveCapacity(4) }
                job.hadDependents = true
                state.dependents.append(Unmanaged.passRetained(self))
                return (false, false, false)
            }
            if dependencyState.finished {
                if dependencyDidFinish(job, failed: dependencyState.failed, cancelled: dependencyState.cancelled) {
                    scheduleIfReady()
                }
            } else if wasChecked {
                CycleDetector.checkNewEdge(from: self, to: job)
            }
        }
        if observed {
            deliver(.dependencies, .didChange)
            deliver(.isReady, .didChange)
        }
    }

    /// Stops this job waiting for `job`. No effect once this job started.
    ///
    /// Threading: any thread.
    public final func removeDependency(_ job: Job) {
        let observed = isObserved
        if observed {
            deliver(.dependencies, .willChange)
            deliver(.isReady, .willChange)
        }
        let removed = state.withLock { state -> Bool in
            guard state.phase < .starting, let index = state.dependencies.firstIndex(where: { $0 === job }) else {
                return false
            }
            state.dependencies.remove(at: index)
            state.dependencyIndex?.remove(ObjectIdentifier(job))
            return true
        }
        if removed {
            let taken = job.state.withLock { $0.removeDependent(self) }
            taken?.release()
            let stillCounted = taken != nil
            // If the dependency already finished it has already decremented our count.
            if stillCounted {
                let became = state.withLock { state -> Bool in
                    state.unfinishedDependencies -= 1
                    return state.unfinishedDependencies == 0
                }
                if became { scheduleIfReady() }
            }
        }
        if observed {
            deliver(.dependencies, .didChange)
            deliver(.isReady, .didChange)
        }
    }

    /// Called by a dependency as it finishes.
    ///
    /// - Returns: Whether the job may now belong on its queue's ready list; the caller then
    ///   checks ``readyForQueue()`` and pushes it.
    final func dependencyDidFinish(_ dependency: Job, failed: Bool, cancelled: Bool) -> Bool {
        let observed = isObserved
        // Predict a cancellation so its will-change goes out before the change.
        let mayCancel = observed && failed && state.withLock { $0.requiresSuccessfulDependencies && !$0.isCancelled }
        if observed {
            deliver(.isReady, .willChange)
            if mayCancel { deliver(.isCancelled, .willChange) }
        }
        let outcome = state.withLock { $0.dependencyFinished(dependency, failed: failed, cancelled: cancelled) }
        if observed {
            deliver(.isReady, .didChange)
            if mayCancel { deliver(.isCancelled, .didChange) }
        }
        switch outcome {
        case .none:
            return false
        case .becameReady(let phase):
            return phase == .waiting
        case .cancelled(let after):
            switch after {
            case .finishNow: return finishCancelledInNoQueue()
            case .flush: return true
            case .nothing: return false
            }
        }
    }

    // MARK: - Cancellation

    /// Asks the job to stop. Sets ``isCancelled``; a job waiting on dependencies becomes ready at
    /// once so its queue flushes it without running `main`; a job in no queue that has not started
    /// finishes at once. A running job keeps running until its code checks ``isCancelled``.
    /// Cancelling twice, or a finished job, has no effect. When another thread adds the job to a
    /// queue meanwhile, either the add throws `.alreadyFinished` or the queue starts the job:
    /// a queue that took a job always calls its `start()`, cancelled or not.
    ///
    /// Threading: any thread.
    open func cancel() {
        cancel(reason: .requested)
    }

    /// Cancels with a reason.
    final func cancel(reason: JobCancellationReason, error: JobError? = nil) {
        let observed = isObserved
        if observed {
            deliver(.isCancelled, .willChange)
            deliver(.isReady, .willChange)
        }
        let after = state.withLock { state -> JobState.AfterCancel? in
            let after = state.cancel(reason: reason)
            if after != nil, let error, state.error == nil { state.error = error }
            return after
        }
        if observed {
            deliver(.isCancelled, .didChange)
            deliver(.isReady, .didChange)
        }
        if let after { perform(after) }
    }

    private func perform(_ after: JobState.AfterCancel) {
        switch after {
        case .finishNow: if finishCancelledInNoQueue() { scheduleIfReady() }
        case .flush: scheduleIfReady()
        case .nothing: break
        }
    }

    // MARK: - Custom readiness

    /// Tells the engine that a subclass's own readiness condition changed. The job's queue
    /// re-evaluates ``isReady`` at once: a job that became ready goes on the ready list; a job on
    /// the ready list that is no longer ready is taken off it. Observers of `isReady` are notified.
    ///
    /// Threading: any thread; calls the ``isReady`` override without holding a lock.
    public final func readinessDidChange() {
        updateReadiness {}
    }

    /// Runs `change` — which alters a subclass's readiness condition — between the `isReady`
    /// will-change and did-change notifications, then re-evaluates readiness like
    /// ``readinessDidChange()``.
    ///
    /// Threading: any thread.
    public final func updateReadiness(_ change: () throws -> Void) rethrows {
        let observed = isObserved
        if observed { deliver(.isReady, .willChange) }
        try change()
        if observed { deliver(.isReady, .didChange) }
        let (phase, queue, leaves) = state.withLock { ($0.phase, $0.queue, $0.leavesReadyListWhenNotReady) }
        if phase == .waiting {
            scheduleIfReady()
        } else if leaves, !isReady {
            queue?.withdrawFromReadyList(self)
        }
    }

    /// Whether the job is waiting in a queue and ready to go on its ready list. Calls the
    /// ``isReady`` override, so never call it under a lock.
    final func readyForQueue() -> Bool {
        let (phase, queued, cancelled, base) = state.withLock {
            ($0.phase, $0.queue != nil, $0.isCancelled, $0.baseReadiness)
        }
        guard phase == .waiting, queued, base else { return false }
        return cancelled || isReady
    }

    /// Puts an enqueued, waiting job on its queue's ready list if it is ready.
    final func scheduleIfReady() {
        if readyForQueue() { Scheduler.shared.makeReady([Unmanaged.passUnretained(self)]) }
    }

    // MARK: - Waiting

    /// Blocks the calling thread until the job has finished.
    ///
    /// On a pool worker (inside another job's `main`), the pool lends another thread for the
    /// duration, so waiting cannot starve the pool.
    ///
    /// - Throws: ``JobError`` `.waitWouldDeadlock` when the wait could never end: a job waiting
    ///   on itself, on a job that depends on it, or on a job queued behind it in a serial queue;
    ///   `.dependencyCycle` when the job is in a dependency cycle.
    ///
    /// Threading: any thread.
    public final func waitUntilFinished() throws(JobError) {
        try checkWaitable()
        let semaphore = CountingSemaphore()
        guard addFinishWaiter({ semaphore.signal() }) else { return }
        Scheduler.shared.blocking { semaphore.wait() }
    }

    /// Registers `waiter` to run when the job finishes; `false` if it already has.
    ///
    /// Threading: any thread.
    package final func addFinishWaiter(_ waiter: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.phase != .finished else { return false }
            state.appendFinishWaiter(waiter)
            return true
        }
    }

    /// Throws what ``waitUntilFinished()`` throws instead of waiting forever.
    ///
    /// Threading: any thread.
    package func checkWaitable() throws(JobError) {
        if isFinished { return }
        if let current = ThreadContext.existing?.currentJob {
            if current === self {
                throw JobError(.waitWouldDeadlock, "\(description) waits on itself", jobs: [description])
            }
            if let path = CycleDetector.dependencyPath(from: self, to: current) {
                throw JobError(
                    .waitWouldDeadlock,
                    "\(current.description) waits on \(description), which depends on it",
                    jobs: path.map(\.description)
                )
            }
            let (myQueue, myPhase) = state.withLock { ($0.queue, $0.phase) }
            if let myQueue, myPhase < .starting, current.state.withLock({ $0.queue }) === myQueue,
                myQueue.maxConcurrentJobCount == 1
            {
                throw JobError(
                    .waitWouldDeadlock,
                    "\(current.description) waits on \(description), queued behind it in serial queue \(myQueue.name)",
                    jobs: [current.description, description]
                )
            }
        }
        try CycleDetector.check([self])
    }

    // MARK: - Observation plumbing

    var isObserved: Bool { observationCount.load(ordering: .acquiring) > 0 }

    /// Delivers one notification to the observers of `property`, on the calling thread.
    final func deliver(_ property: JobPropertyKind, _ kind: JobChangeKind) {
        let entries = state.withLock { state in state.observers.filter { $0.property == property } }
        for entry in entries { entry.deliver(kind, job: self) }
    }
}

/// The dependents a finishing job made ready: usually none or one, which need no array. Not
/// counted: the finishing job holds them (its `dependents`) while it hands them on.
struct ReadiedJobs {
    private(set) var first: Unmanaged<Job>?
    private(set) var more: [Unmanaged<Job>] = []

    var isEmpty: Bool { first == nil }

    mutating func append(_ job: Unmanaged<Job>) {
        if first == nil {
            first = job
        } else {
            more.append(job)
        }
    }

    /// The jobs, uncounted.
    var all: [Unmanaged<Job>] { first.map { [$0] + more } ?? [] }
}

/// Applies and restores `Job.threadPriority` on Linux threads (per-thread nice values).
enum ThreadPriority {
    /// Sets the calling thread's nice value for `priority`; returns the previous value.
    static func apply(_ priority: Double) -> Int32? {
        #if os(Linux)
            let thread = id_t(ckiln_gettid())
            errno = 0
            let previous = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread)
            if previous == -1, errno != 0 { return nil }
            let nice = Int32(min(max(((0.5 - priority) * 40).rounded(), -20), 19))
            // Going back down to `previous` after `main` needs CAP_SYS_NICE or a high enough
            // RLIMIT_NICE; if the thread couldn't be restored, leave it alone rather than leave a pool
            // thread at the wrong priority for every later job.
            if nice > previous, !canLowerNice(to: previous) { return nil }
            guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, nice) == 0 else { return nil }
            return previous
        #else
            return nil
        #endif
    }

    /// Whether this process may set a thread's nice value down to `value`.
    static func canLowerNice(to value: Int32) -> Bool {
        #if os(Linux)
            if geteuid() == 0 { return true }
            return value >= ckiln_lowest_permitted_nice()
        #else
            return false
        #endif
    }

    /// Puts back a nice value saved by ``apply(_:)``.
    static func restore(_ previous: Int32) {
        #if os(Linux)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(ckiln_gettid()), previous)
        #endif
    }

    /// The calling thread's nice value (for tests).
    static func currentNice() -> Int32 {
        #if os(Linux)
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(ckiln_gettid()))
        #else
            return 0
        #endif
    }
}
