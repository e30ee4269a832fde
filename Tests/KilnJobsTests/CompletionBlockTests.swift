import KilnJobs
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension JobEngineTests {
    @Suite("Completion blocks")
    struct CompletionBlockTests {
        @Test("the completion block runs exactly once, after main, once the job has finished")
        func runsOnceAfterMain() throws {
            let log = EventLog()
            let queue = JobQueue(name: "queue")
            let job = ClosureJob { _ in log.record("main") }
            job.completionBlock = { log.record("completion finished=\(job.isFinished)") }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(log.events == ["main", "completion finished=true"])
        }

        @Test("the completion block of a job cancelled before it ran runs exactly once, and main never runs")
        func runsOnceAfterCancellation() throws {
            let log = EventLog()
            let queue = JobQueue(name: "queue")
            let job = ClosureJob { _ in log.record("main") }
            job.addDependency(Job())
            job.completionBlock = { log.record("completion finished=\(job.isFinished)") }
            try queue.addJob(job)
            job.cancel()
            job.cancel()
            #expect(queue.empties())
            #expect(log.events == ["completion finished=true"])
        }

        /// A job that is finished but whose completion block hasn't run yet holds back a
        /// dependent added in that window, as it holds back those it had: the block may publish
        /// what a dependent reads (kiln's build records do).
        @Test("a dependent added while the completion block is pending starts only after the block has run")
        func lateDependentWaitsForTheCompletionBlock() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 4)
            let published = Locked(false)
            let sawPublished = Locked<Bool?>(nil)
            let job = ClosureJob { _ in }
            let late = ClosureJob { _ in sawPublished.value = published.value }
            job.completionBlock = {
                // The job reads as finished here, and a new dependent is added to it.
                late.addDependency(job)
                try? queue.addJob(late)
                usleep(100_000)
                published.value = true
            }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(sawPublished.value == true)
        }

        @Test("a dependent added while the completion block is pending is cancelled after it when the job failed")
        func lateDependentOfAFailedJob() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 4)
            let ran = Locked(false)
            let job = ClosureJob { _ in }
            let late = ClosureJob { _ in ran.value = true }
            late.requiresSuccessfulDependencies = true
            job.completionBlock = {
                late.addDependency(job)
                try? queue.addJob(late)
            }
            job.addDependency(Job())
            try queue.addJob(job)
            job.cancel()
            #expect(queue.empties())
            #expect(late.isCancelled)
            #expect(!ran.value)
        }

        @Test("a dependent added and removed while the completion block is pending doesn't wait for it")
        func lateDependentRemoved() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 4)
            let started = Gate()
            let job = ClosureJob { _ in }
            let late = ClosureJob { _ in started.open() }
            job.completionBlock = {
                late.addDependency(job)
                late.removeDependency(job)
                try? queue.addJob(late)
                // It starts while the block still runs.
                #expect(started.wait(seconds: 10))
            }
            try queue.addJob(job)
            #expect(queue.empties())
        }

        @Test("the completion block runs on the thread that finished the job")
        func runsOnFinishingThread() throws {
            let finishingThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let completionThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let done = Gate()
            let job = ManualAsyncJob { job in
                spawnThread {
                    finishingThread.value = ThreadFacts.currentThread
                    try? job.finish()
                }
            }
            job.completionBlock = {
                completionThread.value = ThreadFacts.currentThread
                done.open()
            }
            try job.start()
            #expect(done.wait(seconds: 10))
            #expect(completionThread.value != nil)
            #expect(completionThread.value == finishingThread.value)
        }

        @Test("the completion block runs under no engine lock: it may call back into the engine")
        func mayCallBackIntoEngine() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 1)
            let otherQueue = JobQueue(name: "other")
            let followUpRuns = Counter()
            let observations = Locked<[String]>([])
            let job = ClosureJob("job")
            job.completionBlock = {
                let tooLate = (try? job.setCompletionBlock(nil)) == nil
                observations.value = [
                    "finished=\(job.isFinished)", "name=\(job.name ?? "")", "cancelled=\(job.isCancelled)",
                    "dependencies=\(job.dependencies.count)", "priority=\(job.queuePriority)",
                    "current=\(JobQueue.current === queue)", "jobs=\(queue.jobs.count)",
                    "tooLate=\(tooLate)",
                ]
                job.queuePriority = .high
                queue.addJob { followUpRuns.increment() }
                otherQueue.addJob { followUpRuns.increment() }
            }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(otherQueue.empties())
            #expect(
                observations.value == [
                    "finished=true", "name=job", "cancelled=false", "dependencies=0", "priority=normal",
                    "current=true", "jobs=1", "tooLate=true",
                ]
            )
            #expect(followUpRuns.count == 2)
        }

        @Test("setCompletionBlock throws tooLate once the job is executing")
        func tooLateWhileExecuting() throws {
            let code = Locked<JobError.Code?>(nil)
            let ran = Counter()
            let job = ClosureJob { job in
                code.value = thrownCode { try job.setCompletionBlock { ran.increment() } }
            }
            try job.start()
            #expect(code.value == .tooLate)
            #expect(ran.count == 0)
        }

        @Test("setCompletionBlock throws tooLate once the job has finished")
        func tooLateWhenFinished() throws {
            let job = Job()
            try job.start()
            let error = #expect(throws: JobError.self) { try job.setCompletionBlock {} }
            #expect(error?.code == .tooLate)
            #expect(job.completionBlock == nil)
        }

        @Test("a completion block that captures its job is released once it ran, and the job with it")
        func completionBlockReleasedAfterRunning() throws {
            weak var released: Job?
            do {
                let job = Job()
                released = job
                job.completionBlock = { _ = job.isFinished }
                try job.start()
            }
            #expect(released == nil)
        }
    }
}
