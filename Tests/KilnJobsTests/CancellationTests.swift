import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Cancellation")
    struct CancellationTests {
        struct Failure: Error {}

        @Test("cancel() sets isCancelled, with the reason requested")
        func cancelSetsFlag() throws {
            let queue = JobQueue(name: "suspended")
            queue.isSuspended = true
            let job = Job()
            try queue.addJob(job)
            #expect(!job.isCancelled)
            job.cancel()
            #expect(job.isCancelled)
            guard case .requested = job.cancellationReason else {
                Issue.record("reason: \(String(describing: job.cancellationReason))")
                return
            }
            queue.isSuspended = false
            #expect(queue.empties())
        }

        @Test(
            "a cancelled job waiting on dependencies becomes ready at once, and its queue finishes it without calling main"
        )
        func cancelledWaitingJobIsFlushed() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let dependency = Job()
            let job = ClosureJob { _ in runs.increment() }
            job.addDependency(dependency)
            try queue.addJob(job)
            #expect(!job.isReady)
            job.cancel()
            #expect(job.isReady)
            #expect(job.finishes())
            #expect(runs.count == 0)
            #expect(!dependency.isFinished)
            #expect(queue.empties())
        }

        @Test("a cancelled job in no queue finishes at once")
        func cancelledFreeJobFinishes() {
            let runs = Counter()
            let job = ClosureJob { _ in runs.increment() }
            job.addDependency(Job())
            job.cancel()
            #expect(job.isFinished)
            #expect(!job.isExecuting)
            #expect(runs.count == 0)
        }

        @Test("cancelAllJobs() cancels every job of the queue; the running one sees the flag and the others never run")
        func cancelAllJobs() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let started = Arrivals()
            let release = Gate()
            let sawCancel = Locked<Bool?>(nil)
            let running = ClosureJob { job in
                started.arrive()
                _ = release.wait(seconds: 10)
                sawCancel.value = job.isCancelled
            }
            let runs = Counter()
            let waiting = (0..<5).map { _ in ClosureJob { _ in runs.increment() } }
            try queue.addJob(running)
            #expect(started.wait(for: 1))
            try queue.addJobs(waiting)

            queue.cancelAllJobs()
            #expect(running.isCancelled)
            #expect(waiting.allSatisfy { $0.isCancelled })
            release.open()
            #expect(queue.empties())
            #expect(sawCancel.value == true)
            #expect(runs.count == 0)
            #expect(running.error == nil)
        }

        @Test("a running job that is cancelled keeps running until its code returns")
        func runningJobKeepsRunning() throws {
            let queue = JobQueue(name: "queue")
            let started = Arrivals()
            let release = Gate()
            let log = EventLog()
            let job = ClosureJob { job in
                started.arrive()
                _ = release.wait(seconds: 10)
                log.record("still running, cancelled: \(job.isCancelled)")
            }
            try queue.addJob(job)
            #expect(started.wait(for: 1))
            job.cancel()
            #expect(job.isExecuting)
            #expect(!job.isFinished)
            release.open()
            #expect(queue.empties())
            #expect(log.events == ["still running, cancelled: true"])
        }

        @Test("cancelling a finished job has no effect")
        func cancellingFinishedJobIsNoOp() throws {
            let job = Job()
            try job.start()
            job.cancel()
            #expect(!job.isCancelled)
            #expect(job.cancellationReason == nil)
            #expect(job.isFinished)
        }

        @Test("a dependency added to a cancelled job on its ready list doesn't take it off: the queue still flushes it")
        func dependencyAddedToCancelledReadyJob() {
            let queue = JobQueue(name: "suspended")
            queue.isSuspended = true
            let job = Job()
            #expect(throws: Never.self) { try queue.addJob(job) }
            job.cancel()
            #expect(queue.readyJobCount == 1)
            // Never finishes while the queue runs: only the cancellation lets `job` go.
            let never = Job()
            job.addDependency(never)
            queue.isSuspended = false
            #expect(job.finishes())
            #expect(queue.empties())
            never.cancel()
        }
    }
}
