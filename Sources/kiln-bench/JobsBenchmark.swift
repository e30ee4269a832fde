import Dispatch
import Foundation
import KilnJobs
import Synchronization

/// `kiln-bench jobs`: KilnJobs against Foundation's OperationQueue and Dispatch, one process, one run.
struct JobsBenchmark {
    enum Engine: String, CaseIterable {
        static func named(_ name: String) -> Engine? {
            switch name {
            case "kiln": .kiln
            case "foundation": .foundation
            case "dispatch": .dispatch
            default: nil
            }
        }

        case kiln = "KilnJobs"
        case foundation = "Foundation OperationQueue"
        case dispatch = "DispatchQueue"
    }

    enum Shape: String {
        var shortName: String {
            switch self {
            case .independent: "independent"
            case .chain: "chain"
            case .layered: "layered"
            case .priorities: "priorities"
            }
        }

        case independent = "independent"
        case chain = "chain"
        case layered = "layered DAG (100 wide, 4 deps)"
        case priorities = "5 priorities, width 1"
    }

    /// Foundation is quadratic on dependent work; sizes whose projected time exceeds this are skipped.
    let foundationBudgetSeconds = 20.0
    let quick: Bool
    /// The engines to run (all by default).
    var engines = Engine.allCases
    /// Runs per cell; the table shows the median time (and the highest peak RSS).
    var repeats = 3
    /// The shapes to run, by their short names (all by default).
    var shapes: Set<String> = ["independent", "chain", "layered", "priorities"]

