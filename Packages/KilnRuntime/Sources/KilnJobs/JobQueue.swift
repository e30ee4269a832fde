import Synchronization

/// Runs jobs as they become ready, at most ``maxConcurrentJobCount`` at a time — KilnJobs'
/// counterpart of `NSOperationQueue`.
///
/// A queue owns no threads: every queue of the process shares one pool sized to the cores, so
/// more queues never mean more threads. A queue is a *width* and an order: among its ready jobs,
/// higher ``Job/queuePriority`` starts first, and jobs of equal priority start in the order they
/// became ready. An asynchronous job holds one unit of the width from its start until it
/// finishes, but no thread.
///
/// Jobs stay in ``jobs`` until they have finished, their completion block has run and their
/// dependents have been released; so `waitUntilAllJobsAreFinished()` also waits for jobs that
/// completion blocks add to the queue — batches that create the next batch.
///
/// A queue that still holds jobs is kept alive by them until they finish.
///
/// Threading: every member may be called from any thread at any time. `@unchecked Sendable`: the
/// scheduling fields below are guarded by the shared scheduler's `core` mutex, the name by `label`.
public final class JobQueue: @unchecked Sendable, CustomStringConvertible {
    /// Five uncounted job references, one per priority level, without an array's allocation.
    struct UnownedJobs {
        var veryHigh: Unmanaged<Job>?
        var high: Unmanaged<Job>?
        var normal: Unmanaged<Job>?
        var low: Unmanaged<Job>?
        var veryLow: Unmanaged<Job>?

        subscript(bucket: Int) -> Unmanaged<Job>? {
            get {
                switch bucket {
                case 0: veryHigh
                case 1: high
                case 2: normal
                case 3: low
                default: veryLow
                }
            }
            set {
                switch bucket {
                case 0: veryHigh = newValue
                case 1: high = newValue
                case 2: normal = newValue
                case 3: low = newValue
                default: veryLow = newValue
                }
            }
        }
    }

    let scheduler: Scheduler
    private let label: EngineLock<String?>

    // Guarded by `scheduler.core`.
    var width: Int
    var suspended = false
    var running = 0
    // Unowned: a job on a ready list is also on the job list, which holds its reference.
    var readyHeads = UnownedJobs()
    var readyTails = UnownedJobs()
    var readyCount = 0
    var jobsHead: Unmanaged<Job>?
    var jobsTail: Unmanaged<Job>?
    var count = 0
    var runnableNext: Unmanaged<JobQueue>?
    var inRunnableList = false
    var emptyWaiters: [@Sendable () -> Void] = []

    /// How many ready jobs ``addJobs(_:waitUntilFinished:)`` hands to the pool at a time.
    static let readyChunk = 1024

    /// The width a queue gets when none is given: the number of active processors.
    ///
    /// Threading: any thread.
    public static var defaultMaxConcurrentJobCount: Int { Scheduler.activeProcessorCount }

    /// Creates a queue.
    ///
    /// - Parameters:
    ///   - name: A name for people, e.g. `disk:/dev/sda1`.
    ///   - maxConcurrentJobCount: The width; 1 makes a serial queue.
    ///
    /// Threading: any thread.
    public init(name: String? = nil, maxConcurrentJobCount: Int = JobQueue.defaultMaxConcurrentJobCount) {
        self.scheduler = Scheduler.shared
        self.label = EngineLock(name)
        self.width = max(1, maxConcurrentJobCount)
    }

    /// The queue's name; defaults to `JobQueue 0x<address>`.
    ///
    /// Threading: any thread.
    public var name: String {
        get { label.withLock { $0 } ?? "JobQueue 0x\(String(UInt(bitPattern: ObjectIdentifier(self)), radix: 16))" }
        set { label.withLock { $0 = newValue } }
    }

    /// The name.
    public var description: String { name }

    /// The queue of the job the calling thread is running (in `main`, `start` or its completion
    /// block), or `nil` (NSOperationQueue's `currentQueue`).
    ///
    /// Threading: any thread.
    public static var current: JobQueue? {
        ThreadContext.existing?.currentJob?.state.withLock { $0.queue }
    }

