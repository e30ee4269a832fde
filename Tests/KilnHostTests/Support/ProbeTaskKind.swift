import Dispatch
import Foundation
import KilnHost
import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Synchronization

/// What probe jobs saw: how many held each resource at once (measured inside the jobs, while they
/// run), how often each job ran, and gates that hold jobs until the test opens them.
///
/// Threading: any thread; guarded by its mutex.
final class ProbeLab: Sendable {
    private struct State {
        var current: [String: Int] = [:]
        var peak: [String: Int] = [:]
        var runs: [String: Int] = [:]
        var gates: [String: Gate] = [:]
        var started: [String: Gate] = [:]
    }
    private let state = HostMutex(State())

    /// Holds the job labelled `label` (once it started) until ``open(_:)``.
    func hold(_ label: String) {
        state.withLock { state in
            state.gates[label] = Gate()
            state.started[label] = Gate()
        }
    }

    /// Lets the held job `label` finish.
    func open(_ label: String) { state.withLock { $0.gates[label] }?.open() }

    /// Waits (at most `seconds`) until the held job `label` is running.
    func waitUntilStarted(_ label: String, seconds: Double) -> Bool {
        state.withLock { $0.started[label] }?.wait(seconds: seconds) ?? false
    }

    func enter(_ label: String, resources: [String]) -> Gate? {
        state.withLock { state in
            state.runs[label, default: 0] += 1
            for resource in resources {
                state.current[resource, default: 0] += 1
                state.peak[resource] = max(state.peak[resource] ?? 0, state.current[resource] ?? 0)
            }
            state.started[label]?.open()
            return state.gates[label]
        }
    }

    func leave(resources: [String]) {
        state.withLock { state in
            for resource in resources { state.current[resource, default: 0] -= 1 }
        }
    }

    /// The most jobs that held each resource at once.
    var peaks: [String: Int] { state.withLock { $0.peak } }
    /// How many times each job label ran.
    var runs: [String: Int] { state.withLock { $0.runs } }
}

/// A task kind for tests: `plugin: probe`, `with: { fail: true }` to fail. Its jobs are
/// asynchronous (they hold their queue slots but no thread, like shell jobs), record themselves in
/// a ``ProbeLab`` while they run, and wait for the lab's gate when the test holds them.
struct ProbeTaskKind: TaskKind {
    let name = "probe"
    let version = "1"
    let lab: ProbeLab

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> Bool {
        try value["fail"]?.requireBool("'fail'") ?? false
    }

    func summary(of configuration: Bool, request: JobRequest) -> String {
        configuration ? "probe (fails)" : "probe"
    }

    func makeJob(configuration: Bool, request: JobRequest, context: TaskContext) throws -> Job {
        ProbeJob(label: request.label, resources: request.resources, fails: configuration, lab: lab)
    }
}

/// The failure of a probe job with `fail: true`.
struct ProbeFailure: Error, CustomStringConvertible {
    var description: String { "probe failed as configured" }
}

/// A probe task's job. `@unchecked Sendable`: its stored properties are immutable.
final class ProbeJob: Job, @unchecked Sendable {
    private let label: String
    private let resources: [String]
    private let fails: Bool
    private let lab: ProbeLab

    init(label: String, resources: [String], fails: Bool, lab: ProbeLab) {
        self.label = label
        self.resources = resources.isEmpty ? ["cpu"] : resources
        self.fails = fails
        self.lab = lab
        super.init()
    }

    override var isAsynchronous: Bool { true }

    override func start() throws(JobError) {
        guard try beginExecution() else { return }
        let gate = lab.enter(label, resources: resources)
        // A thread of its own while it waits, not a Dispatch worker: held probes blocking workers
        // for up to a minute starved the pool the engine and the other tests run on.
        let thread = Thread { [self] in
            // Only a safety net for a gate a test never opens: longer than all of a test's own
            // waits together (a loaded CI machine once took 90 s to reach the open, and the
            // probe's earlier 60 s turned a slow run into a failed job).
            if let gate, !gate.wait(seconds: 300) {
                lab.leave(resources: resources)
                try? finish(error: ProbeFailure())
                return
            }
            lab.leave(resources: resources)
            try? finish(error: fails ? ProbeFailure() : nil)
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
