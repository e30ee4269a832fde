import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Synchronization
import Testing

@testable import KilnHost

/// How many configurations of a ``CountingTaskKind`` exist, the most that existed at once, and how
/// many times the kind was asked for one.
///
/// Threading: any thread; guarded by its mutex.
final class ConfigurationCounts: Sendable {
    private struct Counts {
        var live = 0
        var peak = 0
        var made = 0
    }
    private let counts = Mutex(Counts())
    /// From this many calls on, the kind refuses what it accepted before (`Int.max`: never).
    let refusingFrom: Int

    init(refusingFrom: Int = .max) { self.refusingFrom = refusingFrom }

    var live: Int { counts.withLock { $0.live } }
    var peak: Int { counts.withLock { $0.peak } }
    var made: Int { counts.withLock { $0.made } }

    /// Counts a call; returns whether the kind accepts it.
    func ask() -> Bool {
        counts.withLock { counts in
            counts.made += 1
            return counts.made <= refusingFrom
        }
    }

    func born() {
        counts.withLock { counts in
            counts.live += 1
            counts.peak = max(counts.peak, counts.live)
        }
    }

    func died() { counts.withLock { $0.live -= 1 } }
}

/// A task kind (`plugin: counting`) whose configurations count themselves while they exist.
struct CountingTaskKind: TaskKind {
    /// A configuration that is counted from its making to its end.
    final class Configuration: Sendable {
        let counts: ConfigurationCounts
        init(_ counts: ConfigurationCounts) {
            self.counts = counts
            counts.born()
        }
        deinit { counts.died() }
    }

    let name = "counting"
    let version = "1"
    let counts: ConfigurationCounts

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        guard counts.ask() else {
            throw TaskConfigurationError("refused on a second look", at: value.location)
        }
        return Configuration(counts)
    }

    func summary(of configuration: Configuration, request: JobRequest) -> String { "counting" }

    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        BlockJob { _ = configuration }
    }
}

/// A plan checks each task's configuration with its kind and keeps none; a run prepares a task
/// again when it makes the task's jobs, so only its live tasks hold one.
@Suite struct PlanPreparationTests {
    private static func taskfile(_ count: Int) -> String {
        var text = "version: '3'\ntasks:\n"
        for index in 0..<count { text += "  t\(index):\n    plugin: counting\n" }
        text += "  default:\n    deps: [\((0..<count).map { "t\($0)" }.joined(separator: ", "))]\n"
        return text
    }

    @Test("the plan checks every configuration and keeps none; a run holds only its live tasks'")
    func thePlanKeepsNoConfiguration() async throws {
        let count = 300
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": Self.taskfile(count)])
        let counts = ConfigurationCounts()
        let registry = try makeRegistry([CountingTaskKind(counts: counts)])
        let plan = try BuildPlanner(taskfile: taskfile, registry: registry).plan(targets: ["default"])
        #expect(counts.made == count, "each task's configuration is checked when the plan is made")
        #expect(counts.live == 0, "the plan holds \(counts.live) configurations")
        #expect(counts.peak == 1)

        var options = RunOptions()
        options.liveTaskWindow = 7
        let (summary, _, _) = try await run(
            taskfile,
            targets: ["default"],
            kinds: [CountingTaskKind(counts: counts)],
            cpuWidth: 2,
            options: options
        )
        withExtendedLifetime(plan) {}
        #expect(summary.succeeded == count && summary.failed == 0)
        // A live task holds its jobs' configurations (one job each here) until they are done.
        #expect(counts.peak <= 2 * 7, "at most \(counts.peak) configurations existed at once")
    }

    @Test("a job's check prepares its task for it: each job's configuration is made once in a run")
    func theCheckHandsItsPreparationToTheJob() async throws {
        let count = 20
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": Self.taskfile(count)])
        let counts = ConfigurationCounts()
        var options = RunOptions()
        options.incremental = IncrementalState(state: nil, root: directory.path)
        let (summary, observer, _) = try await run(
            taskfile,
            targets: ["default"],
            kinds: [CountingTaskKind(counts: counts)],
            options: options
        )
        #expect(summary.succeeded == count)
        #expect(observer.finished.count == count)
        // One for the plan's check, one for the job's (its signature, then the job itself).
        #expect(counts.made == 2 * count)
    }

    @Test("a kind that refuses when the job is made what it accepted when the plan was made fails that job, naming why")
    func aLateRefusalFailsTheJob() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": Self.taskfile(3)])
        // Three for the plan, then refusals.
        let counts = ConfigurationCounts(refusingFrom: 3)
        var options = RunOptions()
        options.keepGoing = true
        let (summary, observer, _) = try await run(
            taskfile,
            targets: ["default"],
            kinds: [CountingTaskKind(counts: counts)],
            options: options
        )
        #expect(summary.failed == 3)
        for finished in observer.finished {
            guard case .failed(let why) = finished.outcome else {
                Issue.record("\(finished.job.label): \(finished.outcome)")
                continue
            }
            #expect(why.contains("refused on a second look"), "\(why)")
        }
    }
}
