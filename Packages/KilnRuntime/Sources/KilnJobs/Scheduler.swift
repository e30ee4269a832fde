import CKilnSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A pool thread. It sleeps on its own semaphore when there is no work.
final class Worker: Sendable {
    let wakeup = CountingSemaphore()
}

/// The process-wide pool that runs the jobs of every ``JobQueue``: one thread per active core,
/// whatever the number of queues.
///
/// Scheduling is counted, never scanned: each queue keeps five intrusive FIFO ready lists (one per
/// priority) and a running count; queues that could start a job sit on a FIFO "runnable" list,
/// served round-robin. Taking a job is O(1), and so is releasing it.
///
/// Threads are started lazily and lent out extra while a worker blocks in a wait (see
/// ``blocking(_:)``), so waiting inside a job cannot starve the pool; the extra threads retire
/// once the waits end.
///
/// `@unchecked Sendable`: `core` and every queue's scheduling fields (and each job's intrusive
/// links) are guarded by the `core` mutex. Lock order: `core`, then a job's `state`; never the
/// reverse.
final class Scheduler: @unchecked Sendable {
    /// The one pool of the process.
    static let shared = Scheduler(threadCount: activeProcessorCount)

    /// The number of cores this process may run on.
    static var activeProcessorCount: Int {
        let count = Int(ckiln_active_processor_count())
        return count > 0 ? count : max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    struct Core {
        // Unowned: a queue on this list has ready jobs, and its jobs hold it.
        var runnableHead: Unmanaged<JobQueue>?
        var runnableTail: Unmanaged<JobQueue>?
        var idle: [Worker] = []
        var liveThreads = 0
        var blockedThreads = 0
        var tasks: [@Sendable () -> Void] = []
        var taskHead = 0

        var hasWork: Bool { runnableHead != nil || taskHead < tasks.count }
    }

    enum Wake {
        case none
        case signal(Worker)
        case spawn
    }

    /// Wakes decided under the lock, performed after it; the common zero-or-one case allocates nothing.
    enum Wakes {
        case none
        case one(Wake)
        case many([Wake])
    }

    let core = EngineLock(Core())
    let threadCount: Int

    init(threadCount: Int) {
        self.threadCount = threadCount
    }

    // MARK: Runnable queues (call with `core` held)

    /// Puts `queue` on the runnable list if it can start a job and isn't there yet.
    func noteRunnable(_ queue: JobQueue, _ core: inout Core) {
        guard !queue.inRunnableList, queue.canStartJob else { return }
        let link = Unmanaged.passUnretained(queue)
        queue.inRunnableList = true
        queue.runnableNext = nil
        if let tail = core.runnableTail {
            tail._withUnsafeGuaranteedRef { $0.runnableNext = link }
        } else {
            core.runnableHead = link
        }
        core.runnableTail = link
    }

    /// Takes the next job to run, round-robin over runnable queues, highest priority first.
    func takeJob(_ core: inout Core) -> Job? {
        while let link = core.runnableHead {
            let job = link._withUnsafeGuaranteedRef { queue -> Job? in
                core.runnableHead = queue.runnableNext
                if core.runnableHead == nil { core.runnableTail = nil }
                queue.runnableNext = nil
                queue.inRunnableList = false
                guard queue.canStartJob, let job = queue.popReadyJob() else { return nil }
                noteRunnable(queue, &core)
                return job
            }
            if let job { return job }
        }
        return nil
    }

    /// Decides how to get one more thread onto the work.
    func wakeOne(_ core: inout Core) -> Wake {
        if let worker = core.idle.popLast() { return .signal(worker) }
        if core.liveThreads - core.blockedThreads < threadCount {
            core.liveThreads += 1
            return .spawn
        }
        return .none
    }

    /// Decides wakes after `units` jobs were made runnable: one thread per unit, while there are
    /// idle or startable threads.
    func wakeForNewWork(_ core: inout Core, units: Int = 1) -> Wakes {
        guard units > 0, core.hasWork else { return .none }
        let first = wakeOne(&core)
        if case .none = first { return .none }
        guard units > 1, core.hasWork else { return .one(first) }
        var wakes = [first]
        var remaining = units - 1
        while remaining > 0, core.hasWork {
            let wake = wakeOne(&core)
            if case .none = wake { break }
            wakes.append(wake)
            remaining -= 1
        }
        return .many(wakes)
    }

    /// Puts waiting, ready jobs (of any queues) on their queues' ready lists and wakes threads.
    /// Uncounted references: the caller holds each job for the call.
    func makeReady(_ jobs: [Unmanaged<Job>]) {
        let wakes = core.withLock { core -> Wakes in
            let pushed = acceptReady(jobs, &core)
            return pushed > 0 ? wakeForNewWork(&core, units: pushed) : .none
        }
        perform(wakes)
    }

    /// Moves each job still waiting (and ready as far as the engine knows) to its ready list.
    /// Call with `core` held. Returns how many were pushed.
    func acceptReady(_ jobs: [Unmanaged<Job>], _ core: inout Core) -> Int {
        var pushed = 0
        for job in jobs where job._withUnsafeGuaranteedRef({ acceptReady($0, &core) }) { pushed += 1 }
        return pushed
    }

    /// As above, for the jobs a finishing job made ready.
    func acceptReady(_ jobs: ReadiedJobs, _ core: inout Core) -> Int {
        guard let first = jobs.first else { return 0 }
        var pushed = first._withUnsafeGuaranteedRef { acceptReady($0, &core) } ? 1 : 0
        for job in jobs.more where job._withUnsafeGuaranteedRef({ acceptReady($0, &core) }) { pushed += 1 }
        return pushed
    }

    private func acceptReady(_ job: Job, _ core: inout Core) -> Bool {
        // The queue uncounted: the job holds it (`JobState.queue`), and the caller holds the job.
        let accepted = job.state.withLock { state -> (Unmanaged<JobQueue>, Int)? in
            guard state.phase == .waiting, state.baseReadiness, let queue = state.queue else { return nil }
            state.phase = .readyQueued
            return (Unmanaged.passUnretained(queue), state.priority.bucket)
        }
        guard let (queue, bucket) = accepted else { return false }
        queue._withUnsafeGuaranteedRef { queue in
            queue.pushReady(job, bucket: bucket)
            noteRunnable(queue, &core)
        }
        return true
    }

    func perform(_ wake: Wake) {
        switch wake {
        case .none: break
        case .signal(let worker): worker.wakeup.signal()
        case .spawn: spawnThread()
        }
    }

    func perform(_ wakes: Wakes) {
        switch wakes {
        case .none: break
        case .one(let wake): perform(wake)
        case .many(let wakes): for wake in wakes { perform(wake) }
        }
    }

    // MARK: Threads

    private final class StartBox {
        let scheduler: Scheduler
        init(_ scheduler: Scheduler) { self.scheduler = scheduler }
    }

    private func spawnThread() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let box = Unmanaged.passRetained(StartBox(self)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread,
            &attributes,
            { argument in
                guard let argument else { return nil }
                let box = Unmanaged<StartBox>.fromOpaque(argument).takeRetainedValue()
                box.scheduler.workerLoop()
                return nil
            },
            box
        )
        if status != 0 {
            Unmanaged<StartBox>.fromOpaque(box).release()
            core.withLock { $0.liveThreads -= 1 }
        }
    }