    // MARK: - Width and suspension

    /// The most jobs the queue runs at once. At least 1; 1 makes the queue serial. A change applies
    /// at once: a wider queue starts more jobs right away; a narrower one lets running jobs finish.
    ///
    /// Threading: any thread.
    public var maxConcurrentJobCount: Int {
        get { scheduler.core.withLock { _ in width } }
        set {
            let wakes = scheduler.core.withLock { core -> Scheduler.Wakes in
                width = max(1, newValue)
                scheduler.noteRunnable(self, &core)
                return scheduler.wakeForNewWork(&core, units: min(readyCount, max(0, width - running)))
            }
            scheduler.perform(wakes)
        }
    }

    /// While `true`, the queue starts no new jobs; running jobs go on, and jobs can still be added.
    ///
    /// Threading: any thread.
    public var isSuspended: Bool {
        get { scheduler.core.withLock { _ in suspended } }
        set {
            let wakes = scheduler.core.withLock { core -> Scheduler.Wakes in
                suspended = newValue
                guard !newValue else { return .none }
                scheduler.noteRunnable(self, &core)
                return scheduler.wakeForNewWork(&core, units: min(readyCount, max(0, width - running)))
            }
            scheduler.perform(wakes)
        }
    }

    var canStartJob: Bool { !suspended && readyCount > 0 && running < width }

    // MARK: - Adding jobs

    /// Adds a job. It starts when it is ready and the queue has a free slot.
    ///
    /// - Throws: ``JobError``: `.alreadyEnqueued`, `.alreadyExecuting`, `.alreadyFinished`, or
    ///   `.dependencyCycle` naming the jobs of a cycle the job is part of or depends on.
    ///
    /// Threading: any thread.
    public func addJob(_ job: Job) throws(JobError) {
        try addJobs([job], waitUntilFinished: false)
    }

    /// Adds a block as a ``BlockJob`` and returns it.
    ///
    /// Threading: any thread.
    @discardableResult
    public func addJob(_ block: @escaping @Sendable () throws -> Void) -> BlockJob {
        let job = BlockJob(block: block)
        // A fresh job can be in no queue and no cycle.
        try? addJobs([job], waitUntilFinished: false)
        return job
    }

    /// Adds jobs all at once: either all are added or, on error, none.
    ///
    /// - Parameters:
    ///   - jobs: The jobs, in the order they should start when equally ready and of equal priority.
    ///   - waitUntilFinished: Block until all of them have finished.
    /// - Throws: ``JobError`` as `addJob(_:)`, and as `Job.waitUntilFinished()` when waiting.
    ///
    /// Threading: any thread.
    public func addJobs(_ jobs: [Job], waitUntilFinished: Bool = false) throws(JobError) {
        try CycleDetector.check(jobs)
        // The failure's message is built after unlocking: it reads `description`, which takes the
        // job's lock and may be overridden.
        let failure = scheduler.core.withLock { _ -> (JobState.EnqueueFailure, Job)? in
            var linked = 0
            for job in jobs {
                let failure = job.state.withLock { state -> JobState.EnqueueFailure? in
                    if state.phase == .finished { return .alreadyFinished }
                    if state.queue != nil { return .alreadyEnqueued }
                    if state.phase != .free { return .alreadyStarted }
                    state.phase = .waiting
                    state.queue = self
                    return nil
                }
                if let failure {
                    unlinkLast(linked, of: jobs)
                    return (failure, job)
                }
                link(job)
                linked += 1
            }
            return nil
        }
        if let (failure, job) = failure { throw failure.error(for: job.description) }
        // Hand ready jobs over in chunks, so the pool starts on the first ones while the rest are
        // still being checked.
        // Uncounted: the queue holds them now.
        var ready: [Unmanaged<Job>] = []
        ready.reserveCapacity(min(jobs.count, Self.readyChunk))
        for job in jobs where job.readyForQueue() {
            ready.append(Unmanaged.passUnretained(job))
            if ready.count == Self.readyChunk {
                scheduler.makeReady(ready)
                ready.removeAll(keepingCapacity: true)
            }
        }
        if !ready.isEmpty { scheduler.makeReady(ready) }
        if waitUntilFinished {
            for job in jobs { try job.waitUntilFinished() }
        }
    }