    func run() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("kiln-bench jobs — \(cores) cores, empty job bodies, µs per job = wall time / jobs (lower is better)")
        print(
            "median of \(repeats) runs per cell; peak RSS is the process high-water mark during a run (reset before each)\n"
        )
        var table = Table(headers: ["shape", "jobs", "engine", "µs/job", "total s", "peak RSS MB", "note"])
        let scale = quick ? 10 : 1
        let plan: [(Shape, [Int])] = [
            (.independent, [100_000, 1_000_000].map { $0 / scale }),
            (.chain, [1_000, 10_000, 100_000].map { $0 / scale }),
            (.layered, [10_000, 100_000].map { $0 / scale }),
            (.priorities, [10_000 / scale]),
        ]
        for (shape, sizes) in plan where shapes.contains(shape.shortName) {
            for engine in engines {
                var previous: (jobs: Int, seconds: Double)?
                for jobs in sizes {
                    if engine == .foundation, let previous {
                        // Foundation is linear on independent jobs and quadratic once jobs wait on others.
                        let growth = Double(jobs) / Double(previous.jobs)
                        let projected = previous.seconds * growth * (shape == .independent ? 1 : growth)
                        if projected > foundationBudgetSeconds {
                            table.add([
                                shape.rawValue, "\(jobs)", engine.rawValue, "—", "—", "—",
                                "skipped: projected \(format(projected, digits: 0)) s > \(Int(foundationBudgetSeconds)) s budget",
                            ])
                            continue
                        }
                    }
                    // Foundation's slow cells run once: they are far from the others either way.
                    let runs = engine == .foundation && (previous?.seconds ?? 0) > 1 ? 1 : repeats
                    var samples: [Measurement] = []
                    var note = ""
                    for _ in 0..<runs {
                        let (sample, sampleNote) = runOne(shape, engine: engine, jobs: jobs)
                        samples.append(sample)
                        note = sampleNote
                    }
                    let sorted = samples.map(\.seconds).sorted()
                    let measurement = Measurement(
                        seconds: sorted[sorted.count / 2],
                        peakMegabytes: samples.map(\.peakMegabytes).max() ?? 0
                    )
                    previous = (jobs, measurement.seconds)
                    table.add([
                        shape.rawValue, "\(jobs)", engine.rawValue,
                        format(measurement.seconds * 1e6 / Double(jobs), digits: 3),
                        format(measurement.seconds, digits: 3),
                        format(measurement.peakMegabytes, digits: 0), note,
                    ])
                    FileHandle.standardError.write(Data("  done: \(shape.rawValue) \(jobs) \(engine.rawValue)\n".utf8))
                }
            }
        }
        print(table.render())
        print(
            "\nTargets (2 cores): KilnJobs ≤ 1.0 µs/job independent; ≤ 2 µs/job chain and layered DAG, flat as n grows 10×;"
        )
        print("≤ 500 MB peak RSS for 1M queued jobs.")
    }

    func runOne(_ shape: Shape, engine: Engine, jobs: Int) -> (Measurement, String) {
        switch (shape, engine) {
        case (.independent, .kiln): return (measure { kilnIndependent(jobs) }, "addJobs, then wait")
        case (.independent, .foundation): return (measure { foundationIndependent(jobs) }, "addOperations, wait")
        case (.independent, .dispatch): return (measure { dispatchIndependent(jobs) }, "global().async + group")
        case (.chain, .kiln): return (measure { kilnChain(jobs) }, "")
        case (.chain, .foundation): return (measure { foundationChain(jobs) }, "")
        case (.chain, .dispatch): return (measure { dispatchChain(jobs) }, "each block submits the next")
        case (.layered, .kiln): return (measure { kilnLayered(jobs) }, "")
        case (.layered, .foundation): return (measure { foundationLayered(jobs) }, "")
        case (.layered, .dispatch): return (measure { dispatchLayered(jobs) }, "hand-counted dependencies")
        case (.priorities, .kiln):
            var inversions = 0
            let m = measure { inversions = kilnPriorities(jobs) }
            return (m, "\(inversions) order inversions")
        case (.priorities, .foundation):
            var inversions = 0
            let m = measure { inversions = foundationPriorities(jobs) }
            return (m, "\(inversions) order inversions")
        case (.priorities, .dispatch):
            return (measure { dispatchSerial(jobs) }, "serial queue; has no priorities")
        }
    }

    // MARK: KilnJobs

    func kilnIndependent(_ count: Int) {
        let queue = JobQueue(name: "bench")
        var jobs: [Job] = []
        jobs.reserveCapacity(count)
        for _ in 0..<count { jobs.append(BlockJob {}) }
        try! queue.addJobs(jobs)
        jobs = []
        try! queue.waitUntilAllJobsAreFinished()
    }

    func kilnChain(_ count: Int) {
        let queue = JobQueue(name: "bench")
        var previous: Job?
        var jobs: [Job] = []
        jobs.reserveCapacity(count)
        for _ in 0..<count {
            let job = BlockJob {}
            if let previous { job.addDependency(previous) }
            jobs.append(job)
            previous = job
        }
        previous = nil
        try! queue.addJobs(jobs)
        jobs = []
        try! queue.waitUntilAllJobsAreFinished()
    }

    func kilnLayered(_ count: Int) {
        let queue = JobQueue(name: "bench")
        var jobs: [Job] = []
        jobs.reserveCapacity(count)
        for index in 0..<count {
            let job = BlockJob {}
            let layer = index / 100
            if layer > 0 {
                let base = (layer - 1) * 100
                let position = index % 100
                for offset in [0, 1, 37, 73] { job.addDependency(jobs[base + (position + offset) % 100]) }
            }
            jobs.append(job)
        }
        try! queue.addJobs(jobs)
        jobs = []
        try! queue.waitUntilAllJobsAreFinished()
    }

    func kilnPriorities(_ count: Int) -> Int {
        let queue = JobQueue(name: "bench", maxConcurrentJobCount: 1)
        let levels: [Job.Priority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let order = Mutex<[Int]>([])
        queue.isSuspended = true
        var jobs: [Job] = []
        for index in 0..<count {
            let priority = levels[(index * 7) % 5]
            let job = BlockJob { order.withLock { $0.append(priority.rawValue) } }
            job.queuePriority = priority
            jobs.append(job)
        }
        try! queue.addJobs(jobs)
        queue.isSuspended = false
        try! queue.waitUntilAllJobsAreFinished()
        return inversions(order.withLock { $0 })
    }

    // MARK: Foundation

    func foundationIndependent(_ count: Int) {
        let queue = OperationQueue()
        var operations: [Operation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count { operations.append(BlockOperation {}) }
        queue.addOperations(operations, waitUntilFinished: true)
    }

    func foundationChain(_ count: Int) {
        let queue = OperationQueue()
        var operations: [Operation] = []
        for index in 0..<count {
            let operation = BlockOperation {}
            if index > 0 { operation.addDependency(operations[index - 1]) }
            operations.append(operation)
        }
        queue.addOperations(operations, waitUntilFinished: true)
    }

    func foundationLayered(_ count: Int) {
        let queue = OperationQueue()
        var operations: [Operation] = []
        for index in 0..<count {
            let operation = BlockOperation {}
            let layer = index / 100
            if layer > 0 {
                let base = (layer - 1) * 100
                for offset in [0, 1, 37, 73] {
                    operation.addDependency(operations[base + (index % 100 + offset) % 100])
                }
            }
            operations.append(operation)
        }
        queue.addOperations(operations, waitUntilFinished: true)
    }

    func foundationPriorities(_ count: Int) -> Int {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let levels: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let order = Mutex<[Int]>([])
        for index in 0..<count {
            let priority = levels[(index * 7) % 5]
            let operation = BlockOperation { order.withLock { $0.append(priority.rawValue) } }
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        return inversions(order.withLock { $0 })
    }

    // MARK: Dispatch

    func dispatchIndependent(_ count: Int) {
        let group = DispatchGroup()
        for _ in 0..<count { DispatchQueue.global().async(group: group) {} }
        group.wait()
    }

    func dispatchChain(_ count: Int) {
        let done = DispatchSemaphore(value: 0)
        @Sendable func step(_ remaining: Int) {
            if remaining == 0 {
                done.signal()
            } else {
                DispatchQueue.global().async { step(remaining - 1) }
            }
        }
        step(count)
        done.wait()
    }

    func dispatchLayered(_ count: Int) {
        final class Node: @unchecked Sendable {
            let remaining = Atomic<Int>(0)
            var dependents: [Node] = []
        }
        var nodes: [Node] = []
        for index in 0..<count {
            let node = Node()
            let layer = index / 100
            if layer > 0 {
                let base = (layer - 1) * 100
                for offset in [0, 1, 37, 73] {
                    nodes[base + (index % 100 + offset) % 100].dependents.append(node)
                    node.remaining.add(1, ordering: .relaxed)
                }
            }
            nodes.append(node)
        }
        let group = DispatchGroup()
        @Sendable func run(_ node: Node) {
            for dependent in node.dependents
            where dependent.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                DispatchQueue.global().async(group: group) { run(dependent) }
            }
        }
        for node in nodes where node.remaining.load(ordering: .relaxed) == 0 {
            DispatchQueue.global().async(group: group) { run(node) }
        }
        group.wait()
    }

    func dispatchSerial(_ count: Int) {
        let queue = DispatchQueue(label: "bench")
        let group = DispatchGroup()
        for _ in 0..<count { queue.async(group: group) {} }
        group.wait()
    }

    /// Adjacent pairs that ran a lower priority before a higher one.
    func inversions(_ order: [Int]) -> Int {
        zip(order, order.dropFirst()).filter { $0 < $1 }.count
    }
}
