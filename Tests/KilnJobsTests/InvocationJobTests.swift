import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("InvocationJob")
    struct InvocationJobTests {
        struct Failure: Error {}

        final class Calculator: Sendable {
            func answer() -> Int { 42 }
            func double(_ value: Int) -> Int { 2 * value }
            func fail() throws -> Int { throw Failure() }
        }

        @Test("InvocationJob calls the method on its target and keeps the result")
        func callsMethod() throws {
            let job = InvocationJob(target: Calculator(), method: Calculator.answer)
            let queue = JobQueue(name: "queue")
            try queue.addJob(job)
            #expect(job.finishes())
            #expect(try job.result == 42)
        }

        @Test("InvocationJob passes its argument to the method")
        func passesArgument() throws {
            let job = InvocationJob(target: Calculator(), method: Calculator.double, argument: 21)
            try job.start()
            #expect(try job.result == 42)
        }

        @Test("reading the result of a cancelled InvocationJob throws cancelled")
        func cancelledHasNoResult() throws {
            let job = InvocationJob(target: Calculator(), method: Calculator.answer)
            job.cancel()
            #expect(job.isFinished)
            let error = #expect(throws: JobError.self) { try job.result }
            #expect(error?.code == .cancelled)
        }

        @Test("reading the result before the InvocationJob finished throws notFinished")
        func unfinishedHasNoResult() {
            let job = InvocationJob(target: Calculator(), method: Calculator.answer)
            let error = #expect(throws: JobError.self) { try job.result }
            #expect(error?.code == .notFinished)
        }

        @Test("an error thrown by the method is the job's error, and reading the result rethrows it")
        func methodErrorRethrown() throws {
            let job = InvocationJob(target: Calculator(), method: Calculator.fail)
            try job.start()
            #expect(job.isFinished)
            #expect(job.error is Failure)
            #expect(throws: Failure.self) { try job.result }
        }
    }
}
