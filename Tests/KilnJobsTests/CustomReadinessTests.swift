import KilnJobs
import KilnTestSupport
import Synchronization
import Testing

extension JobEngineTests {
    @Suite("Custom readiness")
    struct CustomReadinessTests {
        /// A job with a readiness condition of its own, as a subclass adds one.
        final class ConditionJob: Job, @unchecked Sendable {
            // Guarded by its own mutex; the job's other state is the engine's.
            private let condition: LockedValue<Bool>
            let runs = Counter()

            init(_ name: String, condition: Bool = false) {
                self.condition = LockedValue(condition)
                super.init()
                self.name = name
            }

            override var isReady: Bool { super.isReady && condition.withLock { $0 } }

            override func main() throws { runs.increment() }

            /// Changes the condition, then tells the engine.
            func setConditionThenNotify(_ value: Bool) {
                condition.withLock { $0 = value }
                readinessDidChange()
            }

            /// Changes the condition inside `updateReadiness`.
            func updateCondition(_ value: Bool) {
                updateReadiness { condition.withLock { $0 = value } }
            }
        }

        @Test("a job whose own condition is false does not start, and starts right after readinessDidChange()")
        func readinessDidChangeStartsJob() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let job = ConditionJob("gated")
            let sentinel = Job()
            try queue.addJobs([job, sentinel])
            #expect(sentinel.finishes())
            #expect(job.runs.count == 0)
            #expect(!job.isExecuting && !job.isFinished)

            // Nothing else happens in the queue from here on: only the call can start the job.
            job.setConditionThenNotify(true)
            #expect(job.finishes())
            #expect(job.runs.count == 1)
        }

        @Test("updateReadiness() runs the change between isReady notifications, then the queue starts the job")
        func updateReadinessNotifiesAndStarts() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            let job = ConditionJob("gated")
            let log = EventLog()
            let token = job.observe(.isReady) { log.record("\($0.kind) \($0.value)") }
            try queue.addJob(job)
            job.updateCondition(true)
            #expect(job.finishes())
            #expect(job.runs.count == 1)
            #expect(Array(log.events.prefix(2)) == ["willChange false", "didChange true"])
            withExtendedLifetime(token) {}
        }

        @Test("a job whose own condition turns false is taken off the ready list")
        func conditionTurningFalseWithdrawsJob() throws {
            let queue = JobQueue(name: "serial", maxConcurrentJobCount: 1)
            queue.isSuspended = true
            let job = ConditionJob("gated", condition: true)
            try queue.addJob(job)
            job.updateCondition(false)
            let sentinel = Job()
            try queue.addJob(sentinel)
            queue.isSuspended = false
            #expect(sentinel.finishes())
            #expect(job.runs.count == 0)
            #expect(!job.isFinished)

            job.updateCondition(true)
            #expect(job.finishes())
            #expect(job.runs.count == 1)
        }

        @Test("start() by hand refuses a job whose own condition is false")
        func handStartChecksOwnCondition() {
            let job = ConditionJob("gated")
            let error = #expect(throws: JobError.self) { try job.start() }
            #expect(error?.code == .notReady)
            #expect(job.runs.count == 0)
        }

        @Test("a cancelled job is flushed by its queue whatever its own condition says")
        func cancelledJobIgnoresOwnCondition() throws {
            let queue = JobQueue(name: "queue")
            let job = ConditionJob("gated")
            try queue.addJob(job)
            job.cancel()
            #expect(job.finishes())
            #expect(job.runs.count == 0)
            #expect(queue.empties())
        }
    }
}
