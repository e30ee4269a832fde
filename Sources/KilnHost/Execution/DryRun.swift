import KilnPaths
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
    public var remoteKeys: RemoteJobKeys?

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
    ///   - remoteKeys: Also compute each job's remote-cache keys (``RemoteJobKeys``) with this
    ///     client: its inputs and outputs are read and hashed with SHA-256.
    public func verdicts(_ incremental: IncrementalState, remoteKeys: (any RemoteClient)? = nil) -> [JobVerdict] {
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
        let keys = remoteKeys.map { RemoteJobKeys.all(for: self, client: $0) } ?? [:]
        var result: [JobVerdict] = []
        for task in tasks where !task.definition.isGroup {
            guard var jobs = byTask[task.definition.name] else { continue }
            jobs.sort { ($0.key.source ?? "") < ($1.key.source ?? "") }
            // Once for the task, not per job (an `each:` task has one per file).
            let prepared = try? task.prepared()
            for (key, reason) in jobs {
                let request = task.definition.jobRequest(source: key.source)
                let summary = taskfile.secrets.masking(prepared?.summary(for: request) ?? task.definition.name)
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

/// A job's remote-cache keys as a look-up would compute them now (``RemoteRecipe``): for
/// `kiln explain --remote-keys`.
///
/// Threading: a value type.
public struct RemoteJobKeys: Sendable {
    /// The Action's digest: what the cache is asked for (`nil` when the job isn't looked up).
    public var action: RemoteDigest?
    /// The Command's digest.
    public var command: RemoteDigest?
    /// The input root's digest.
    public var inputRoot: RemoteDigest?
    /// For a job with a depfile, the discovery action's digest (``RemoteRecipe/RemotePlan``).
    public var discovery: RemoteDigest?
    /// Why the cache is never asked for the job.
    public var notCached: String?
    /// Each declared output, with its content's digest (`nil`: it doesn't exist now).
    public var outputs: [(path: String, digest: RemoteDigest?)] = []

    /// The keys of every job of `plan`, in plan order; `each:` tasks list their files as they are now.
    static func all(for plan: BuildPlan, client: any RemoteClient) -> [JobKey: RemoteJobKeys] {
        var result: [JobKey: RemoteJobKeys] = [:]
        for (position, task) in plan.tasks.enumerated() where !task.definition.isGroup {
            let definition = task.definition
            var listed: [VisitedDirectory] = []
            let sources: [String?] = definition.each == .sources ? plan.sourceFiles(of: task, visited: &listed) : [nil]
            for source in sources {
                let request = definition.jobRequest(source: source)
                var keys = RemoteJobKeys()
                for output in request.outputs where GlobList.isPlainPath(output) {
                    let path = Path.join(request.directory, output)
                    keys.outputs.append((output, Files.exists(path) ? try? client.digest(ofFile: path) : nil))
                }
                switch RemoteRecipe.plan(at: position, request: request, in: plan) {
                case .failure(let refusal):
                    keys.notCached = refusal.description
                case .success(let recipe):
                    do {
                        if let discovery = recipe.discovery { keys.discovery = try client.prepare(discovery).key }
                        if let full = recipe.full(depfileText: recipe.depfileHere) {
                            let action = try client.prepare(full)
                            keys.action = action.key
                            keys.command = action.commandKey
                            keys.inputRoot = action.inputRootKey
                        } else {
                            keys.notCached = "its depfile names a file outside the project"
                        }
                    } catch {
                        keys.notCached = error.message
                    }
                }
                result[JobKey(task: definition.name, source: source)] = keys
            }
        }
        return result
    }
}
