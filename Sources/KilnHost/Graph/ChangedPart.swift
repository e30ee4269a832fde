import KilnPaths

/// The part of a plan a run needs after a small change, when the last complete run's snapshot
/// vouches for the rest: the tasks whose jobs watch a path that changed, those the snapshot can't
/// vouch for, and every task that depends on one of them. The others are up to date on the
/// snapshot's word, as a whole run would find each of them (``IncrementalState``'s snapshot
/// verdict: its job is in the snapshot, none of its paths changed, and every dependency
/// publishes what it published then — true of each of them, since none depends on a kept task).
///
/// The planner leaves them out before it checks or prepares them (the last complete run planned
/// the same targets of the same Taskfiles, loaded in the same context, and found them sound);
/// the run creates no job for them: they publish what they published then and keep their
/// snapshot entries (``IncrementalState/carryUnchanged(_:keptNames:)``), and are reported up to date (but
/// groups, which make no job and are never counted).
///
/// Threading: a value type.
public struct ChangedPart: Sendable {
    /// For each task of the whole plan, in its order, whether the run takes it.
    public var kept: [Bool]
    /// The names of the tasks left out that have a job, up to date on the snapshot's word, in
    /// plan order.
    public var unchanged: [String]
    /// Their jobs' positions in the snapshot, in the same order.
    public var snapshotJobs: [Int]
    /// The groups left out (tasks that only gather their dependencies: no job, nothing counted),
    /// which publish what they published then.
    public var unchangedGroups: [String]

    /// The part of the plan of the tasks of `outline` (every task of the plan, dependencies first,
    /// with the positions of each one's dependencies) that a run after the changes `scan` found needs,
    /// or `nil` when the run must take the whole plan: the snapshot isn't complete, a changed
    /// path is no job's (a directory an `each:` task listed, a plugin), the plan has tasks whose
    /// verdict or order the snapshot doesn't cover alone — `each:` tasks, calls and their
    /// pieces, `prompt:`s (all asked before a run), a watch — or the part is most of the plan
    /// anyway.
    ///
    /// **The one rule** for leaving tasks out of a run on the snapshot's word.
    ///
    /// - Parameter watches: Whether a target says `watch: true`.
    static func of(
        _ outline: TaskOutline,
        order: [Int],
        dependencyPositions: [[Int]],
        watches: Bool,
        after scan: UpToDateSnapshot.Scan
    ) -> ChangedPart? {
        let snapshot = scan.snapshot
        guard snapshot.complete, scan.unownedChanges == 0, !watches else { return nil }
        var kept = [Bool](repeating: false, count: order.count)
        // A left-out task's job in the snapshot; -2 for a group (no job: it publishes what its
        // dependencies did, the same as then when none of them is kept).
        var jobs = [Int](repeating: -1, count: order.count)
        // Read from the outline: no definition is decoded for a task left out.
        let covered: TaskOutline.Flags = [.each, .calls, .partOf, .guarded, .prompts]
        for (position, index) in order.enumerated() {
            let flags = outline.flags[index]
            guard flags.isDisjoint(with: covered) else { return nil }
            let name = outline.names[index]
            if flags.contains(.isGroup) {
                jobs[position] = -2
            } else if !flags.contains(.hasStatusChecks), flags.contains(.runsHere), let job = scan.jobPositions[name] {
                // A job the snapshot has; no `status:` (its tests read what no snapshot covers).
                jobs[position] = job
            }
            // Its job (or group) watches nothing that changed, and it published a signature.
            // (A group has no job, so none of its is dirty.)
            let job = jobs[position]
            let vouched = job != -1 && (job == -2 || !scan.dirtyAtPosition[job]) && snapshot.published[name] != nil
            // A task depending on a kept one is kept: what its dependency publishes may change.
            if !vouched || dependencyPositions[position].contains(where: { kept[$0] }) { kept[position] = true }
        }
        let keptCount = kept.lazy.filter { $0 }.count
        // Worth it only when most of the plan is left out.
        guard keptCount * 2 <= order.count else { return nil }
        var part = ChangedPart(kept: kept, unchanged: [], snapshotJobs: [], unchangedGroups: [])
        part.unchanged.reserveCapacity(order.count - keptCount)
        part.snapshotJobs.reserveCapacity(order.count - keptCount)
        for (position, index) in order.enumerated() where !kept[position] {
            if jobs[position] == -2 {
                part.unchangedGroups.append(outline.names[index])
            } else {
                part.unchanged.append(outline.names[index])
                part.snapshotJobs.append(jobs[position])
            }
        }
        return part
    }
}
