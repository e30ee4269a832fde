import KilnJobs
import KilnTestSupport
import Synchronization
import Testing

extension JobEngineTests {
    @Suite("Stress")
    struct StressTests {
        struct Failure: Error {}

        /// One randomized run; the seed makes a failure reproducible.
        struct Plan: Sendable, CustomTestStringConvertible {
            var seed: UInt64
            var jobCount: Int
            var queueCount: Int
            var testDescription: String { "seed \(seed), \(jobCount) jobs, \(queueCount) queues" }
        }

        /// A job of a random graph that checks, as it runs, that its dependencies are done.
        final class GraphJob: Job, @unchecked Sendable {
            // Immutable after init, or atomic; the engine state is the engine's.
            let index: Int
            let upstream: [GraphJob]
            let fails: Bool
            let violations: Locked<[String]>
            let runs = Atomic<Int>(0)
            let completions = Atomic<Int>(0)
            let finishNotifications = Atomic<Int>(0)

            init(index: Int, upstream: [GraphJob], fails: Bool, violations: Locked<[String]>) {
                self.index = index
                self.upstream = upstream
                self.fails = fails
                self.violations = violations
                super.init()
            }

            override func main() throws {
                runs.add(1, ordering: .relaxed)
                for dependency in upstream where !dependency.isFinished {
                    report("job \(index) started before its dependency \(dependency.index) finished")
                }
                if requiresSuccessfulDependencies {
                    for dependency in upstream where dependency.isCancelled || dependency.error != nil {
                        report("job \(index) requires success but ran after dependency \(dependency.index) failed")
                    }
                }
                if fails { throw Failure() }
            }

            func report(_ violation: String) {
                violations.withLock { if $0.count < 20 { $0.append(violation) } }
            }
        }

        static let plans = [
            Plan(seed: 0x5EED_0001, jobCount: scaled(10_000), queueCount: 3),
            Plan(seed: 0x5EED_0002, jobCount: scaled(30_000), queueCount: 5),
            Plan(seed: 0x5EED_0003, jobCount: scaled(100_000), queueCount: 4),
        ]

        /// `count`, smaller under ThreadSanitizer.
        static func scaled(_ count: Int) -> Int { Int(Double(count) * ThreadFacts.workScale) }

