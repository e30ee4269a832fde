import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Asynchronous jobs")
    struct AsynchronousJobTests {
        @Test("an asynchronous job keeps executing after start() returns and finishes when it calls finish(error:)")
        func finishesOnFinishCall() throws {
            struct Failure: Error {}
            let job = ManualAsyncJob()
            #expect(job.isAsynchronous)
            try job.start()
            #expect(job.isExecuting)
            #expect(!job.isFinished)
            try job.finish(error: Failure())
            #expect(!job.isExecuting)
            #expect(job.isFinished)
            #expect(job.error is Failure)
        }

        @Test(
            "an asynchronous job sends isExecuting will/did as it begins, then both will-changes, the change and both did-changes as it finishes"
        )
        func notificationOrder() throws {
            let log = EventLog()
            let job = ManualAsyncJob { job in
                // The work runs on another thread and finishes the job from there.
                spawnThread { try? job.finish() }
            }
            let tokens = [
                job.observe(.isExecuting) { log.record("isExecuting \($0.kind) \($0.value)") },
                job.observe(.isFinished) { log.record("isFinished \($0.kind) \($0.value)") },
            ]
            let queue = JobQueue(name: "async")
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(
                log.events == [
                    "isExecuting willChange false",
                    "isExecuting didChange true",
                    "isExecuting willChange true",
                    "isFinished willChange false",
                    "isExecuting didChange false",
                    "isFinished didChange true",
                ]
            )
            withExtendedLifetime(tokens) {}
        }

        @Test("an asynchronous job in flight holds no pool thread")
        func inFlightJobHoldsNoThread() throws {
            // More in-flight jobs than the pool has threads, and a synchronous job still runs.
            let inFlightCount = max(8, 4 * JobQueue.defaultMaxConcurrentJobCount)
            let started = Arrivals()
            let asyncQueue = JobQueue(name: "async", maxConcurrentJobCount: inFlightCount)
            let jobs = (0..<inFlightCount).map { _ in ManualAsyncJob { _ in started.arrive() } }
            try asyncQueue.addJobs(jobs)
            #expect(started.wait(for: inFlightCount))
            #expect(jobs.allSatisfy { $0.isExecuting })

            let syncQueue = JobQueue(name: "sync")
            let ran = Gate()
            syncQueue.addJob { ran.open() }
            #expect(ran.wait(seconds: 10))

            for job in jobs { try job.finish() }
            #expect(asyncQueue.empties())
            #expect(syncQueue.empties())
        }

        @Test("an asynchronous job in flight holds a slot of its queue's width until it finishes")
        func inFlightJobCountsAgainstWidth() throws {
            let started = Arrivals()
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let first = ManualAsyncJob("first") { _ in started.arrive() }
            let second = ManualAsyncJob("second") { _ in started.arrive() }
            try queue.addJobs([first, second])
            #expect(started.wait(for: 1))
            #expect(first.isExecuting)

            // Give the scheduler a full round trip on an idle thread: the second job must still wait.
            let other = JobQueue(name: "other")
            other.addJob {}
            #expect(other.empties())
            #expect(!second.isExecuting)
            #expect(queue.runningJobCount == 1)

            try first.finish()
            #expect(started.wait(for: 1))
            #expect(second.isExecuting)
            try second.finish()
            #expect(queue.empties())
        }

        @Test(
            "a start() override that returns without beginExecution() finishes the job with startDidNotBeginExecution"
        )
        func startWithoutBeginExecution() throws {
            final class ForgetfulJob: Job, @unchecked Sendable {
                override var isAsynchronous: Bool { true }
                override func start() throws(JobError) {}
            }
            let job = ForgetfulJob()
            let queue = JobQueue(name: "forgetful")
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(job.isFinished)
            #expect((job.error as? JobError)?.code == .startDidNotBeginExecution)
        }

        @Test("finish(error:) on a job that is not executing throws notExecuting")
        func finishWhenNotExecutingThrows() throws {
            let fresh = ManualAsyncJob()
            let beforeStart = #expect(throws: JobError.self) { try fresh.finish() }
            #expect(beforeStart?.code == .notExecuting)
            #expect(!fresh.isFinished)

            try fresh.start()
            try fresh.finish()
            let afterFinish = #expect(throws: JobError.self) { try fresh.finish() }
            #expect(afterFinish?.code == .notExecuting)
        }

        @Test("beginExecution() returns false for a cancelled job, which has then finished without its work")
        func beginExecutionFalseWhenCancelled() throws {
            let began = Locked<Bool?>(nil)
            final class ProbingJob: Job, @unchecked Sendable {
                let began: Locked<Bool?>
                init(began: Locked<Bool?>) {
                    self.began = began
                    super.init()
                }
                override var isAsynchronous: Bool { true }
                override func start() throws(JobError) {
                    let executing = try beginExecution()
                    began.value = executing
                    if executing { try finish() }
                }
            }
            let job = ProbingJob(began: began)
            let queue = JobQueue(name: "suspended")
            queue.isSuspended = true
            try queue.addJob(job)
            job.cancel()
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(began.value == false)
            #expect(job.isFinished)
            #expect(job.error == nil)
        }
        @Test(
            "finish(error:) called from two threads at once finishes the job once, and the other call throws notExecuting"
        )
        func concurrentFinish() throws {
            let rounds = 2_000
            var outcomes: [[JobError.Code?]] = []
            let completions = Counter()
            for _ in 0..<rounds {
                let job = ManualAsyncJob()
                job.completionBlock = { completions.increment() }
                try job.start()
                let barrier = Barrier(parties: 2)
                let codes = Locked<[JobError.Code?]>([])
                let done = Arrivals()
                for _ in 0..<2 {
                    spawnThread {
                        _ = barrier.arriveAndWait()
                        let code = thrownCode { try job.finish() }
                        codes.withLock { $0.append(code) }
                        done.arrive()
                    }
                }
                #expect(done.wait(for: 2))
                outcomes.append(codes.value)
            }
            #expect(completions.count == rounds)
            let wrongRounds = outcomes.filter { Set($0.map { $0?.description ?? "none" }) != ["none", "notExecuting"] }
            #expect(
                wrongRounds.count == 0,
                "in \(wrongRounds.count) of \(rounds) rounds the two calls ended \(wrongRounds.first ?? [])"
            )
        }
    }
}
