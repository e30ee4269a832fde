#if canImport(Glibc)
    import Glibc
#endif

// kiln's threads outside the job engine, on pthreads: what Dispatch did for the host before.
// Dispatch's Swift overlay brings the string processing libraries (Regex) into every process that
// loads it, 1 MB of memory no run uses; the engine has its own pool and semaphore
// (KilnJobs.CountingSemaphore).

/// The monotonic clock: time that only moves forward, for durations.
///
/// Threading: any thread.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary start (the boot), never going back.
    public static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// Threads kiln starts for itself. They start with every signal blocked, as Dispatch's did: the
/// process's signals go to the thread that waits for them (a `signalfd`), never to a helper.
///
/// Threading: any thread.
public enum HostThread {
    /// Runs `body` on a new thread, which ends with it. Whether the thread could be started
    /// (when not, `body` doesn't run).
    @discardableResult
    public static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Start(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var thread = pthread_t()
        let status = pthread_create(
            &thread,
            &attributes,
            { argument in
                guard let argument else { return nil }
                Unmanaged<Start>.fromOpaque(argument).takeRetainedValue().body()
                return nil
            },
            box
        )
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(box).release()
            return false
        }
        return true
    }

    private final class Start {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// The cores this process may run on, as the system counts them online.
    public static var coreCount: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }
}