    /// Undoes the linking of the first `linkedCount` jobs after a failure (under `core`).
    private func unlinkLast(_ linkedCount: Int, of jobs: [Job]) {
        for job in jobs.prefix(linkedCount) {
            unlink(job)
            job.state.withLock { state in
                state.phase = .free
                state.queue = nil
            }
        }
    }

    // MARK: - Inspecting

    /// The jobs in the queue — waiting, ready or running — in the order they were added.
    ///
    /// Threading: any thread; a snapshot.
    public var jobs: [Job] {
        scheduler.core.withLock { _ in
            var result: [Job] = []
            result.reserveCapacity(count)
            var cursor = jobsHead
            while let link = cursor {
                let job = link.takeUnretainedValue()
                result.append(job)
                cursor = job.queueNext
            }
            return result
        }
    }

    /// The number of jobs in ``jobs``.
    ///
    /// Threading: any thread.
    public var jobCount: Int { scheduler.core.withLock { _ in count } }

    /// The number of jobs on the ready list right now: ready, waiting for a slot. A job finishing
    /// while this is above zero hands its slot on at once.
    ///
    /// Threading: any thread; a snapshot.
    public var readyJobCount: Int { scheduler.core.withLock { _ in readyCount } }

    /// The number of jobs holding a slot right now (executing, or being started).
    ///
    /// Threading: any thread.
    public var runningJobCount: Int { scheduler.core.withLock { _ in running } }

    // MARK: - Cancelling and waiting

    /// Cancels every job in the queue (see ``Job/cancel()``).
    ///
    /// Threading: any thread.
    public func cancelAllJobs() {
        for job in jobs { job.cancel() }
    }

    /// Blocks until the queue holds no jobs — including jobs added meanwhile, e.g. by completion
    /// blocks.
    ///
    /// - Throws: ``JobError`` `.waitWouldDeadlock` when called from a job of this queue (its main
    ///   or completion block): the queue can't empty while that job waits.
    ///
    /// Threading: any thread.
    public func waitUntilAllJobsAreFinished() throws(JobError) {
        try checkNotInside()
        let semaphore = CountingSemaphore()
        guard addEmptyWaiter({ semaphore.signal() }) else { return }
        scheduler.blocking { semaphore.wait() }
    }

    /// Throws what ``waitUntilAllJobsAreFinished()`` throws instead of waiting forever.
    ///
    /// Threading: any thread.
    package func checkNotInside() throws(JobError) {
        if let current = ThreadContext.existing?.currentJob, current.state.withLock({ $0.queue }) === self {
            throw JobError(
                .waitWouldDeadlock,
                "\(current.description) waits for its own queue \(name) to empty",
                jobs: [current.description]
            )
        }
    }

    /// Registers `waiter` to run when the queue next holds no jobs; `false` if it holds none now.
    ///
    /// Threading: any thread.
    package func addEmptyWaiter(_ waiter: @escaping @Sendable () -> Void) -> Bool {
        scheduler.core.withLock { _ in
            guard count > 0 else { return false }
            emptyWaiters.append(waiter)
            return true
        }
    }

    // MARK: - Engine side (called by Job)

    /// Takes a job off the ready list because it is no longer ready (a dependency was added, or a
    /// custom readiness condition went false), unless it stays
    /// (``JobState/leavesReadyListWhenNotReady``).
    func withdrawFromReadyList(_ job: Job) {
        scheduler.core.withLock { _ in
            let wasQueued = job.state.withLock { state -> Bool in
                guard state.leavesReadyListWhenNotReady else { return false }
                state.phase = .waiting
                return true
            }
            if wasQueued { removeReady(job) }
        }
    }

    /// Moves a ready-listed job to the list of its new priority.
    func reprioritize(_ job: Job) {
        scheduler.core.withLock { _ in
            let bucket = job.state.withLock { $0.phase == .readyQueued ? $0.priority.bucket : nil }
            guard let bucket else { return }
            removeReady(job)
            pushReady(job, bucket: bucket)
        }
    }

