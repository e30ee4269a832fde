import Dispatch
import KilnPluginAPI
import Synchronization

/// One job's verdict, for `--dry-run`, `kiln status` and `kiln explain`.
///
/// Threading: a value type.
public struct JobVerdict: Sendable {
    /// Which job.
    public var key: JobKey
    /// What it does (the command after templating).
    public var summary: String
    /// Why it would run, or `.upToDate`.
    public var reason: RunReason
    /// Its remote-cache keys, when asked for.
    public var remoteKeys: RemoteActionKeys.Keys?

    /// The job's label (`task` or `task file`).
    public var label: String { key.label }
    /// Its task.
    public var task: String { key.task }
}

extension BuildPlan {
    /// Every job of the plan with the verdict a run would reach now, in plan order (an `each:`
    /// task's jobs in file order), running nothing and saving nothing.
    ///
    /// This is a run: the same ``BuildRun`` scheduler, asking the same
    /// ``IncrementalState/verdict(of:key:request:)`` in the same order, with jobs that run
    /// nothing. A job whose dependency would run can't be judged (the dependency's outputs may
    /// come out the same: early cutoff); it is reported as ``RunReason/dependencyRuns(_:)``.
    /// `each:` tasks list their files as they are now.
    ///
    /// Threading: blocks the calling thread until the dry run is over.
    ///
    /// - Parameters:
    ///   - incremental: A dry run's state (``IncrementalState/isDryRun``).
    ///   - remoteKeys: Also compute each job's remote-cache keys (``RemoteActionKeys``): its
    ///     inputs and outputs are read and hashed with SHA-256.
    public func verdicts(_ incremental: IncrementalState, remoteKeys: Bool = false) -> [JobVerdict] {
        precondition(incremental.isDryRun, "a dry run's verdicts need a dry run's state: it must record nothing")
        var options = RunOptions()
        options.incremental = incremental
        // Nothing fails in a dry run but a task refused as it starts (two jobs, one output): the
        // rest are still judged.
        options.keepGoing = true
        let collector = VerdictCollector()
        let run = BuildRun(
            plan: self,
            queues: ResourceQueues(definitions: taskfile.resources),
            options: options,
            observer: collector
        )
        run.start()
        _ = run.wait()

        var byTask: [String: [(key: JobKey, reason: RunReason)]] = [:]
        for (key, reason) in collector.reasons { byTask[key.task, default: []].append((key, reason)) }
        let keys = remoteKeys ? RemoteActionKeys.all(for: self) : [:]
        var result: [JobVerdict] = []
        for task in tasks where !task.definition.isGroup {
            guard var jobs = byTask[task.definition.name] else { continue }
            jobs.sort { ($0.key.source ?? "") < ($1.key.source ?? "") }
            for (key, reason) in jobs {
                let summary = taskfile.secrets.masking(
                    task.prepared.summary(for: task.definition.jobRequest(source: key.source))
                )
                result.append(JobVerdict(key: key, summary: summary, reason: reason, remoteKeys: keys[key]))
            }
        }
        return result
    }
}

/// Collects each job's verdict as a dry run reaches it.
///
/// Threading: any thread; guarded by its mutex.
private final class VerdictCollector: RunObserver {
    private let table = HostMutex<[JobKey: RunReason]>([:])

    var reasons: [JobKey: RunReason] { table.withLock { $0 } }

    func jobsPlanned(_ count: Int) {}
    func jobStarted(_ job: JobInfo, at time: Double) {}
    func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        // Jobs run nothing here: a failure is one the run makes before a job starts.
        if case .failed(let reason) = outcome { table.withLock { $0[job.key] = .refused(reason) } }
    }
    func jobChecked(_ job: JobInfo, reason: RunReason) {
        table.withLock { $0[job.key] = reason }
    }
    func jobsUpToDate(_ jobs: [JobInfo], planned: Bool, at time: Double) {
        table.withLock { table in
            for job in jobs { table[job.key] = .upToDate }
        }
    }
}

extension RemoteActionKeys {
    /// The remote-cache keys of every job of `plan`, computed in plan order (a job's key takes its
    /// dependencies' output digests); `each:` tasks list their files as they are now.
    static func all(for plan: BuildPlan) -> [JobKey: Keys] {
        var keys = RemoteActionKeys(root: plan.taskfile.root)
        var result: [JobKey: Keys] = [:]
        for task in plan.tasks {
            let definition = task.definition
            if definition.isGroup {
                keys.finishTask(definition.name, groupOf: definition.dependencies.map(\.value))
                continue
            }
            var listed: [VisitedDirectory] = []
            let sources: [String?] = definition.each == .sources ? plan.sourceFiles(of: task, visited: &listed) : [nil]
            var jobs: [Keys] = []
            for source in sources {
                let job = keys.keys(for: task, request: definition.jobRequest(source: source))
                result[JobKey(task: definition.name, source: source)] = job
                jobs.append(job)
            }
            keys.finishTask(definition.name, jobs: jobs)
        }
        return result
    }
}
