import KilnJobs
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension JobEngineTests {
    @Suite("JobQueue")
    struct JobQueueTests {
        @Test("a queue has a default name and takes the name it is given")
        func names() {
            let unnamed = JobQueue()
            #expect(unnamed.name.hasPrefix("JobQueue "))
            #expect(unnamed.name != JobQueue().name)
            let named = JobQueue(name: "disk:/dev/sda1")
            #expect(named.name == "disk:/dev/sda1")
            named.name = "network"
            #expect(named.name == "network")
            #expect(named.description == "network")
        }

        @Test("the default width is the number of processors the process may run on")
        func defaultWidth() throws {
            let allowed = try #require(ThreadFacts.allowedProcessorCount())
            #expect(JobQueue.defaultMaxConcurrentJobCount == allowed)
            #expect(JobQueue().maxConcurrentJobCount == allowed)
        }

        @Test("a width below 1 is taken as 1")
        func widthAtLeastOne() {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 0)
            #expect(queue.maxConcurrentJobCount == 1)
            queue.maxConcurrentJobCount = -5
            #expect(queue.maxConcurrentJobCount == 1)
        }

        @Test("a queue of width 1 runs one job at a time")
        func serialQueue() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let probe = ConcurrencyProbe()
            for _ in 0..<50 {
                queue.addJob { probe.inside { for _ in 0..<50 { sched_yield() } } }
            }
            // A bound, not a timing: on a loaded machine each sched_yield may give up a whole
            // time slice, and 2,500 of them took more than 10 s while another build ran.
            #expect(queue.empties(within: 120))
            #expect(probe.peak == 1)
        }

        @Test("a queue runs as many jobs at once as its width, and no more")
        func widthIsReachedNotExceeded() throws {
            let width = min(2, JobQueue.defaultMaxConcurrentJobCount)
            let queue = JobQueue(name: "wide", maxConcurrentJobCount: width)
            let probe = ConcurrencyProbe()
            let started = Arrivals()
            let release = Gate()
            for _ in 0..<(3 * width) {
                queue.addJob {
                    probe.inside {
                        started.arrive()
                        _ = release.wait(seconds: 10)
                    }
                }
            }
            #expect(started.wait(for: width))
            #expect(queue.runningJobCount == width)
            release.open()
            #expect(queue.empties())
            #expect(probe.peak == width)
        }

        @Test("raising the width while jobs are blocked starts more of them at once")
        func raisingWidthAppliesAtOnce() throws {
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 1)
            let started = Arrivals()
            let release = Gate()
            for _ in 0..<2 {
                queue.addJob {
                    started.arrive()
                    _ = release.wait(seconds: 10)
                }
            }
            #expect(started.wait(for: 1))
            let other = JobQueue(name: "other")
            other.addJob {}
            #expect(other.empties())
            #expect(queue.runningJobCount == 1)

            queue.maxConcurrentJobCount = 2
            #expect(started.wait(for: 1))
            #expect(queue.runningJobCount == 2)
            release.open()
            #expect(queue.empties())
        }

        @Test("lowering the width lets running jobs finish and then runs no more than the new width")
        func loweringWidth() throws {
            let width = min(2, JobQueue.defaultMaxConcurrentJobCount)
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: width)
            let started = Arrivals()
            let release = Gate()
            let finishedFirst = Counter()
            for _ in 0..<width {
                queue.addJob {
                    started.arrive()
                    _ = release.wait(seconds: 10)
                    finishedFirst.increment()
                }
            }
            #expect(started.wait(for: width))
            let probe = ConcurrencyProbe()
            for _ in 0..<20 {
                queue.addJob { probe.inside { for _ in 0..<50 { sched_yield() } } }
            }
            queue.maxConcurrentJobCount = 1
            release.open()
            // Only a bound: 1,000 sched_yields one job at a time took over 10 s while a big build
            // ran beside the tests.
            #expect(queue.empties(within: 120))
            #expect(finishedFirst.count == width)
            #expect(probe.peak == 1)
        }

        @Test("addJob, addJobs and addJob(block) all enqueue jobs that the queue runs")
        func addingJobs() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            try queue.addJob(BlockJob { runs.increment() })
            try queue.addJobs([BlockJob { runs.increment() }, BlockJob { runs.increment() }])
            let blockJob = queue.addJob { runs.increment() }
            #expect(queue.empties())
            #expect(runs.count == 4)
            #expect(blockJob.isFinished)
        }

        @Test("a suspended queue starts no new jobs but lets running ones finish; jobs added meanwhile start on resume")
        func suspension() throws {
            let queue = JobQueue(name: "queue")
            let started = Arrivals()
            let release = Gate()
            let running = BlockJob {
                started.arrive()
                _ = release.wait(seconds: 10)
            }
            try queue.addJob(running)
            #expect(started.wait(for: 1))
            queue.isSuspended = true
            #expect(queue.isSuspended)
            let runs = Counter()
            let added = BlockJob { runs.increment() }
            try queue.addJob(added)
            release.open()
            #expect(running.finishes())

            let other = JobQueue(name: "other")
            other.addJob {}
            #expect(other.empties())
            #expect(runs.count == 0)
            #expect(queue.jobCount == 1)

            queue.isSuspended = false
            #expect(queue.empties())
            #expect(runs.count == 1)
        }

        @Test("jobs lists the queue's unfinished jobs in the order they were added, and jobCount counts them")
        func jobsAndJobCount() throws {
            let queue = JobQueue(name: "queue")
            queue.isSuspended = true
            let a = Job()
            let b = Job()
            let c = Job()
            c.addDependency(Job())
            try queue.addJobs([a, b])
            try queue.addJob(c)
            #expect(queue.jobCount == 3)
            #expect(queue.jobs.map(ObjectIdentifier.init) == [a, b, c].map(ObjectIdentifier.init))
            c.cancel()
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(queue.jobs.isEmpty)
        }

        @Test("JobQueue.current is the queue of the job running on this thread, and nil elsewhere")
        func currentQueue() throws {
            let queue = JobQueue(name: "queue")
            let inMain = Locked<JobQueue?>(nil)
            let inCompletion = Locked<JobQueue?>(nil)
            let job = ClosureJob { _ in inMain.value = JobQueue.current }
            job.completionBlock = { inCompletion.value = JobQueue.current }
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(inMain.value === queue)
            #expect(inCompletion.value === queue)
            #expect(JobQueue.current == nil)

            let inHandStarted = Locked<Bool?>(nil)
            try ClosureJob { _ in inHandStarted.value = JobQueue.current == nil }.start()
            #expect(inHandStarted.value == true)
        }

        @Test("a job enters at most one queue, once: adding it again throws alreadyEnqueued")
        func alreadyEnqueued() throws {
            let queue = JobQueue(name: "first")
            let other = JobQueue(name: "second")
            queue.isSuspended = true
            let job = Job()
            try queue.addJob(job)
            let again = #expect(throws: JobError.self) { try queue.addJob(job) }
            #expect(again?.code == .alreadyEnqueued)
            let elsewhere = #expect(throws: JobError.self) { try other.addJob(job) }
            #expect(elsewhere?.code == .alreadyEnqueued)
            #expect(queue.jobCount == 1)
            #expect(other.jobCount == 0)
            queue.isSuspended = false
            #expect(queue.empties())
        }

        @Test("adding a finished job throws alreadyFinished")
        func addFinishedJob() throws {
            let queue = JobQueue(name: "queue")
            let job = Job()
            try job.start()
            let error = #expect(throws: JobError.self) { try queue.addJob(job) }
            #expect(error?.code == .alreadyFinished)
            #expect(queue.jobCount == 0)
        }

        @Test("adding a job that is executing throws alreadyExecuting")
        func addExecutingJob() throws {
            let queue = JobQueue(name: "queue")
            let job = ManualAsyncJob()
            try job.start()
            let error = #expect(throws: JobError.self) { try queue.addJob(job) }
            #expect(error?.code == .alreadyExecuting)
            #expect(queue.jobCount == 0)
            try job.finish()
        }

        @Test("addJobs is all-or-nothing: when one job can't be added, none of the batch is")
        func addJobsAllOrNothing() throws {
            let queue = JobQueue(name: "queue")
            queue.isSuspended = true
            let taken = Job()
            try queue.addJob(taken)
            let fresh = [Job(), Job()]
            let error = #expect(throws: JobError.self) { try queue.addJobs([fresh[0], taken, fresh[1]]) }
            #expect(error?.code == .alreadyEnqueued)
            #expect(queue.jobCount == 1)

            // The rest of the batch was left untouched and can go to another queue.
            let other = JobQueue(name: "other")
            try other.addJobs(fresh)
            #expect(other.empties())
            queue.isSuspended = false
            #expect(queue.empties())
        }
    }
}