    /// Releases the job's slot and takes it out of the queue, after its completion block; in the
    /// same critical section pushes the dependents it made ready, and — when the finishing thread
    /// is the worker that ran the job — hands that worker its next job. Called exactly once per
    /// enqueued job.
    func jobDidFinish(_ job: Job, readied: ReadiedJobs, handOffTo worker: ThreadContext?) {
        let (wakes, waiters) = scheduler.core.withLock { core -> (Scheduler.Wakes, [@Sendable () -> Void]) in
            let pushed = readied.isEmpty ? 0 : scheduler.acceptReady(readied, &core)
            if job.holdsQueueSlot {
                job.holdsQueueSlot = false
                running -= 1
            }
            unlink(job)
            var waiters: [@Sendable () -> Void] = []
            if count == 0 {
                waiters = emptyWaiters
                emptyWaiters = []
            }
            scheduler.noteRunnable(self, &core)
            if let worker {
                worker.handOff(scheduler.takeJob(&core))
                // Like a worker's own pick: if work remains, wake one more thread (which cascades).
                return (core.hasWork ? .one(scheduler.wakeOne(&core)) : .none, waiters)
            }
            return (scheduler.wakeForNewWork(&core, units: pushed + 1), waiters)
        }
        scheduler.perform(wakes)
        for waiter in waiters { waiter() }
    }

    // MARK: - Intrusive lists (under `scheduler.core`)

    private func link(_ job: Job) {
        let link = Unmanaged.passRetained(job)  // released in `unlink`
        job.queueNext = nil
        job.queuePrevious = jobsTail
        if let tail = jobsTail {
            tail._withUnsafeGuaranteedRef { $0.queueNext = link }
        } else {
            jobsHead = link
        }
        jobsTail = link
        count += 1
    }

    private func unlink(_ job: Job) {
        let next = job.queueNext
        let previous = job.queuePrevious
        if let previous {
            previous._withUnsafeGuaranteedRef { $0.queueNext = next }
        } else {
            jobsHead = next
        }
        if let next {
            next._withUnsafeGuaranteedRef { $0.queuePrevious = previous }
        } else {
            jobsTail = previous
        }
        job.queueNext = nil
        job.queuePrevious = nil
        count -= 1
        Unmanaged.passUnretained(job).release()  // retained in `link`
    }

    func pushReady(_ job: Job, bucket: Int) {
        let link = Unmanaged.passUnretained(job)
        job.readyBucket = bucket
        job.readyNext = nil
        job.readyPrevious = readyTails[bucket]
        if let tail = readyTails[bucket] {
            tail._withUnsafeGuaranteedRef { $0.readyNext = link }
        } else {
            readyHeads[bucket] = link
        }
        readyTails[bucket] = link
        readyCount += 1
    }

    private func removeReady(_ job: Job) {
        removeReady(job, from: job.readyBucket)
    }

    private func removeReady(_ job: Job, from bucket: Int) {
        let next = job.readyNext
        let previous = job.readyPrevious
        if let previous {
            previous._withUnsafeGuaranteedRef { $0.readyNext = next }
        } else {
            readyHeads[bucket] = next
        }
        if let next {
            next._withUnsafeGuaranteedRef { $0.readyPrevious = previous }
        } else {
            readyTails[bucket] = previous
        }
        job.readyNext = nil
        job.readyPrevious = nil
        readyCount -= 1
    }

    /// Takes the first job of the highest non-empty priority list and marks it starting.
    func popReadyJob() -> Job? {
        for bucket in 0..<5 {
            while let link = readyHeads[bucket] {
                let job = link.takeUnretainedValue()
                removeReady(job, from: bucket)
                let take = job.state.withLock { state -> Bool in
                    guard state.phase == .readyQueued else { return false }
                    if state.baseReadiness {
                        state.phase = .starting
                        return true
                    }
                    state.phase = .waiting
                    return false
                }
                if take {
                    job.holdsQueueSlot = true
                    running += 1
                    return job
                }
            }
        }
        return nil
    }
}
