import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Thread safety")
    struct ThreadSafetyTests {
        /// Touches the engine broadly, as user code called by the engine might: any lock the engine
        /// held around that call would deadlock (or trap) here.
        static func reenter(_ job: Job, queue: JobQueue, spare: JobQueue, askReadiness: Bool = true) -> String {
            let facts = [
                askReadiness && job.isReady, job.isExecuting, job.isFinished, job.isCancelled, job.isAsynchronous,
                job.error == nil, job.completionBlock == nil, job.requiresSuccessfulDependencies,
            ]
            _ = (job.dependencies.count, job.queuePriority, job.threadPriority, job.name, job.description)
            _ = (
                queue.jobs.count, queue.jobCount, queue.runningJobCount, queue.maxConcurrentJobCount, queue.isSuspended
            )
            _ = JobQueue.current?.name
            spare.addJob {}
            return facts.map { $0 ? "1" : "0" }.joined()
        }

        @Test("observers run under no engine lock: a handler may call back into the engine")
        func observersMayReenter() throws {
            let queue = JobQueue(name: "queue")
            let spare = JobQueue(name: "spare")
            let dependency = Job()
            let job = ClosureJob("job")
            let deliveries = Counter()
            let handler: @Sendable (Job) -> Void = { job in
                _ = Self.reenter(job, queue: queue, spare: spare)
                deliveries.increment()
            }
            let tokens = [
                job.observe(.isReady) { handler($0.job) },
                job.observe(.isExecuting) { handler($0.job) },
                job.observe(.isFinished) { handler($0.job) },
                job.observe(.isCancelled) { handler($0.job) },
                job.observe(.dependencies) { handler($0.job) },
                job.observe(.queuePriority) { handler($0.job) },
                job.observe(.completionBlock) { handler($0.job) },
            ]
            let done = runBounded { () throws -> Bool in
                job.addDependency(dependency)
                job.queuePriority = .high
                try job.setCompletionBlock {}
                try queue.addJob(job)
                try dependency.start()
                try job.waitUntilFinished()
                job.cancel()
                return job.isFinished
            }
            #expect(try done?.get() == true)
            #expect(queue.empties())
            #expect(spare.empties())
            #expect(deliveries.count >= 14)
            withExtendedLifetime(tokens) {}
        }

        @Test("isReady overrides run under no engine lock: they may call back into the engine")
        func readinessOverridesMayReenter() throws {
            final class ReenteringJob: Job, @unchecked Sendable {
                let queue: JobQueue
                let spare: JobQueue
                let calls = Counter()
                init(queue: JobQueue, spare: JobQueue) {
                    self.queue = queue
                    self.spare = spare
                    super.init()
                }
                override var isReady: Bool {
                    calls.increment()
                    _ = ThreadSafetyTests.reenter(self, queue: queue, spare: spare, askReadiness: false)
                    return super.isReady && dependencies.allSatisfy { $0.isFinished }
                }
            }
            let queue = JobQueue(name: "queue")
            let spare = JobQueue(name: "spare")
            let handStarted = ReenteringJob(queue: queue, spare: spare)
            handStarted.name = "hand"
            let queued = ReenteringJob(queue: queue, spare: spare)
            queued.name = "queued"
            let dependency = Job()
            queued.addDependency(dependency)
            let token = queued.observe(.isReady) { _ in }
            let done = runBounded { () throws -> Bool in
                try handStarted.start()
                try queue.addJob(queued)
                try dependency.start()
                queued.readinessDidChange()
                try queued.waitUntilFinished()
                return handStarted.isFinished && queued.isFinished
            }
            #expect(try done?.get() == true)
            #expect(queued.calls.count > 0)
            #expect(queue.empties())
            #expect(spare.empties())
            withExtendedLifetime(token) {}
        }

        @Test("a description override runs under no engine lock, even when the engine reports a misuse")
        func descriptionOverrideMayReenter() throws {
            final class DescribedJob: Job, @unchecked Sendable {
                override var description: String { "described (executing: \(isExecuting))" }
            }
            let queue = JobQueue(name: "queue")
            queue.isSuspended = true
            let job = DescribedJob()
            try queue.addJob(job)
            let error = #expect(throws: JobError.self) { try queue.addJob(job) }
            #expect(error?.message.contains("described") == true)
            queue.isSuspended = false
            #expect(queue.empties())
        }

        @Test("an observer may invalidate its own observation from inside its handler")
        func handlerInvalidatesItself() {
            let job = Job()
            let calls = Counter()
            let token = Locked<JobObservation?>(nil)
            token.value = job.observe(.queuePriority) { _ in
                calls.increment()
                token.value?.invalidate()
            }
            let done = runBounded { job.queuePriority = .high }
            #expect(done != nil)
            job.queuePriority = .low
            #expect(calls.count == 1)
            #expect(token.value?.isValid == false)
        }

        @Test(
            "observations added and invalidated on many threads while the job changes never deliver after invalidate() returned"
        )
        func concurrentObservation() {
            let job = Job()
            let late = Counter()
            let delivered = Locked(0)
            let starved = Counter()
            let observerThreads = 4
            let rounds = 200
            let stop = Locked(false)
            let done = Arrivals()
            spawnThread {
                var flip = false
                while !stop.value {
                    job.queuePriority = flip ? .high : .low
                    flip.toggle()
                }
                done.arrive()
            }
            for _ in 0..<observerThreads {
                spawnThread {
                    for _ in 0..<rounds {
                        let ended = Locked(false)
                        let mine = Counter()
                        let token = job.observe(.queuePriority) { _ in
                            mine.increment()
                            if ended.value { late.increment() }
                        }
                        // Invalidate while notifications are flowing, so some are in flight.
                        if !eventually(within: 30, { mine.count >= 2 }) { starved.increment() }
                        token.invalidate()
                        ended.value = true
                        delivered.withLock { $0 += mine.count }
                    }
                    done.arrive()
                }
            }
            #expect(done.wait(for: observerThreads, seconds: 120))
            stop.value = true
            #expect(done.wait(for: 1))
            #expect(late.count == 0)
            #expect(starved.count == 0)
        }
    }
}