        @Test(
            "random DAGs across queues: every job finishes once, runs its completion block once, and none starts before its dependencies finished",
            arguments: plans
        )
        func randomGraphs(plan: Plan) throws {
            var random = SeededGenerator(seed: plan.seed)
            let queues = (0..<plan.queueCount).map { index in
                JobQueue(
                    name: "stress \(index)",
                    maxConcurrentJobCount: index == 0 ? 1 : Int.random(in: 1...6, using: &random)
                )
            }
            for queue in queues { queue.isSuspended = true }
            let violations = Locked<[String]>([])
            let priorities: [Job.Priority] = [.veryLow, .low, .normal, .high, .veryHigh]

            var jobs: [GraphJob] = []
            var queueOfJob: [Int] = []
            jobs.reserveCapacity(plan.jobCount)
            var tokens: [JobObservation] = []
            for index in 0..<plan.jobCount {
                var upstream: [GraphJob] = []
                if index > 0 {
                    for _ in 0..<Int.random(in: 0...3, using: &random) {
                        // Mostly near neighbours (long chains), sometimes anywhere earlier.
                        let low = Bool.random(using: &random) ? max(0, index - 50) : 0
                        let candidate = jobs[Int.random(in: low..<index, using: &random)]
                        if !upstream.contains(where: { $0 === candidate }) { upstream.append(candidate) }
                    }
                }
                let job = GraphJob(
                    index: index,
                    upstream: upstream,
                    fails: Int.random(in: 0..<100, using: &random) < 3,
                    violations: violations
                )
                for dependency in upstream { job.addDependency(dependency) }
                job.requiresSuccessfulDependencies = Int.random(in: 0..<4, using: &random) == 0
                job.queuePriority = priorities.randomElement(using: &random)!
                job.completionBlock = { job.completions.add(1, ordering: .relaxed) }
                if index % 97 == 0 {
                    tokens.append(
                        job.observe(.isFinished) { change in
                            if change.kind == .didChange { job.finishNotifications.add(1, ordering: .relaxed) }
                        }
                    )
                }
                jobs.append(job)
                queueOfJob.append(Int.random(in: 0..<plan.queueCount, using: &random))
            }

            // Four threads add the jobs, in a shuffled order and in batches, while the queues are
            // suspended (a job whose dependency failed would otherwise finish before it is added).
            let adderCount = 4
            let order = Array(0..<plan.jobCount).shuffled(using: &random)
            let slices = (0..<adderCount).map { adder in
                stride(from: adder, to: order.count, by: adderCount).map { order[$0] }
            }
            let batchSeeds = (0..<adderCount).map { _ in random.next() }
            let added = Arrivals()
            let addFailures = Locked<[String]>([])
            let allJobs = jobs
            let assignment = queueOfJob
            for adder in 0..<adderCount {
                spawnThread {
                    var local = SeededGenerator(seed: batchSeeds[adder])
                    var pending = slices[adder][...]
                    while !pending.isEmpty {
                        let queueIndex = assignment[pending.first!]
                        let batch = pending.prefix(Int.random(in: 1...64, using: &local)).prefix {
                            assignment[$0] == queueIndex
                        }
                        pending = pending.dropFirst(batch.count)
                        do {
                            try queues[queueIndex].addJobs(batch.map { allJobs[$0] })
                        } catch {
                            addFailures.withLock { $0.append("\(error)") }
                        }
                    }
                    added.arrive()
                }
            }
            // Cancelling starts only once every job is in: a job cancelled before it is added would
            // finish at once and then be refused by its queue.
            try #require(added.wait(for: adderCount, seconds: 60))
            #expect(addFailures.value.isEmpty)
            try #require(queues.map(\.jobCount).reduce(0, +) == plan.jobCount)

            // Resume, and cancel some jobs while the graph runs.
            let cancelled = Array(order.prefix(plan.jobCount / 50))
            for queue in queues { queue.isSuspended = false }
            let cancelling = Gate()
            spawnThread {
                for index in cancelled { allJobs[index].cancel() }
                cancelling.open()
            }
            #expect(cancelling.wait(seconds: 60))
            for queue in queues { #expect(queue.empties(within: 120)) }

            #expect(violations.value.isEmpty)
            var problems: [String] = []
            for job in jobs {
                let runs = job.runs.load(ordering: .relaxed)
                let completions = job.completions.load(ordering: .relaxed)
                if !job.isFinished { problems.append("job \(job.index) never finished") }
                if completions != 1 {
                    problems.append("job \(job.index) ran its completion block \(completions) times")
                }
                if runs > 1 { problems.append("job \(job.index) ran main \(runs) times") }
                if runs == 0, !job.isCancelled {
                    problems.append("job \(job.index) finished without running or being cancelled")
                }
                switch job.cancellationReason {
                case .dependencyFailed, .dependencyCancelled:
                    if runs != 0 { problems.append("job \(job.index) ran although a dependency failed") }
                default: break
                }
                if job.index % 97 == 0, job.finishNotifications.load(ordering: .relaxed) != 1 {
                    problems.append(
                        "job \(job.index) announced finishing \(job.finishNotifications.load(ordering: .relaxed)) times"
                    )
                }
                if problems.count >= 20 { break }
            }
            #expect(problems.isEmpty)
            withExtendedLifetime(tokens) {}
        }

        @Test("jobs added concurrently from several threads each run exactly once")
        func concurrentAdds() {
            let queue = JobQueue(name: "shared", maxConcurrentJobCount: 3)
            let threads = 8
            let perThread = Self.scaled(2_000)
            let runs = Locked([Int](repeating: 0, count: threads * perThread))
            let added = Arrivals()
            for thread in 0..<threads {
                spawnThread {
                    for index in 0..<perThread {
                        let slot = thread * perThread + index
                        queue.addJob { runs.withLock { $0[slot] += 1 } }
                    }
                    added.arrive()
                }
            }
            #expect(added.wait(for: threads, seconds: 60))
            #expect(queue.empties(within: 60))
            #expect(runs.value.allSatisfy { $0 == 1 })
        }

        @Test("cancelling jobs while they run and wait still finishes each exactly once")
        func concurrentCancellation() throws {
            let queues = [JobQueue(name: "a", maxConcurrentJobCount: 2), JobQueue(name: "b", maxConcurrentJobCount: 4)]
            let jobCount = Self.scaled(5_000)
            let completions = Locked([Int](repeating: 0, count: jobCount))
            let runs = Locked([Int](repeating: 0, count: jobCount))
            var random = SeededGenerator(seed: 42)
            var jobs: [ClosureJob] = []
            for index in 0..<jobCount {
                let job = ClosureJob { job in
                    runs.withLock { $0[index] += 1 }
                    // Work that gives up once cancelled.
                    for _ in 0..<200 where job.isCancelled { break }
                }
                if index > 0 { job.addDependency(jobs[Int.random(in: max(0, index - 20)..<index, using: &random)]) }
                job.completionBlock = { completions.withLock { $0[index] += 1 } }
                jobs.append(job)
            }
            let allJobs = jobs
            let victims = Array(0..<jobCount).shuffled(using: &random)
            for (index, job) in jobs.enumerated() { try queues[index % 2].addJob(job) }
            let cancellers = 3
            let done = Arrivals()
            for canceller in 0..<cancellers {
                spawnThread {
                    for index in stride(from: canceller, to: victims.count / 2, by: cancellers) {
                        allJobs[victims[index]].cancel()
                    }
                    done.arrive()
                }
            }
            #expect(done.wait(for: cancellers, seconds: 60))
            for queue in queues { #expect(queue.empties(within: 60)) }
            #expect(completions.value.allSatisfy { $0 == 1 })
            #expect(runs.value.allSatisfy { $0 <= 1 })
            #expect(jobs.allSatisfy { $0.isFinished })
        }

        /// An asynchronous job that counts the calls of its `start()`, the hook a subclass has to
        /// hand a cancellation on (as the host's resource-slot jobs cancel the job they lead to).
        final class StartCounting: Job, @unchecked Sendable {
            let starts: Counter
            init(starts: Counter) {
                self.starts = starts
                super.init()
            }
            override var isAsynchronous: Bool { true }
            override func start() throws(JobError) {
                starts.increment()
                guard try beginExecution() else { return }
                try finish()
            }
        }

        /// How a job in no queue is cancelled, while another thread adds it to a queue.
        enum FreeCancellation: String, CaseIterable, Sendable {
            case requested = "cancel()"
            case failedDependency = "a dependency fails (requiresSuccessfulDependencies)"
            /// cancel() on jobs whose `isFinished` and `isExecuting` are observed.
            case observed = "cancel(), observed"
        }

        @Test(
            "a job cancelled while another thread adds it to a queue: the add fails (it had finished), or the queue calls its start()",
            arguments: FreeCancellation.allCases
        )
        func cancelRacesAdd(how: FreeCancellation) {
            let queue = JobQueue(name: "race", maxConcurrentJobCount: 4)
            let count = Self.scaled(5_000)
            let starts = Counter()
            let jobs = (0..<count).map { _ in StartCounting(starts: starts) }
            // Per job: will-changes minus did-changes of `isFinished` and of `isExecuting`.
            let unpaired = Locked([Int](repeating: 0, count: count * 2))
            var observations: [JobObservation] = []
            if how == .observed {
                for (index, job) in jobs.enumerated() {
                    for (slot, property) in [(0, JobProperty<Bool>.isFinished), (1, .isExecuting)] {
                        observations.append(
                            job.observe(property) { change in
                                unpaired.withLock { $0[index * 2 + slot] += change.kind == .willChange ? 1 : -1 }
                            }
                        )
                    }
                }
            }
            let dependencies = (0..<count).map { _ in ClosureJob { _ in throw Failure() } }
            if how == .failedDependency {
                for (job, dependency) in zip(jobs, dependencies) {
                    job.requiresSuccessfulDependencies = true
                    job.addDependency(dependency)
                }
            }
            // Lockstep: both threads reach job i before either acts on it, so the two meet often.
            final class Lockstep: Sendable {
                let first = Atomic<Int>(-1)
                let second = Atomic<Int>(-1)
            }
            let reached = Lockstep()
            let added = Counter()
            let done = Arrivals()
            spawnThread {
                for index in 0..<count {
                    reached.first.store(index, ordering: .releasing)
                    while reached.second.load(ordering: .acquiring) < index {}
                    switch how {
                    case .requested, .observed: jobs[index].cancel()
                    case .failedDependency: try? dependencies[index].start()
                    }
                }
                done.arrive()
            }
            spawnThread {
                for index in 0..<count {
                    reached.second.store(index, ordering: .releasing)
                    while reached.first.load(ordering: .acquiring) < index {}
                    if (try? queue.addJob(jobs[index])) != nil { added.increment() }
                }
                done.arrive()
            }
            #expect(done.wait(for: 2, seconds: 120))
            #expect(queue.empties(within: 60))
            // (A job cancelled with cancel() may have run before it: the add won by far.)
            #expect(jobs.allSatisfy { $0.isFinished && ($0.isCancelled || how != .failedDependency) })
            // Each announced change was closed, also where the cancellation found the job taken.
            #expect(unpaired.value.allSatisfy { $0 == 0 })
            for observation in observations { observation.invalidate() }
            // A job the queue took must be started by it: finishing it behind the queue's back
            // skips the start() a subclass relies on.
            #expect(starts.count == added.count)
        }

        @Test("many threads waiting on the same jobs are all released")
        func concurrentWaiters() throws {
            let queue = JobQueue(name: "queue")
            let release = Gate()
            let job = BlockJob { _ = release.wait(seconds: 10) }
            try queue.addJob(job)
            let waiterCount = 16
            let returned = Arrivals()
            for _ in 0..<waiterCount {
                spawnThread {
                    try? job.waitUntilFinished()
                    try? queue.waitUntilAllJobsAreFinished()
                    returned.arrive()
                }
            }
            release.open()
            #expect(returned.wait(for: waiterCount))
            #expect(job.isFinished)
        }
    }
}
