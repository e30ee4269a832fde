import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("Requiring successful dependencies")
    struct SuccessfulDependencyTests {
        struct Failure: Error {}

        @Test("a dependency that fails cancels a job requiring success before it runs, naming that dependency")
        func failedDependencyCancelsJob() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let succeeding = Job()
            let failing = ClosureJob("failing") { _ in throw Failure() }
            let job = ClosureJob { _ in runs.increment() }
            job.requiresSuccessfulDependencies = true
            job.addDependency(succeeding)
            job.addDependency(failing)
            try queue.addJobs([succeeding, failing, job])
            #expect(queue.empties())
            #expect(runs.count == 0)
            #expect(job.isCancelled)
            #expect(job.isFinished)
            guard case .dependencyFailed(let culprit) = job.cancellationReason else {
                Issue.record("reason: \(String(describing: job.cancellationReason))")
                return
            }
            #expect(culprit === failing)
        }

        @Test("a dependency that is cancelled cancels a job requiring success before it runs, naming that dependency")
        func cancelledDependencyCancelsJob() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let cancelled = Job()
            let job = ClosureJob { _ in runs.increment() }
            job.requiresSuccessfulDependencies = true
            job.addDependency(cancelled)
            try queue.addJob(job)
            cancelled.cancel()
            #expect(queue.empties())
            #expect(runs.count == 0)
            #expect(job.isCancelled)
            guard case .dependencyCancelled(let culprit) = job.cancellationReason else {
                Issue.record("reason: \(String(describing: job.cancellationReason))")
                return
            }
            #expect(culprit === cancelled)
        }

        @Test("requiring successful dependencies is off by default: a job runs after a failed dependency")
        func offByDefault() throws {
            let queue = JobQueue(name: "queue")
            let runs = Counter()
            let failing = ClosureJob { _ in throw Failure() }
            let job = ClosureJob { _ in runs.increment() }
            #expect(!job.requiresSuccessfulDependencies)
            job.addDependency(failing)
            try queue.addJobs([failing, job])
            #expect(queue.empties())
            #expect(failing.error is Failure)
            #expect(runs.count == 1)
            #expect(!job.isCancelled)
        }
    }
}
