import Foundation
import KilnJobs
import KilnPaths
import Testing

/// kiln's own threads (KilnPaths/Threads.swift) and the engine's semaphore, which stand in for
/// Dispatch: every index of a parallel loop runs once, blocks on a serial thread run one at a
/// time in order and at their time, and a semaphore wakes its waiter.
@Suite("Threads without Dispatch")
struct HostThreadsTests {
    @Test("a parallel loop runs every index once, on more than one thread, and returns after the last")
    func parallelLoopRunsEveryIndexOnce() {
        for iterations in [0, 1, 2, 7, 1000] {
            let counts = LockedValue([Int](repeating: 0, count: iterations))
            let threads = LockedValue(Set<UInt>())
            parallelLoop(iterations: iterations) { index in
                // Whichever thread takes index 0 waits until another index is done: another
                // thread must have taken it (for at most 10 s, so a loop on one thread fails
                // below rather than hangs).
                if index == 0, iterations > 1, HostThread.coreCount > 1 {
                    for _ in 0..<10_000 where counts.withLock({ $0.dropFirst().allSatisfy { $0 == 0 } }) {
                        usleep(1_000)
                    }
                }
                counts.withLock { $0[index] += 1 }
                threads.withLock { _ = $0.insert(UInt(bitPattern: Int(bitPattern: pthread_self()))) }
            }
            #expect(counts.withLock { $0 } == [Int](repeating: 1, count: iterations), "\(iterations)")
            if iterations > 1, HostThread.coreCount > 1 {
                #expect(threads.withLock { $0.count } > 1, "\(iterations) iterations ran on one thread")
            }
        }
    }

    @Test("parallel loops from several threads at once, and one inside another, all finish")
    func concurrentAndNestedLoops() {
        let total = LockedValue(0)
        parallelLoop(iterations: 8) { _ in
            parallelLoop(iterations: 16) { _ in total.withLock { $0 += 1 } }
        }
        #expect(total.withLock { $0 } == 8 * 16)
        let group = CountingSemaphore()
        let sum = LockedValue(0)
        for _ in 0..<4 {
            HostThread.start {
                parallelLoop(iterations: 100) { index in sum.withLock { $0 += index } }
                group.signal()
            }
        }
        for _ in 0..<4 { group.wait() }
        #expect(sum.withLock { $0 } == 4 * 4950)
    }

    @Test("a serial thread runs blocks one at a time, in order; a delayed block waits its time")
    func serialThreadOrder() {
        let queue = SerialThread()
        let order = LockedValue([String]())
        let running = LockedValue(0)
        let done = CountingSemaphore()
        // The thread is held while the blocks are given, so how long that takes doesn't matter.
        let release = CountingSemaphore()
        queue.run { release.wait() }
        let start = MonotonicClock.nanoseconds()
        let delayedAt = LockedValue<UInt64>(0)
        queue.run(after: .milliseconds(50)) {
            delayedAt.withLock { $0 = MonotonicClock.nanoseconds() }
            order.withLock { $0.append("delayed") }
            done.signal()
        }
        for index in 0..<20 {
            queue.run {
                let overlapping = running.withLock { running -> Bool in
                    running += 1
                    return running > 1
                }
                #expect(!overlapping)
                order.withLock { $0.append("\(index)") }
                running.withLock { $0 -= 1 }
            }
        }
        release.signal()
        done.wait()
        #expect(order.withLock { $0 } == (0..<20).map(String.init) + ["delayed"])
        #expect(delayedAt.withLock { $0 } - start >= 50_000_000)
    }

    @Test("a block given to a serial thread runs after its owner is gone")
    func serialThreadOutlivesItsOwner() {
        let done = CountingSemaphore()
        do {
            let queue = SerialThread()
            queue.run(after: .milliseconds(20)) { done.signal() }
        }
        done.wait()
    }

    @Test("a semaphore's signal wakes a waiter on another thread; tryWait takes only what is there")
    func semaphore() {
        let semaphore = CountingSemaphore(value: 1)
        #expect(semaphore.tryWait())
        #expect(!semaphore.tryWait())
        let woke = CountingSemaphore()
        HostThread.start {
            semaphore.wait()
            woke.signal()
        }
        semaphore.signal()
        woke.wait()
        #expect(!semaphore.tryWait())
    }

    @Test("a timer queue of thousands of delayed blocks runs each once, none early, in the order they fall due")
    func timerQueue() {
        let queue = SerialThread()
        // Thousands, given in an order unlike their times: each runs once, not before its time.
        let count = 3_000
        let early = LockedValue(0)
        let ran = LockedValue([Int](repeating: 0, count: count))
        let allRan = CountingSemaphore()
        for index in 0..<count {
            let delay = UInt64((index * 7_919) % 1_000) * 1_000
            let given = MonotonicClock.nanoseconds()
            queue.run(after: .nanoseconds(delay)) {
                if MonotonicClock.nanoseconds() < given + delay { early.withLock { $0 += 1 } }
                let last = ran.withLock { ran -> Bool in
                    ran[index] += 1
                    return !ran.contains(0)
                }
                if last { allRan.signal() }
            }
        }
        allRan.wait()
        #expect(early.withLock { $0 } == 0)
        #expect(ran.withLock { $0 } == [Int](repeating: 1, count: count))
        // Blocks given out of order while the queue's thread is held: it takes them by their times.
        let order = LockedValue([Int]())
        let done = CountingSemaphore()
        let release = CountingSemaphore()
        queue.run { release.wait() }
        let base = MonotonicClock.nanoseconds()
        for index in 0..<50 {
            let position = (index * 17) % 50
            queue.run(at: base + UInt64(position) * 1_000) {
                order.withLock { $0.append(position) }
                if position == 49 { done.signal() }
            }
        }
        release.signal()
        done.wait()
        #expect(order.withLock { $0 } == Array(0..<50))
    }

    @Test("kiln's threads start with every signal blocked: the process's signals go to its signal thread")
    func threadsBlockSignals() {
        let blocked = LockedValue(false)
        let done = CountingSemaphore()
        HostThread.start {
            var mask = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &mask)
            blocked.withLock { $0 = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGTERM) == 1 }
            done.signal()
        }
        done.wait()
        #expect(blocked.withLock { $0 })
    }
}
