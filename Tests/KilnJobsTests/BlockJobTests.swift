import KilnJobs
import KilnTestSupport
import Testing

extension JobEngineTests {
    @Suite("BlockJob")
    struct BlockJobTests {
        struct Failure: Error {}

        @Test("the blocks of a BlockJob run concurrently")
        func blocksRunConcurrently() throws {
            let barrier = Barrier(parties: 2)
            let met = Counter()
            let job = BlockJob { if barrier.arriveAndWait() { met.increment() } }
            try job.addExecutionBlock { if barrier.arriveAndWait() { met.increment() } }
            let queue = JobQueue(name: "queue")
            try queue.addJob(job)
            #expect(queue.empties(within: 30))
            #expect(met.count == 2)
        }

        @Test("a BlockJob runs each block once and finishes only when all of them have returned")
        func finishesWhenAllBlocksReturn() throws {
            let blockCount = 20
            let runs = Locked([Int](repeating: 0, count: blockCount))
            let job = BlockJob()
            for index in 0..<blockCount {
                try job.addExecutionBlock { runs.withLock { $0[index] += 1 } }
            }
            let queue = JobQueue(name: "queue")
            try queue.addJob(job)
            #expect(job.finishes())
            #expect(runs.value == [Int](repeating: 1, count: blockCount))
            #expect(queue.empties())
        }

        @Test("addExecutionBlock throws tooLate once the job has started")
        func addExecutionBlockTooLate() throws {
            let code = Locked<JobError.Code?>(nil)
            let job = BlockJob()
            try job.addExecutionBlock { code.value = thrownCode { try job.addExecutionBlock {} } }
            try job.start()
            #expect(code.value == .tooLate)
            let afterFinish = #expect(throws: JobError.self) { try job.addExecutionBlock {} }
            #expect(afterFinish?.code == .tooLate)
            #expect(job.executionBlocks.count == 1)
        }

        @Test("an error thrown by a block becomes the job's error, and the other blocks still run")
        func blockErrorBecomesJobError() throws {
            let runs = Counter()
            let job = BlockJob()
            for index in 0..<5 {
                try job.addExecutionBlock {
                    runs.increment()
                    if index == 2 { throw Failure() }
                }
            }
            let queue = JobQueue(name: "queue")
            try queue.addJob(job)
            #expect(queue.empties())
            #expect(job.error is Failure)
            #expect(runs.count == 5)
        }

        @Test("executionBlocks lists the blocks in the order they were added")
        func executionBlocksInOrder() throws {
            let log = EventLog()
            let job = BlockJob { log.record("0") }
            try job.addExecutionBlock { log.record("1") }
            try job.addExecutionBlock { log.record("2") }
            for block in job.executionBlocks { try block() }
            #expect(log.events == ["0", "1", "2"])
        }

        @Test("every block of a BlockJob runs as part of its job: JobQueue.current is the job's queue in each")
        func everyBlockRunsInItsJob() throws {
            let queue = JobQueue(name: "queue")
            let barrier = Barrier(parties: 2)
            let seen = Locked<[Bool]>([])
            let block: @Sendable () -> Void = {
                // The barrier keeps both blocks running at once, so they run on two threads.
                _ = barrier.arriveAndWait()
                let current = JobQueue.current
                seen.withLock { $0.append(current === queue) }
            }
            let job = BlockJob(block: block)
            try job.addExecutionBlock(block)
            try queue.addJob(job)
            #expect(queue.empties(within: 30))
            #expect(seen.value == [true, true])
        }
    }
}
