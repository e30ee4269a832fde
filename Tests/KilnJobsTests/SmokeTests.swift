import KilnJobs
import KilnTestSupport
import Testing

@Test func smoke() throws {
    let queue = JobQueue(name: "smoke")
    let counter = Counter()
    let a = BlockJob { counter.increment() }
    let b = BlockJob { counter.increment() }
    b.addDependency(a)
    try queue.addJobs([b, a], waitUntilFinished: true)
    #expect(counter.count == 2)
    try queue.waitUntilAllJobsAreFinished()
    #expect(queue.jobCount == 0)
}
