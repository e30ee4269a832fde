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
    public func verdicts(_ plan: BuildPlan) -> [JobVerdict] {
        var result: [JobVerdict] = []
        var runs = Set<String>()
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
                continue
            }
            let sources: [String?] = definition.each == .sources ? definition.sourceFiles() : [nil]
            let blocking = dependencyNames.first { runs.contains($0) }
            var keys: [String] = []
            for source in sources {
                let request = definition.jobRequest(source: source)
                let summary = task.prepared.summary(for: request)
                keys.append(request.label)
                if let blocking {
                    result.append(JobVerdict(label: request.label, task: definition.name, summary: summary, reason: .dependencyRuns(blocking)))
                    continue
                }
                let verdict = verdict(of: task, source: source)
                if verdict.reason == .upToDate {
                    upToDate(key: request.label, task: source == nil ? definition.name : nil, check: verdict)
                } else {
                    runs.insert(definition.name)
                }
                result.append(JobVerdict(label: request.label, task: definition.name, summary: summary, reason: verdict.reason))
            }
            if blocking != nil {
                runs.insert(definition.name)
            } else if definition.each == .sources, !runs.contains(definition.name) {
                publishEachTask(definition.name, jobKeys: keys)
            }
        }
        return result
    }
}
