import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Dependencies")
    struct DependencyTests {
        /// How a dependency ends.
        enum Outcome: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case succeeded, failed, cancelled
            var testDescription: String { rawValue }
        }

        struct Failure: Error {}

        @Test("addDependency and removeDependency edit dependencies in order, without duplicates")
        func editDependencies() {
            let job = Job()
            let first = Job()
            let second = Job()
            job.addDependency(first)
            job.addDependency(second)
            job.addDependency(first)
            #expect(job.dependencies.count == 2)
            #expect(job.dependencies.first === first)
            #expect(job.dependencies.last === second)
            #expect(!job.isReady)

            job.removeDependency(first)
            #expect(job.dependencies.count == 1)
            #expect(job.dependencies.first === second)
            job.removeDependency(second)
            #expect(job.dependencies.isEmpty)
            #expect(job.isReady)
        }

        @Test(
            "any number of dependencies and dependents: kept in order, removed from any place, let go when the job finishes",
            arguments: [1, 3, 4, 5, 8, 17]
        )
        func manyDependencies(count: Int) throws {
            for removed in 0..<count {
                let queue = JobQueue(name: "queue", maxConcurrentJobCount: 2)
                let runs = Counter()
                let dependencies = (0..<count).map { index in ClosureJob("d\(index)") { _ in } }
                // Each dependency has several dependents too.
                let jobs = (0..<3).map { _ in ClosureJob { _ in runs.increment() } }
                for job in jobs {
                    for dependency in dependencies { job.addDependency(dependency) }
                    job.addDependency(dependencies[0])
                }
                #expect(jobs[0].dependencies.count == count)
                #expect(zip(jobs[0].dependencies, dependencies).allSatisfy { $0 === $1 })
                jobs[0].removeDependency(dependencies[removed])
                var expected = dependencies
                expected.remove(at: removed)
                #expect(jobs[0].dependencies.count == count - 1)
                #expect(zip(jobs[0].dependencies, expected).allSatisfy { $0 === $1 })
                try queue.addJobs(jobs)
                // A removed dependency that never runs holds nothing back.
                let unstarted = dependencies[removed]
                try queue.addJobs(dependencies.filter { $0 !== unstarted })
                #expect(jobs[0].finishes())
                #expect(!jobs[1].isFinished && !jobs[2].isFinished)
                try queue.addJob(unstarted)
                #expect(queue.empties())
                #expect(runs.count == 3)
                #expect(jobs.allSatisfy { $0.dependencies.isEmpty })
            }
        }

        @Test("removing the last unfinished dependency lets a queued job run")
        func removingDependencyReleasesQueuedJob() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let blocker = Job()
            let job = ClosureJob { _ in runs.increment() }
            job.addDependency(blocker)
            try queue.addJob(job)
            job.removeDependency(blocker)
            #expect(queue.empties())
            #expect(runs.count == 1)
        }

        @Test(
            "isAwaited: a job is awaited while a dependent not yet started waits for it alone; readyJobCount counts a queue's ready list"
        )
        func awaitedAndReadyCount() throws {
            let job = Job()
            #expect(!job.isAwaited)
            // A dependent that waits for another job too doesn't count; once that one is done, it does.
            let other = Job()
            let joining = Job()
            joining.addDependency(job)
            joining.addDependency(other)
            #expect(!job.isAwaited)
            #expect(!other.isAwaited)
            let queue = JobQueue(name: "queue", maxConcurrentJobCount: 1)
            queue.isSuspended = true
            try queue.addJob(other)
            #expect(queue.readyJobCount == 1)
            queue.isSuspended = false
            #expect(other.finishes())
            #expect(queue.readyJobCount == 0)
            #expect(job.isAwaited)
            // A dependent that has started (or finished) no longer waits: a cancelled one finishes.
            joining.cancel()
            #expect(!job.isAwaited)
            // A second dependent waiting for it alone.
            let alone = Job()
            alone.addDependency(job)
            #expect(job.isAwaited)
            // The job itself, finished: its dependents start, and it is awaited by none.
            queue.isSuspended = true
            try queue.addJob(job)
            try queue.addJob(alone)
            #expect(queue.readyJobCount == 1)
            queue.isSuspended = false
            #expect(queue.empties())
            #expect(alone.isFinished)
            #expect(!job.isAwaited)
        }

        @Test("a job waits for a dependency in another queue")
        func dependencyAcrossQueues() throws {
            let upstream = JobQueue(name: "upstream")
            upstream.isSuspended = true
            let downstream = JobQueue(name: "downstream", maxConcurrentJobCount: 1)
            let dependency = Job()
            let sawDependencyFinished = Locked<Bool?>(nil)
            let job = ClosureJob { _ in sawDependencyFinished.value = dependency.isFinished }
            job.addDependency(dependency)
            try upstream.addJob(dependency)

            // A job added after `job` to the serial queue runs only once `job` has been passed over.
            let sentinel = Job()
            try downstream.addJobs([job, sentinel])
            #expect(sentinel.finishes())
            #expect(!job.isExecuting && !job.isFinished)
            #expect(sawDependencyFinished.value == nil)

            upstream.isSuspended = false
            #expect(downstream.empties())
            #expect(sawDependencyFinished.value == true)
        }

        @Test("a job becomes ready once every dependency finished, however it finished", arguments: Outcome.allCases)
        func readyAfterDependencyFinishes(outcome: Outcome) throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let other = Job()
            let dependency = ClosureJob { _ in if outcome == .failed { throw Failure() } }
            let job = ClosureJob { _ in runs.increment() }
            job.addDependency(other)
            job.addDependency(dependency)
            try queue.addJob(job)

            try other.start()
            #expect(!job.isReady)
            switch outcome {
            case .succeeded, .failed: try dependency.start()
            case .cancelled: dependency.cancel()
            }
            #expect(dependency.isFinished)
            #expect(queue.empties())
            #expect(runs.count == 1)
            #expect(!job.isCancelled)
        }

        @Test("dependency changes after the job started have no effect")
        func changesAfterStartIgnored() throws {
            let dependency = Job()
            try dependency.start()
            let late = Job()
            let seen = Locked<[Job]>([])
            let job = ClosureJob { job in
                job.addDependency(late)
                job.removeDependency(dependency)
                seen.value = job.dependencies
            }
            job.addDependency(dependency)
            try job.start()
            #expect(seen.value.count == 1)
            #expect(seen.value.first === dependency)
            #expect(job.isFinished)
            #expect(job.error == nil)
        }

        @Test("a finished job lets go of its dependencies")
        func finishedJobReleasesDependencies() throws {
            weak var released: Job?
            let job = Job()
            do {
                let dependency = Job()
                released = dependency
                job.addDependency(dependency)
                try dependency.start()
            }
            #expect(job.dependencies.count == 1)
            try job.start()
            #expect(job.dependencies.isEmpty)
            #expect(released == nil)
        }

        // A job holds its dependents until it lets them go (they are kept uncounted by the type
        // system, so each way out is tested: a leak or a early release would show here).

        /// A weak reference that a `@Sendable` block may set.
        final class WeakJob: @unchecked Sendable {
            weak var job: Job?
        }

        @Test("a finished job lets go of its dependents, and of those added while its completion block ran")
        func finishedJobReleasesDependents() throws {
            let dependent = WeakJob()
            let lateDependent = WeakJob()
            let dependency = Job()
            dependency.completionBlock = { [unowned dependency] in
                let late = Job()
                lateDependent.job = late
                late.addDependency(dependency)
            }
            do {
                let job = Job()
                dependent.job = job
                job.addDependency(dependency)
            }
            // Held by the unfinished dependency alone.
            #expect(dependent.job != nil)
            try dependency.start()
            #expect(dependent.job == nil)
            #expect(lateDependent.job == nil)
        }

        @Test("removeDependency lets go of the dependent")
        func removedDependentIsReleased() {
            weak var dependent: Job?
            let dependency = Job()
            do {
                let job = Job()
                dependent = job
                job.addDependency(dependency)
                job.removeDependency(dependency)
            }
            #expect(dependent == nil)
            #expect(!dependency.isFinished)
        }

        @Test("a dependency that dies unfinished lets go of a dependent that was cancelled and finished")
        func unfinishedDependencyReleasesDependents() throws {
            weak var dependent: Job?
            weak var dependency: Job?
            do {
                let first = Job()
                dependency = first
                let job = Job()
                dependent = job
                job.addDependency(first)
                // Cancelled in no queue, it finishes at once and lets go of `first`, which
                // still holds it.
                job.cancel()
                #expect(job.isFinished)
                #expect(job.dependencies.isEmpty)
            }
            #expect(dependency == nil)
            #expect(dependent == nil)
        }
    }
}