/// A lock and a condition on it, from pthreads (which ThreadSanitizer understands).
///
/// Threading: any thread; `wait` only with the lock held (inside ``locked(_:)``).
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` with the lock let go, taking it again after (called with it held).
    func unlocked(_ body: () -> Void) {
        pthread_mutex_unlock(mutex)
        defer { pthread_mutex_lock(mutex) }
        body()
    }

    /// Sleeps until woken (or spuriously), the lock let go meanwhile; with `deadline`, at the
    /// latest then (``MonotonicClock`` nanoseconds).
    func wait(until deadline: UInt64? = nil) {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return
        }
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Wakes every thread waiting.
    func wakeAll() { pthread_cond_broadcast(condition) }
}

/// Runs `body` for every index of `0..<iterations` on every core, and returns once all are done:
/// the calling thread takes indices too, and the process's helper threads (one fewer than the
/// cores, started at the first loop) take the rest. Indices are taken one at a time: meant for
/// loops over chunks, each worth more than a lock. Loops from several threads at once share the
/// helpers; a loop inside `body` works too (its caller takes part).
///
/// Threading: any thread; `body` runs on several threads at once.
public func parallelLoop(iterations: Int, _ body: @Sendable (Int) -> Void) {
    guard iterations > 1, ParallelLoopPool.shared.helperCount > 0 else {
        for index in 0..<iterations { body(index) }
        return
    }
    withoutActuallyEscaping(body) { body in
        ParallelLoopPool.shared.run(ParallelLoopPool.Loop(iterations: iterations, body: body))
    }
}

/// The helpers of ``parallelLoop(iterations:_:)``.
///
/// `@unchecked Sendable`: `loops` and every loop's counters are guarded by `lock`.
final class ParallelLoopPool: @unchecked Sendable {
    static let shared = ParallelLoopPool(helperCount: HostThread.coreCount - 1)

    /// One loop: its body, and how far it is.
    final class Loop: @unchecked Sendable {
        let iterations: Int
        let body: @Sendable (Int) -> Void
        var next = 0
        var finished = 0
        var helping = 0

        init(iterations: Int, body: @escaping @Sendable (Int) -> Void) {
            self.iterations = iterations
            self.body = body
        }
    }

    let helperCount: Int
    private let lock = ConditionLock()
    private var loops: [Loop] = []
    private var started = false

    init(helperCount: Int) {
        self.helperCount = max(0, helperCount)
    }

    /// Offers `loop` to the helpers, takes part in it, and returns once every index is done and
    /// no helper holds it (its body may not outlive the call).
    func run(_ loop: Loop) {
        let startsHelpers = lock.locked {
            loops.append(loop)
            lock.wakeAll()
            defer { started = true }
            return !started
        }
        if startsHelpers {
            for _ in 0..<helperCount { HostThread.start { [self] in help() } }
        }
        lock.locked {
            work(on: loop)
            loops.removeAll { $0 === loop }
            while loop.finished < loop.iterations || loop.helping > 0 { lock.wait() }
        }
    }

    /// Takes `loop`'s indices until none is left, running each without the lock. Called, and
    /// returns, with the lock held.
    private func work(on loop: Loop) {
        while loop.next < loop.iterations {
            let index = loop.next
            loop.next += 1
            lock.unlocked { loop.body(index) }
            loop.finished += 1
        }
        if loop.finished == loop.iterations { lock.wakeAll() }
    }

    /// A helper: works on the oldest loop with indices left, or sleeps until one comes.
    private func help() {
        lock.locked {
            while true {
                guard let loop = loops.first(where: { $0.next < $0.iterations }) else {
                    lock.wait()
                    continue
                }
                loop.helping += 1
                work(on: loop)
                loop.helping -= 1
                if loop.helping == 0 { lock.wakeAll() }
            }
        }
    }
}

/// One thread that runs the blocks given to it one at a time, in order, each at its time: a serial
/// queue (a build state's writer), or a timer queue (the `timeout:` of commands). The thread
/// starts with the first block and ends after the owner is gone and the last block has run.
///
/// Threading: any member from any thread; blocks run on the queue's thread, never two at once.
public final class SerialThread: @unchecked Sendable {
    /// What the owner and the thread share. `@unchecked Sendable`: its fields are guarded by `lock`.
    private final class Queue: @unchecked Sendable {
        let lock = ConditionLock()
        /// By due time (0: now), in the order given among equal times.
        var blocks: [(due: UInt64, block: @Sendable () -> Void)] = []
        var serving = false
        var closed = false
    }

    private let queue = Queue()

    /// A queue; its thread starts with the first block.
    public init() {}

    deinit {
        let queue = self.queue
        queue.lock.locked {
            queue.closed = true
            queue.lock.wakeAll()
        }
    }

    /// Runs `block` on the queue's thread after the blocks given before it that are due by then:
    /// at once, or once `delay` has passed.
    public func run(after delay: Duration = .zero, _ block: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
        run(at: nanoseconds == 0 ? 0 : MonotonicClock.nanoseconds() + nanoseconds, block)
    }

    /// Runs `block` on the queue's thread after the blocks due by then, once ``MonotonicClock``
    /// reads `due` (0: at once).
    public func run(at due: UInt64, _ block: @escaping @Sendable () -> Void) {
        let queue = self.queue
        let starts = queue.lock.locked {
            // After every block due by then (a binary search: a timer queue may hold thousands).
            var low = 0
            var high = queue.blocks.count
            while low < high {
                let middle = (low + high) / 2
                if queue.blocks[middle].due <= due { low = middle + 1 } else { high = middle }
            }
            queue.blocks.insert((due, block), at: low)
            queue.lock.wakeAll()
            defer { queue.serving = true }
            return !queue.serving
        }
        guard starts else { return }
        if !HostThread.start({ Self.serve(queue, untilIdle: false) }) {
            // No thread to be had: the blocks run here, and the next block tries again.
            Self.serve(queue, untilIdle: true)
        }
    }

    /// Runs the queue's blocks as they fall due; ends once the owner is gone and none is left
    /// (with `untilIdle`, as soon as none is left).
    private static func serve(_ queue: Queue, untilIdle: Bool) {
        queue.lock.locked {
            while true {
                guard let (due, block) = queue.blocks.first else {
                    if queue.closed || untilIdle {
                        queue.serving = false
                        return
                    }
                    queue.lock.wait()
                    continue
                }
                if due > 0, due > MonotonicClock.nanoseconds() {
                    queue.lock.wait(until: due)
                    continue
                }
                queue.blocks.removeFirst()
                queue.lock.unlocked(block)
            }
        }
    }
}