    private enum Next {
        case job(Job)
        case task(@Sendable () -> Void)
        case sleep
        case exit
    }

    private func workerLoop() {
        let worker = Worker()
        let context = ThreadContext.current
        context.worker = worker
        while true {
            let (next, wake) = core.withLock { core -> (Next, Wake) in
                if core.liveThreads - core.blockedThreads > threadCount {
                    // A surplus thread (lent during a wait that has ended) retires. It may have
                    // been woken for new work: pass that wake on, or the work would wait.
                    core.liveThreads -= 1
                    return (.exit, core.hasWork ? wakeOne(&core) : .none)
                }
                if core.taskHead < core.tasks.count {
                    let task = core.tasks[core.taskHead]
                    core.taskHead += 1
                    if core.taskHead == core.tasks.count {
                        core.tasks.removeAll(keepingCapacity: true)
                        core.taskHead = 0
                    }
                    return (.task(task), core.hasWork ? wakeOne(&core) : .none)
                }
                if let job = takeJob(&core) {
                    return (.job(job), core.hasWork ? wakeOne(&core) : .none)
                }
                core.idle.append(worker)
                return (.sleep, .none)
            }
            perform(wake)
            switch next {
            case .job(var job):
                while true {
                    context.currentJob = job
                    job.runFromQueue(context)
                    context.currentJob = nil
                    guard let next = context.takeHandOff() else { break }
                    job = next
                }
            case .task(let task):
                task()
            case .sleep:
                worker.wakeup.wait()
            case .exit:
                context.worker = nil
                return
            }
        }
    }

    // MARK: Tasks and blocking

    /// Runs `task` on the pool as soon as a thread is free (used by ``BlockJob`` to run its blocks
    /// concurrently). Tasks go before jobs.
    func submit(_ task: @escaping @Sendable () -> Void) {
        let wake = core.withLock { core -> Wake in
            core.tasks.append(task)
            return wakeOne(&core)
        }
        perform(wake)
    }

    /// Runs `body`, which blocks the calling thread; if the thread is a pool worker, the pool may
    /// start another thread for the duration so the rest of the work goes on.
    func blocking<Result>(_ body: () throws -> Result) rethrows -> Result {
        guard ThreadContext.existing?.isWorker == true else { return try body() }
        let wake = core.withLock { core -> Wake in
            core.blockedThreads += 1
            return core.hasWork && core.idle.isEmpty ? wakeOne(&core) : .none
        }
        perform(wake)
        defer { core.withLock { $0.blockedThreads -= 1 } }
        return try body()
    }
}
