/// Finds dependency cycles, which the NSOperation model leaves stuck forever.
///
/// A depth-first search runs when jobs are enqueued or waited on. Every job it proves free of
/// cycles is marked (`JobState.cycleChecked`) and never searched again, so enqueueing a graph
/// costs O(jobs + edges) in total, not per job. A dependency added later to a marked job is
/// checked on its own edge at once (``checkNewEdge(from:to:)``).
///
/// Threading: stateless; safe from any thread. It takes one job lock at a time.
enum CycleDetector {
    /// Throws if any of `jobs` is in, or depends on, a dependency cycle.
    static func check(_ jobs: [Job]) throws(JobError) {
        for job in jobs { try check(job) }
    }

    private struct Frame {
        let job: Job
        let dependencies: [Job]
        var index = 0
    }

    /// A job to skip — already searched, finished, or cancelled (it waits for nothing: its queue
    /// flushes it) — or its dependencies.
    private static func snapshot(_ job: Job) -> (skip: Bool, dependencies: [Job]) {
        job.state.withLock { state in
            let skip = state.cycleChecked || state.phase == .finished || state.isCancelled
            // A job with no dependency is in no cycle: mark it as a search would, without
            // copying anything out. (A finished or cancelled job stays unmarked, as before.)
            if state.dependencies.isEmpty {
                if !skip { state.cycleChecked = true }
                return (true, [])
            }
            return (skip, state.dependencies)
        }
    }

    private static func markChecked(_ frame: Frame) {
        frame.job.state.withLock { state in
            // A dependency added while we searched was not searched: leave the job unmarked.
            if state.dependencies.count == frame.dependencies.count { state.cycleChecked = true }
        }
    }

    static func check(_ root: Job) throws(JobError) {
        if let cycle = findCycle(from: root) { throw cycleError(cycle) }
    }

    /// Searches `root`'s closure, marking what is free of cycles; returns a cycle if there is one
    /// (its first job repeated at the end).
    static func findCycle(from root: Job) -> [Job]? {
        let (skip, dependencies) = snapshot(root)
        if skip { return nil }
        // The common case: every dependency was already searched (enqueued earlier) or finished.
        if dependencies.allSatisfy({ dependency in
            dependency.state.withLock { $0.cycleChecked || $0.phase == .finished || $0.isCancelled }
        }) {
            markChecked(Frame(job: root, dependencies: dependencies))
            return nil
        }
        var stack = [Frame(job: root, dependencies: dependencies)]
        var onStack: Set<ObjectIdentifier> = [ObjectIdentifier(root)]
        var done: Set<ObjectIdentifier> = []
        while !stack.isEmpty {
            let top = stack.count - 1
            if stack[top].index < stack[top].dependencies.count {
                let next = stack[top].dependencies[stack[top].index]
                stack[top].index += 1
                let id = ObjectIdentifier(next)
                if onStack.contains(id) {
                    let start = stack.firstIndex { $0.job === next } ?? 0
                    return stack[start...].map(\.job) + [next]
                }
                if done.contains(id) { continue }
                let (skip, dependencies) = snapshot(next)
                if skip { continue }
                stack.append(Frame(job: next, dependencies: dependencies))
                onStack.insert(id)
            } else {
                let frame = stack.removeLast()
                let id = ObjectIdentifier(frame.job)
                onStack.remove(id)
                done.insert(id)
                markChecked(frame)
            }
        }
        return nil
    }

    /// A chain of unfinished dependencies leading from `start` to `target` (both included), if any.
    static func dependencyPath(from start: Job, to target: Job) -> [Job]? {
        var stack = [Frame(job: start, dependencies: start.dependencies)]
        var visited: Set<ObjectIdentifier> = [ObjectIdentifier(start)]
        while !stack.isEmpty {
            let top = stack.count - 1
            if stack[top].job === target { return stack.map(\.job) }
            if stack[top].index < stack[top].dependencies.count {
                let next = stack[top].dependencies[stack[top].index]
                stack[top].index += 1
                guard visited.insert(ObjectIdentifier(next)).inserted else { continue }
                // The target counts even when finished: a completion block runs after its job
                // finished but before the job's dependents are released.
                if next === target {
                    stack.append(Frame(job: next, dependencies: []))
                    continue
                }
                let (done, dependencies) = next.state.withLock {
                    ($0.phase == .finished || $0.isCancelled, $0.dependencies)
                }
                if done { continue }
                stack.append(Frame(job: next, dependencies: dependencies))
            } else {
                stack.removeLast()
            }
        }
        return nil
    }

    /// Called after `job` gained the dependency `dependency` while already marked cycle-free.
    /// If that closed a cycle, its jobs are unmarked; if any of them is already in a queue, all of
    /// them are cancelled with a ``JobError`` so nothing waits forever.
    static func checkNewEdge(from job: Job, to dependency: Job) {
        // `job` is searched, so its closure must be: search the new part (the dependency's
        // closure) now. A cycle found there (not through `job`) is handled the same way.
        if let cycle = findCycle(from: dependency) {
            settle(cycle)
            return
        }
        guard let path = dependencyPath(from: dependency, to: job) else { return }
        settle([job] + path)
    }

    /// Deals with a cycle found after some of its jobs may have been enqueued: its jobs are
    /// unmarked; if any is in a queue, all are cancelled with a ``JobError`` so nothing waits forever.
    private static func settle(_ cycle: [Job]) {
        let members = Array(cycle.dropLast())
        var anyEnqueued = false
        for member in members {
            member.state.withLock { state in
                state.cycleChecked = false
                if state.queue != nil { anyEnqueued = true }
            }
        }
        guard anyEnqueued else { return }
        let error = cycleError(cycle)
        for member in members {
            member.cancel(reason: .dependencyCycle(error.jobs), error: error)
        }
    }

    static func cycleError(_ cycle: [Job]) -> JobError {
        let names = cycle.map(\.description)
        return JobError(
            .dependencyCycle,
            "dependency cycle: \(names.joined(separator: " → ")) (each job depends on the next); remove one dependency",
            jobs: names
        )
    }
}
