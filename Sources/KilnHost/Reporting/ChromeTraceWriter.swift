import KilnPluginAPI
import Synchronization

/// `--trace FILE`: the run as a Chrome Trace Event file (opens in Perfetto or chrome://tracing).
/// Each resource queue is a process in the trace, with one track per slot of its width, so the
/// picture shows where the time went and which queue was the bottleneck. A job holding several
/// resources appears on each of their tracks.
///
/// Threading: any thread; events are collected under a mutex and written by ``write(to:)``.
public final class ChromeTraceWriter: RunObserver {
    private struct State {
        var queueIDs: [String: Int] = [:]
        /// Busy lanes per queue.
        var lanes: [String: [Bool]] = [:]
        var open: [Int: (start: Double, placements: [(queue: String, lane: Int)])] = [:]
        var events: [JSONValue] = []
    }
    private let state = HostMutex(State())

    /// Creates an empty trace.
    public init() {}

    /// Nothing to record.
    public func jobsPlanned(_ count: Int) {}

    /// Takes the lowest free lane of each queue the job holds.
    public func jobStarted(_ job: JobInfo, at time: Double) {
        state.withLock { state in
            var placements: [(String, Int)] = []
            for queue in job.resources {
                var lanes = state.lanes[queue] ?? []
                let lane = lanes.firstIndex(of: false) ?? lanes.count
                if lane == lanes.count { lanes.append(true) } else { lanes[lane] = true }
                state.lanes[queue] = lanes
                placements.append((queue, lane))
            }
            state.open[job.id] = (time, placements)
        }
    }

    /// Records a complete event per queue the job held.
    public func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        state.withLock { state in
            guard let open = state.open.removeValue(forKey: job.id) else { return }
            let status: String
            switch outcome {
            case .succeeded: status = "succeeded"
            case .failed: status = "failed"
            case .cancelled: status = "cancelled"
            case .upToDate: status = "up to date"
            case .remoteHit: status = "remote hit"
            }
            for (queue, lane) in open.placements {
                state.lanes[queue]?[lane] = false
                let pid = processID(for: queue, in: &state)
                state.events.append(
                    .object([
                        ("name", .string(job.label)), ("cat", .string(job.task)), ("ph", "X"), ("pid", .integer(pid)),
                        ("tid", .integer(lane + 1)), ("ts", .integer(Int(open.start * 1e6))),
                        ("dur", .integer(max(1, Int((time - open.start) * 1e6)))),
                        ("args", .object([("command", .string(job.summary)), ("status", .string(status))])),
                    ])
                )
            }
        }
    }

    private func processID(for queue: String, in state: inout State) -> Int {
        if let id = state.queueIDs[queue] { return id }
        let id = state.queueIDs.count + 1
        state.queueIDs[queue] = id
        state.events.append(
            .object([
                ("name", "process_name"), ("ph", "M"), ("pid", .integer(id)),
                ("args", .object([("name", .string("queue \(queue)"))])),
            ])
        )
        state.events.append(
            .object([
                ("name", "process_sort_index"), ("ph", "M"), ("pid", .integer(id)),
                ("args", .object([("sort_index", .integer(id))])),
            ])
        )
        return id
    }

    /// Writes the trace file.
    ///
    /// - Throws: The file system's error.
    public func write(to path: String) throws {
        let document = state.withLock { state -> JSONValue in
            var events = state.events
            for (queue, lanes) in state.lanes.sorted(by: { $0.key < $1.key }) {
                guard let pid = state.queueIDs[queue] else { continue }
                for lane in lanes.indices {
                    events.append(
                        .object([
                            ("name", "thread_name"), ("ph", "M"), ("pid", .integer(pid)), ("tid", .integer(lane + 1)),
                            ("args", .object([("name", .string("\(queue) slot \(lane + 1)"))])),
                        ])
                    )
                }
            }
            return .object([("traceEvents", .array(events)), ("displayTimeUnit", "ms")])
        }
        try System.writeFile(path, contents: document.serialized())
    }
}
