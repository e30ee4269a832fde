import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Dependency cycles")
    struct CycleTests {
        @Test(
            "enqueueing jobs that form a cycle throws dependencyCycle naming its members and enqueues none of the batch"
        )
        func cycleRejectedAtEnqueue() throws {
            let queue = JobQueue(name: "queue")
            let a = Job()
            a.name = "A"
            let b = Job()
            b.name = "B"
            let bystander = Job()
            bystander.name = "bystander"
            a.addDependency(b)
            b.addDependency(a)
            let error = #expect(throws: JobError.self) { try queue.addJobs([bystander, a, b]) }
            #expect(error?.code == .dependencyCycle)
            #expect(Set(error?.jobs ?? []) == ["A", "B"])
            #expect(error?.jobs.first == error?.jobs.last)
            #expect(queue.jobCount == 0)

            // The bystander was left untouched: it can still be enqueued, and runs.
            try queue.addJob(bystander)
            #expect(queue.empties())
            #expect(bystander.isFinished)
        }

        @Test("enqueueing a job that depends on a cycle throws dependencyCycle naming the cycle")
        func jobDependingOnCycleRejected() {
            let queue = JobQueue(name: "queue")
            let a = Job()
            a.name = "A"
            let b = Job()
            b.name = "B"
            let c = Job()
            c.name = "C"
            a.addDependency(b)
            b.addDependency(c)
            c.addDependency(b)
            let error = #expect(throws: JobError.self) { try queue.addJob(a) }
            #expect(error?.code == .dependencyCycle)
            #expect(Set(error?.jobs ?? []) == ["B", "C"])
            #expect(queue.jobCount == 0)
        }

        @Test("a job that depends on itself is a cycle")
        func selfDependencyIsCycle() {
            let queue = JobQueue(name: "queue")
            let job = Job()
            job.name = "loner"
            job.addDependency(job)
            let error = #expect(throws: JobError.self) { try queue.addJob(job) }
            #expect(error?.code == .dependencyCycle)
            #expect(error?.jobs == ["loner", "loner"])
            #expect(queue.jobCount == 0)
        }

        @Test("waiting on a job in a cycle throws dependencyCycle")
        func cycleRejectedAtWait() {
            let a = Job()
            a.name = "A"
            let b = Job()
            b.name = "B"
            a.addDependency(b)
            b.addDependency(a)
            let outcome = runBounded { try a.waitUntilFinished() }
            let error = #expect(throws: JobError.self) { try #require(outcome).get() }
            #expect(error?.code == .dependencyCycle)
            #expect(Set(error?.jobs ?? []) == ["A", "B"])
        }

        @Test(
            "a cycle closed after its jobs were enqueued cancels them with a dependencyCycle reason and error, and waiting on them returns"
        )
        func cycleClosedAfterEnqueueCancelsMembers() throws {
            // A serial queue kept busy, so the cycle's jobs sit on its ready list, unfinished.
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let busy = Arrivals()
            let release = Gate()
            queue.addJob {
                busy.arrive()
                _ = release.wait(seconds: 10)
            }
            #expect(busy.wait(for: 1))

            let runs = Counter()
            let a = ClosureJob("A") { _ in runs.increment() }
            let b = ClosureJob("B") { _ in runs.increment() }
            b.addDependency(a)
            try queue.addJobs([a, b])
            a.addDependency(b)

            for job in [a, b] {
                #expect(job.isCancelled)
                guard case .dependencyCycle(let names) = job.cancellationReason else {
                    Issue.record(
                        "\(job.description) has cancellation reason \(String(describing: job.cancellationReason))"
                    )
                    continue
                }
                #expect(Set(names) == ["A", "B"])
                #expect((job.error as? JobError)?.code == .dependencyCycle)
            }

            // Wait while the jobs are still unfinished behind the busy job; it is released a moment
            // later from another thread. The pause only orders the two threads: the wait must
            // return whenever the release comes.
            spawnThread {
                _ = Gate().wait(seconds: 0.2)
                release.open()
            }
            let waited = runBounded { try a.waitUntilFinished() }
            #expect(throws: Never.self) { try #require(waited).get() }
            #expect(b.finishes())
            #expect(queue.empties())
            #expect(runs.count == 0)
        }

        @Test("a cycle closed through a job that is not yet enqueued is still caught")
        func cycleThroughLaterJobCaught() {
            let queue = JobQueue(name: "queue")
            let holdBack = Job()
            let a = ClosureJob("A")
            let b = ClosureJob("B")
            a.addDependency(holdBack)
            #expect(throws: Never.self) { try queue.addJob(a) }
            a.addDependency(b)
            b.addDependency(a)  // closes A → B → A while A is enqueued

            // Either the new edge cancels the enqueued member at once, or enqueueing B reports it.
            var caught = a.isCancelled
            if !caught {
                do {
                    try queue.addJob(b)
                } catch {
                    caught = error.code == .dependencyCycle
                }
            }
            #expect(caught, "A and B depend on each other and neither can ever start")
            if !caught {
                let waited = runBounded(seconds: 30) { try a.waitUntilFinished() }
                #expect(waited != nil, "waiting on A never returns")
            }

            for job in [a, b, holdBack] { job.cancel() }
            #expect(queue.empties())
        }
    }
}
