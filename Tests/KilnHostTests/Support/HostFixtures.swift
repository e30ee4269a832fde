import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Synchronization
import Testing

@testable import KilnHost

/// One process monitor for every test in the process: each monitor owns a thread for good.
let sharedMonitor = ProcessMonitor()

/// A registry with the built-in shell kind (on ``sharedMonitor``) and `kinds`.
func makeRegistry(_ kinds: [any TaskKind] = []) throws -> TaskKindRegistry {
    let registry = TaskKindRegistry()
    try registry.register(ShellTaskKind(runner: sharedMonitor), origin: "built-in")
    for kind in kinds { try register(kind, in: registry) }
    return registry
}

private func register<Kind: TaskKind>(_ kind: Kind, in registry: TaskKindRegistry) throws {
    try registry.register(kind, origin: "test")
}

/// Writes `files` (relative path → text) into `directory` and loads `Taskfile.yml`.
func loadTaskfile(in directory: TemporaryDirectory, _ files: [String: String]) throws -> Taskfile {
    for (path, text) in files { try directory.write(path, text) }
    return try TaskfileLoader().load(path: directory.path("Taskfile.yml"))
}

/// Writes `files` and loads `Taskfile.yml`, expecting it — or, for a task's own mistakes, which
/// wait for a run to plan the task, a plan of every task — to be rejected; returns the errors.
func loadErrors(in directory: TemporaryDirectory, _ files: [String: String]) throws -> [TaskfileError] {
    try loadOrPlanErrors(in: directory, files)
}

/// Writes `files`, loads `Taskfile.yml` and plans every task, expecting the load or the plan to
/// refuse; returns the errors (an undefined variable is the planner's to report).
func loadOrPlanErrors(in directory: TemporaryDirectory, _ files: [String: String]) throws -> [TaskfileError] {
    for (path, text) in files { try directory.write(path, text) }
    let taskfile: Taskfile
    do {
        taskfile = try TaskfileLoader().load(path: directory.path("Taskfile.yml"))
    } catch {
        return error.errors
    }
    return try planErrors(taskfile, targets: taskfile.tasks.filter { $0.partOf == nil }.map(\.name))
}

/// Plans `targets`, expecting the planner to refuse; returns the errors.
func planErrors(_ taskfile: Taskfile, targets: [String], kinds: [any TaskKind] = []) throws -> [TaskfileError] {
    do {
        let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry(kinds)).plan(targets: targets)
        Issue.record("the plan was accepted: \(plan.tasks.map(\.definition.name))")
        return []
    } catch let error as TaskfileErrors {
        return error.errors
    }
}

/// `file:line:column`.
func at(_ file: String, _ line: Int, _ column: Int) -> KilnPluginAPI.SourceLocation {
    KilnPluginAPI.SourceLocation(file: file, line: line, column: column)
}

/// Everything a run reported, for assertions.
///
/// Threading: any thread; guarded by its mutex.
final class RecordingObserver: RunObserver {
    /// One finished job.
    struct Finished: Sendable {
        var job: JobInfo
        var outcome: JobOutcome
        var output: String
        /// Position in the sequence of all events (starts and finishes).
        var sequence: Int
    }

    private struct State {
        var planned = 0
        var started: [(job: JobInfo, sequence: Int)] = []
        var finished: [Finished] = []
        var sequence = 0
    }
    private let state = HostMutex(State())
    private let whenFinished: @Sendable (JobInfo) -> Void

    /// - Parameter whenFinished: Called on the reporting thread after each finish is recorded.
    init(whenFinished: @escaping @Sendable (JobInfo) -> Void = { _ in }) {
        self.whenFinished = whenFinished
    }

    func jobsPlanned(_ count: Int) { state.withLock { $0.planned += count } }

    func jobStarted(_ job: JobInfo, at time: Double) {
        state.withLock { state in
            state.started.append((job, state.sequence))
            state.sequence += 1
        }
    }

    func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        let text = output.text
        state.withLock { state in
            state.finished.append(Finished(job: job, outcome: outcome, output: text, sequence: state.sequence))
            state.sequence += 1
        }
        whenFinished(job)
    }

    var planned: Int { state.withLock { $0.planned } }
    var started: [(job: JobInfo, sequence: Int)] { state.withLock { $0.started } }
    var finished: [Finished] { state.withLock { $0.finished } }

    /// The finished jobs of `task`.
    func finished(task: String) -> [Finished] { finished.filter { $0.job.task == task } }
}

/// Plans `targets` of `taskfile`, runs them, and waits at most `seconds` for the run to end.
///
/// - Returns: The summary and what the observer saw.
func run(
    _ taskfile: Taskfile,
    targets: [String],
    kinds: [any TaskKind] = [],
    cpuWidth: Int? = nil,
    options: RunOptions = RunOptions(),
    extraObservers: [any RunObserver] = [],
    within seconds: Double = 120
) async throws -> (summary: RunSummary, observer: RecordingObserver, queues: ResourceQueues) {
    let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry(kinds)).plan(targets: targets)
    let queues = ResourceQueues(definitions: taskfile.resources, cpuWidth: cpuWidth)
    let observer = RecordingObserver()
    let buildRun = BuildRun(
        plan: plan,
        queues: queues,
        options: options,
        observer: RunObservers([observer] + extraObservers)
    )
    buildRun.start()
    guard let summary = await waitForResult(within: seconds, { buildRun.wait() }) else {
        // What is still queued, and in what state: where a hang is.
        var waiting: [String] = []
        for (name, queue) in queues.all {
            for job in queue.jobs {
                waiting.append(
                    "\(name): \(job.name ?? "?") ready=\(job.isReady) executing=\(job.isExecuting) cancelled=\(job.isCancelled) finished=\(job.isFinished)"
                )
            }
        }
        let finished = observer.finished.map { "\($0.job.label): \($0.outcome)" } + [buildRun.pendingDescription]
        buildRun.interrupt()
        throw RunTimedOut(
            seconds: seconds,
            finished: observer.finished.count,
            detail: (finished + waiting).joined(separator: "; ")
        )
    }
    return (summary, observer, queues)
}

/// A run that didn't end in time: the test fails instead of hanging.
struct RunTimedOut: Error, CustomStringConvertible {
    var seconds: Double
    var finished: Int
    /// The jobs that finished, and those still queued with their states.
    var detail: String = ""
    var description: String { "the run did not finish within \(seconds) s (\(finished) jobs had finished): \(detail)" }
}
