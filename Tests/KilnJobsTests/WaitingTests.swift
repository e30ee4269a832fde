import KilnJobs
import KilnJobsAsync
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Waiting")
    struct WaitingTests {
        @Test("waitUntilFinished() returns once the job has finished")
        func waitUntilFinishedBlocks() throws {
            let queue = JobQueue(name: "queue")
            let started = Arrivals()
            let release = Gate()
            let job = ClosureJob { _ in
                started.arrive()
                _ = release.wait(seconds: 10)
            }
            try queue.addJob(job)
            #expect(started.wait(for: 1))
            spawnThread { release.open() }
            let outcome = runBounded { () throws -> Bool in
                try job.waitUntilFinished()
                return job.isFinished
            }
            #expect(try outcome?.get() == true)
        }

        @Test("waitUntilAllJobsAreFinished() returns once every job has finished and run its completion block")
        func waitUntilAllJobsAreFinishedBlocks() throws {
            let queue = JobQueue(name: "queue")
            let mains = Counter()
            let completions = Counter()
            for _ in 0..<20 {
                let job = BlockJob { mains.increment() }
                job.completionBlock = { completions.increment() }
                try queue.addJob(job)
            }
            let outcome = runBounded { () throws -> Int in
                try queue.waitUntilAllJobsAreFinished()
                return queue.jobCount
            }
            #expect(try outcome?.get() == 0)
            #expect(mains.count == 20)
            #expect(completions.count == 20)
        }

        @Test("addJobs(_:waitUntilFinished: true) returns once all the jobs have finished")
        func addJobsAndWait() throws {
            let queue = JobQueue(name: "queue")
            let jobs = (0..<10).map { _ in BlockJob {} }
            let outcome = runBounded { () throws -> Bool in
                try queue.addJobs(jobs, waitUntilFinished: true)
                return jobs.allSatisfy { $0.isFinished }
            }
            #expect(try outcome?.get() == true)
        }

        @Test("the async waitUntilFinished() resumes once the job has finished")
        func asyncWaitUntilFinished() async throws {
            let queue = JobQueue(name: "queue")
            let started = Arrivals()
            let release = Gate()
            let job = ClosureJob { _ in
                started.arrive()
                _ = release.wait(seconds: 10)
            }
            try queue.addJob(job)
            #expect(started.wait(for: 1))
            spawnThread { release.open() }
            let outcome = await runBounded { () async throws -> Bool in
                try await job.waitUntilFinished()
                return job.isFinished
            }
            #expect(try outcome?.get() == true)
        }

        @Test("the async waitUntilAllJobsAreFinished() resumes once the queue is empty")
        func asyncWaitUntilAllJobsAreFinished() async throws {
            let queue = JobQueue(name: "queue")
            let mains = Counter()
            for _ in 0..<20 { queue.addJob { mains.increment() } }
            let outcome = await runBounded { () async throws -> Int in
                try await queue.waitUntilAllJobsAreFinished()
                return queue.jobCount
            }
            #expect(try outcome?.get() == 0)
            #expect(mains.count == 20)
        }

        @Test("a job waiting on itself gets waitWouldDeadlock")
        func waitOnSelf() throws {
            let queue = JobQueue(name: "queue")
            let code = Locked<JobError.Code?>(nil)
            let job = ClosureJob { job in
                code.value = thrownCode { try job.waitUntilFinished() }
            }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(code.value == .waitWouldDeadlock)
        }

        @Test("waiting on a job queued behind the current one in a serial queue gets waitWouldDeadlock")
        func waitOnJobBehindInSerialQueue() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let code = Locked<JobError.Code?>(nil)
            let behind = Job()
            let first = ClosureJob { _ in
                code.value = thrownCode { try behind.waitUntilFinished() }
            }
            try queue.addJobs([first, behind])
            #expect(queue.empties())
            #expect(code.value == .waitWouldDeadlock)
        }

        @Test("waiting on a job that depends on the current one gets waitWouldDeadlock")
        func waitOnDependent() throws {
            let queue = JobQueue(name: "queue")
            let code = Locked<JobError.Code?>(nil)
            let dependent = Job()
            let current = ClosureJob { _ in
                code.value = thrownCode { try dependent.waitUntilFinished() }
            }
            let middle = Job()
            middle.addDependency(current)
            dependent.addDependency(middle)
            try queue.addJobs([current, middle, dependent])
            #expect(queue.empties())
            #expect(code.value == .waitWouldDeadlock)
        }

        @Test(
            "waitUntilAllJobsAreFinished() from main or the completion block of a job of that queue gets waitWouldDeadlock"
        )
        func waitForOwnQueue() throws {
            let queue = JobQueue(name: "queue")
            let codes = Locked<[String: JobError.Code]>([:])
            let job = ClosureJob { _ in
                let thrown = thrownCode { try queue.waitUntilAllJobsAreFinished() }
                codes.withLock { $0["main"] = thrown }
            }
            job.completionBlock = {
                let thrown = thrownCode { try queue.waitUntilAllJobsAreFinished() }
                codes.withLock { $0["completion"] = thrown }
            }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(codes.value == ["main": .waitWouldDeadlock, "completion": .waitWouldDeadlock])
        }

        @Test("waitUntilAllJobsAreFinished() also waits for jobs that completion blocks add to the queue")
        func waitCoversJobsAddedByCompletionBlocks() throws {
            /// Each job's completion block adds the next generation.
            final class Generations: Sendable {
                let queue = JobQueue(name: "generations")
                let ran = Counter()
                let stillQueuedInCompletion = Counter()

                func add(generation: Int) {
                    let job = BlockJob { self.ran.increment() }
                    job.completionBlock = {
                        if self.queue.jobs.contains(where: { $0 === job }) { self.stillQueuedInCompletion.increment() }
                        if generation > 1 { self.add(generation: generation - 1) }
                    }
                    try? queue.addJob(job)
                }
            }
            let generations = Generations()
            for _ in 0..<3 { generations.add(generation: 5) }
            #expect(generations.queue.empties())
            #expect(generations.ran.count == 15)
            #expect(generations.stillQueuedInCompletion.count == 15)
        }

        @Test(
            "waiting in main on another queue's job works even when every pool thread is waiting: the pool lends threads"
        )
        func poolLendsThreadsToWaiters() throws {
            let waiterCount = 2 * JobQueue.defaultMaxConcurrentJobCount
            let waiters = JobQueue(name: "waiters", maxConcurrentJobCount: waiterCount)
            let workers = JobQueue(name: "workers", maxConcurrentJobCount: waiterCount)
            let waiting = Arrivals()
            let failures = Counter()
            let targets = (0..<waiterCount).map { _ in Job() }
            for target in targets {
                try waiters.addJob(
                    ClosureJob { _ in
                        waiting.arrive()
                        do { try target.waitUntilFinished() } catch { failures.increment() }
                    }
                )
            }
            // Every waiter is inside main, blocked, before any job it waits for is even enqueued.
            #expect(waiting.wait(for: waiterCount))
            try workers.addJobs(targets)
            #expect(waiters.empties())
            #expect(workers.empties())
            #expect(failures.count == 0)
        }
        @Test("ready work never waits while the pool has idle threads, even after a thread it lent retires")
        func retiringLentThreadStrandsNoWork() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 8)
            let unblock = Job()
            let waiting = Arrivals()
            let followUpRan = Gate()
            let sawFollowUp = Locked<Bool?>(nil)
            // 1. A job waits on the engine, so the pool may lend a thread in its place...
            let waiter = ClosureJob { _ in
                waiting.arrive()
                try unblock.waitUntilFinished()
                // 4. ...and once released it hands work to the pool and waits for it by its own means.
                queue.addJob { followUpRan.open() }
                sawFollowUp.value = followUpRan.wait(seconds: 60)
            }
            try queue.addJob(waiter)
            #expect(waiting.wait(for: 1))

            // 2. A second thread is kept busy, so the next job runs on a third, lent, thread.
            let busyStarted = Arrivals()
            let release = Gate()
            let busy = BlockJob {
                busyStarted.arrive()
                _ = release.wait(seconds: 10)
            }
            try queue.addJob(busy)
            #expect(busyStarted.wait(for: 1))
            let quick = BlockJob {}
            try queue.addJob(quick)
            #expect(quick.finishes())
            release.open()
            #expect(busy.finishes())

            // 3. Let the two free threads go idle. The pause only orders the threads: were they not
            // idle yet, the test would pass without proving anything, never fail.
            _ = Gate().wait(seconds: 0.1)
            try unblock.start()
            #expect(queue.empties(within: 15))
            #expect(sawFollowUp.value == true, "the follow-up job waited although the pool had idle threads")
        }
    }
}
