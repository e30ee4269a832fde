import KilnJobs
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension JobEngineTests {
    @Suite("Priority")
    struct PriorityTests {
        @Test(
            "a queue starts its ready jobs highest priority first, and equal priorities in the order they became ready"
        )
        func readyJobsStartByPriority() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            queue.isSuspended = true
            let log = EventLog()
            let plan: [(String, Job.Priority)] = [
                ("low", .low), ("veryHigh 1", .veryHigh), ("normal 1", .normal), ("veryLow", .veryLow),
                ("high", .high), ("normal 2", .normal), ("veryHigh 2", .veryHigh),
            ]
            let jobs = plan.map { name, priority in
                let job = RecordingJob(name, log: log)
                job.queuePriority = priority
                return job
            }
            try queue.addJobs(jobs)
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(log.events == ["veryHigh 1", "veryHigh 2", "high", "normal 1", "normal 2", "low", "veryLow"])
        }

        @Test("a ready low-priority job starts while a high-priority job still waits on a dependency")
        func readinessBeatsPriority() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            queue.isSuspended = true
            let log = EventLog()
            let dependency = Job()
            let high = RecordingJob("high", log: log)
            high.queuePriority = .veryHigh
            high.addDependency(dependency)
            let low = RecordingJob("low", log: log)
            low.queuePriority = .veryLow
            try queue.addJobs([high, low])
            queue.isSuspended = false
            #expect(low.finishes())
            #expect(log.events == ["low"])

            try dependency.start()
            #expect(queue.empties())
            #expect(log.events == ["low", "high"])
        }

        @Test(
            "priorities do not compare across queues: a very low job of one queue is not starved by another's very high jobs"
        )
        func prioritiesStayInTheirQueue() throws {
            // More very high jobs than the pool has threads; each blocks until the other queue's
            // very low job has run. Were priorities global, they would take every thread first.
            let highCount = 2 * JobQueue.defaultMaxConcurrentJobCount
            let busy = JobQueue(name: "busy", maxConcurrentJobCount: highCount)
            let quiet = JobQueue(name: "quiet", maxConcurrentJobCount: 1)
            let lowRan = Gate()
            let starved = Counter()
            let trigger = Job()
            let highs = (0..<highCount).map { _ in
                let job = BlockJob { if !lowRan.wait(seconds: 60) { starved.increment() } }
                job.queuePriority = .veryHigh
                job.addDependency(trigger)
                return job
            }
            let low = BlockJob { lowRan.open() }
            low.queuePriority = .veryLow
            low.addDependency(trigger)
            try busy.addJobs(highs)
            try quiet.addJob(low)

            // Finishing the trigger makes every job ready at once.
            try trigger.start()
            #expect(quiet.empties())
            #expect(busy.empties())
            #expect(starved.count == 0)
        }

        @Test("changing the priority of a job on the ready list reorders it")
        func reprioritizingReorders() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            queue.isSuspended = true
            let log = EventLog()
            let a = RecordingJob("A", log: log)
            let b = RecordingJob("B", log: log)
            let c = RecordingJob("C", log: log)
            try queue.addJobs([a, b, c])
            c.queuePriority = .veryHigh
            a.queuePriority = .veryLow
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(log.events == ["C", "B", "A"])
        }

        @Test("priority raw values round to the nearest of the five levels, halfway values away from normal")
        func rawValuesRoundToLevels() {
            #expect(Job.Priority.veryLow.rawValue == -8)
            #expect(Job.Priority.low.rawValue == -4)
            #expect(Job.Priority.normal.rawValue == 0)
            #expect(Job.Priority.high.rawValue == 4)
            #expect(Job.Priority.veryHigh.rawValue == 8)
            let expected: [Int: Job.Priority] = [
                -100: .veryLow, -9: .veryLow, -8: .veryLow, -7: .veryLow, -6: .veryLow,
                -5: .low, -4: .low, -3: .low, -2: .low,
                -1: .normal, 0: .normal, 1: .normal,
                2: .high, 3: .high, 4: .high, 5: .high,
                6: .veryHigh, 7: .veryHigh, 8: .veryHigh, 9: .veryHigh, 100: .veryHigh,
            ]
            for (raw, level) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(Job.Priority(rawValue: raw) == level, "raw value \(raw)")
            }
            let job = Job()
            job.queuePriority = Job.Priority(rawValue: 3)
            #expect(job.queuePriority == .high)
        }

        @Test(
            "threadPriority sets the nice value of the thread while main runs, and restores it after",
            .enabled(if: ThreadFacts.mayRaisePriority, "restoring a lowered nice value needs CAP_SYS_NICE"),
            arguments: [(0.0, 19), (0.25, 10), (0.75, -10), (1.0, -20)]
        )
        func threadPriorityAppliesDuringMain(priority: Double, expectedNice: Int) throws {
            let before = try #require(ThreadFacts.currentNice())
            let during = Locked<Int?>(nil)
            let job = ClosureJob { _ in during.value = ThreadFacts.currentNice() }
            job.threadPriority = priority
            try job.start()
            #expect(during.value == expectedNice)
            #expect(ThreadFacts.currentNice() == before)
        }

        @Test(
            "threadPriority leaves the thread alone when its nice value could not be restored after main",
            .enabled(if: geteuid() == 0, "the test drops root privileges in a child process")
        )
        func threadPriorityNeedsRestorableNice() async {
            await #expect(processExitsWith: .success) {
                // Without CAP_SYS_NICE (and with RLIMIT_NICE 0) a lowered nice value can't be raised back.
                try #require(setgid(65534) == 0 && setuid(65534) == 0, "dropping root")
                try #require(!ThreadFacts.mayRaisePriority, "CAP_SYS_NICE is still effective")
                let before = try #require(ThreadFacts.currentNice(), "nice value unreadable")
                let during = Locked<Int?>(nil)
                let job = ClosureJob { _ in during.value = ThreadFacts.currentNice() }
                job.threadPriority = 0
                try job.start()
                #expect(during.value == before, "nice value during main, \(before) before it")
                #expect(ThreadFacts.currentNice() == before, "nice not restored")
            }
        }

        @Test("threadPriority defaults to 0.5 and is kept within 0...1")
        func threadPriorityClamped() {
            let job = Job()
            #expect(job.threadPriority == 0.5)
            job.threadPriority = -3
            #expect(job.threadPriority == 0)
            job.threadPriority = 7
            #expect(job.threadPriority == 1)
        }
    }
}
