import KilnPluginAPI

/// One job's verdict, for `--dry-run`, `kiln status` and `kiln explain`.
///
/// Threading: a value type.
public struct JobVerdict: Sendable {
    /// The job's label (`task` or `task file`).
    public var label: String
    /// Its task.
    public var task: String
    /// What it does (the command after templating).
    public var summary: String
    /// Why it would run, or `.upToDate`.
    public var reason: RunReason
    /// Its remote-cache keys, when asked for.
    public var remoteKeys: RemoteActionKeys.Keys?
}

extension IncrementalState {
    /// Every job of `plan` with the verdict a run would reach now, in plan order, running
    /// nothing and saving nothing.
    ///
    /// A job whose dependency would run can't be judged yet (the dependency's outputs may come
    /// out the same: early cutoff); it is reported as ``RunReason/dependencyRuns(_:)``, as a real
    /// run would schedule it. `each:` tasks list their files as they are now.
    ///
    /// Threading: call from one thread at a time per state.
    ///
    /// With `remoteKeys`, each job also gets its remote-cache keys (``RemoteActionKeys``): its
    /// inputs and outputs are read and hashed with SHA-256.
    public func verdicts(_ plan: BuildPlan, remoteKeys: Bool = false) -> [JobVerdict] {
        var result: [JobVerdict] = []
        var runs = Set<String>()
        var keys = remoteKeys ? RemoteActionKeys(root: plan.taskfile.root) : nil
        for task in plan.tasks {
            let definition = task.definition
            let dependencyNames = definition.dependencies.map(\.value)
            if definition.isGroup {
                // No job: it runs when a dependency does.
                if dependencyNames.contains(where: runs.contains) {
                    runs.insert(definition.name)
                } else {
                    publishGroup(definition.name, dependencies: dependencyNames)
                }
                keys?.finishTask(definition.name, groupOf: dependencyNames)
                continue
            }
            var listed: [VisitedDirectory] = []
            let sources: [String?] = definition.each == .sources ? plan.sourceFiles(of: task, visited: &listed) : [nil]
            let blocking = dependencyNames.first { runs.contains($0) }
            var labels: [String] = []
            var jobKeys: [RemoteActionKeys.Keys] = []
            for source in sources {
                let request = definition.jobRequest(source: source)
                let summary = task.prepared.summary(for: request)
                labels.append(request.label)
                let remote = keys?.keys(for: task, request: request)
                if let remote { jobKeys.append(remote) }
                if let blocking {
                    result.append(JobVerdict(
                        label: request.label, task: definition.name, summary: summary, reason: .dependencyRuns(blocking),
                        remoteKeys: remote
                    ))
                    continue
                }
                let verdict = verdict(of: task, source: source)
                if verdict.reason == .upToDate {
                    upToDate(key: request.label, task: source == nil ? definition.name : nil, check: verdict)
                } else {
                    runs.insert(definition.name)
                }
                result.append(JobVerdict(
                    label: request.label, task: definition.name, summary: summary, reason: verdict.reason, remoteKeys: remote
                ))
            }
            keys?.finishTask(definition.name, jobs: jobKeys)
            if blocking != nil {
                runs.insert(definition.name)
            } else if definition.each == .sources, !runs.contains(definition.name) {
                publishEachTask(definition.name, jobKeys: labels)
            }
        }
        return result
    }
}
