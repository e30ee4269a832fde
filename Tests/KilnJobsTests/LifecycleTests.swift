import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Lifecycle")
    struct LifecycleTests {
        @Test("a fresh job is ready, not executing, not finished, not cancelled and synchronous")
        func freshJobState() {
            let job = Job()
            #expect(job.isReady)
            #expect(!job.isExecuting)
            #expect(!job.isFinished)
            #expect(!job.isCancelled)
            #expect(!job.isAsynchronous)
            #expect(job.error == nil)
            #expect(job.cancellationReason == nil)
        }

        @Test("a job is executing while main runs, and finished and no longer executing after")
        func statesAroundMain() throws {
            let seen = Locked<(executing: Bool, finished: Bool)?>(nil)
            let job = ClosureJob { job in seen.value = (job.isExecuting, job.isFinished) }
            try job.start()
            #expect(seen.value?.executing == true)
            #expect(seen.value?.finished == false)
            #expect(!job.isExecuting)
            #expect(job.isFinished)
        }

        @Test("start() runs a subclass's main once, on the calling thread, then finishes the job")
        func startRunsMainOnCallingThread() throws {
            let runs = Counter()
            let mainThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let job = ClosureJob { _ in
                runs.increment()
                mainThread.value = ThreadFacts.currentThread
            }
            try job.start()
            #expect(runs.count == 1)
            #expect(mainThread.value == ThreadFacts.currentThread)
            #expect(job.isFinished)
            #expect(job.error == nil)
        }

        @Test("an error thrown by main becomes the job's error, and the job still finishes")
        func thrownErrorBecomesJobError() throws {
            struct Failure: Error {}
            let job = ClosureJob { _ in throw Failure() }
            try job.start()
            #expect(job.isFinished)
            #expect(!job.isExecuting)
            #expect(job.error is Failure)
            #expect(!job.isCancelled)
        }

        @Test("start() on a job with an unfinished dependency throws notReady and runs nothing")
        func startNotReadyThrows() {
            let runs = Counter()
            let job = ClosureJob { _ in runs.increment() }
            job.addDependency(Job())
            let error = #expect(throws: JobError.self) { try job.start() }
            #expect(error?.code == .notReady)
            #expect(runs.count == 0)
            #expect(!job.isExecuting)
            #expect(!job.isFinished)
        }

        @Test("a job is single-shot: starting it again throws alreadyFinished and main does not run again")
        func startTwiceThrowsAlreadyFinished() throws {
            let runs = Counter()
            let job = ClosureJob { _ in runs.increment() }
            try job.start()
            let error = #expect(throws: JobError.self) { try job.start() }
            #expect(error?.code == .alreadyFinished)
            #expect(runs.count == 1)
        }

        @Test("start() on an executing job throws alreadyExecuting")
        func startWhileExecutingThrows() throws {
            let code = Locked<JobError.Code?>(nil)
            let job = ClosureJob { job in
                code.value = thrownCode { try job.start() }
            }
            try job.start()
            #expect(code.value == .alreadyExecuting)
            #expect(job.isFinished)
        }

        @Test("start() on a job that a queue owns throws enqueued")
        func startEnqueuedThrows() throws {
            let queue = JobQueue(name: "suspended")
            queue.isSuspended = true
            let runs = Counter()
            let job = ClosureJob { _ in runs.increment() }
            try queue.addJob(job)
            let error = #expect(throws: JobError.self) { try job.start() }
            #expect(error?.code == .enqueued)
            #expect(runs.count == 0)
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(runs.count == 1)
        }

        @Test("start() on a cancelled job finishes it without calling main and without an error")
        func startCancelledJobFinishesWithoutMain() throws {
            let runs = Counter()
            let job = ClosureJob { _ in runs.increment() }
            job.cancel()
            try job.start()
            #expect(job.isFinished)
            #expect(job.isCancelled)
            #expect(job.error == nil)
            #expect(runs.count == 0)
        }
    }
}
