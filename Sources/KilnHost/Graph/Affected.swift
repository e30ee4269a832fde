import KilnPaths
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// What a set of changed files affects in a plan: the tasks whose `sources` match one of them
/// (or whose Taskfile changed), every task that depends on those, and for `each:` tasks the
/// files whose jobs must run.
///
/// Threading: a value type.
public struct AffectedTasks: Sendable {
    /// The changed files inside the project, relative to its root, sorted.
    public var changedFiles: [String]
    /// Tasks a changed file touches directly, by name, with the first file that does.
    public var direct: [String: String]
    /// Every affected task — the direct ones and all that depend on them — in plan order.
    public var tasks: [String]
    /// For `each:` tasks affected directly (and not through a dependency), the source files whose
    /// jobs run; such a task's other files are untouched.
    public var eachFiles: [String: Set<String>]
    /// The pieces kiln cut the plan's tasks with calls into (`T #1`): a run needs them, people
    /// see their task (see ``shownTasks``).
    public var pieces: Set<String> = []

    /// ``tasks`` as people know them: without the pieces.
    public var shownTasks: [String] { pieces.isEmpty ? tasks : tasks.filter { !pieces.contains($0) } }

    /// Why `task` is affected, for people.
    public func reason(for task: String) -> String {
        if let file = direct[task] { return "\(file) changed" }
        return "depends on an affected task"
    }
}

extension BuildPlan {
    /// The tasks of the plan that `changedFiles` (absolute paths) affect. `discovered` holds, by
    /// job key, the inputs the build state learnt from depfiles (a C file's headers, relative to
    /// the job's directory): a changed header affects the jobs that included it last time.
    public func affected(by changedFiles: [String], discovered: [JobKey: [String]] = [:]) -> AffectedTasks {
        let root = taskfile.root
        // Kiln's own state (.kiln/, when git doesn't ignore it) is never a task's input.
        let inside = changedFiles.filter {
            Path.isInside($0, root: root) && !Path.isInside($0, root: KilnDirectory(root: root).path)
        }
        let relativeFiles = inside.map { Path.relative($0, to: root) }.sorted()
        let changedTaskfiles = Set(inside.filter { taskfile.files.contains($0) })

        var direct: [String: String] = [:]
        var eachFiles: [String: Set<String>] = [:]
        for task in tasks {
            let definition = task.definition
            if changedTaskfiles.contains(definition.file) {
                direct[definition.name] = Path.lastComponent(definition.file)
                continue
            }
            let patterns = GlobList(definition.renderedSources)
            for file in inside {
                // Sources are relative to the task's directory.
                guard Path.isInside(file, root: definition.directory) else { continue }
                let relative = Path.relative(file, to: definition.directory)
                let matched = patterns.matches(relative)
                // Or a file the job's depfile named last time (an each: job's key names its source).
                var discoveredSource: String?
                if !matched {
                    discoveredSource = discovered.first { key, inputs in
                        key.task == definition.name && inputs.contains(relative)
                    }
                    .map { $0.key.source ?? "" }
                }
                guard matched || discoveredSource != nil else { continue }
                if direct[definition.name] == nil {
                    direct[definition.name] = Path.relative(file, to: root)
                }
                if definition.each == .sources {
                    if let source = discoveredSource, !source.isEmpty {
                        // Every job whose depfile named the file, not just the first.
                        for (key, inputs) in discovered where key.task == definition.name && inputs.contains(relative) {
                            if let source = key.source { eachFiles[definition.name, default: []].insert(source) }
                        }
                    } else if Files.exists(file) {
                        eachFiles[definition.name, default: []].insert(relative)
                    }
                }
            }
        }

        // Every task that depends, directly or not, on a directly affected one.
        var affected = Set<Int>()
        var dependents = [[Int]](repeating: [], count: tasks.count)
        for (position, dependencies) in dependencyPositions.enumerated() {
            for dependency in dependencies { dependents[dependency].append(position) }
        }
        var stack = tasks.indices.filter { direct[tasks[$0].definition.name] != nil }
        while let position = stack.popLast() {
            guard affected.insert(position).inserted else { continue }
            stack += dependents[position]
        }
        // An each: task that is also downstream of an affected task runs every file.
        for (position, task) in tasks.enumerated() where eachFiles[task.definition.name] != nil {
            if dependencyPositions[position].contains(where: affected.contains) {
                eachFiles[task.definition.name] = nil
            }
        }
        var result = AffectedTasks(
            changedFiles: relativeFiles,
            direct: direct,
            tasks: tasks.indices.filter(affected.contains).map { tasks[$0].definition.name },
            eachFiles: eachFiles
        )
        // A piece's task (its last piece, named as the task, which depends on all the others)
        // is affected with it.
        for (member, group) in pieceGroups().pieces where member != group[0] {
            result.pieces.insert(tasks[member].definition.name)
        }
        return result
    }

    /// The positions of the tasks by name, and the pieces kiln cut each task with `- task:`
    /// calls into — `T`, then `T #1`, `T #2`, … (the steps between calls, a deferral's body) —
    /// per position of each of them.
    func pieceGroups() -> (positions: [String: Int], pieces: [Int: [Int]]) {
        var positions: [String: Int] = [:]
        for (position, task) in tasks.enumerated() { positions[task.definition.name] = position }
        var pieces: [Int: [Int]] = [:]
        for (position, task) in tasks.enumerated() where !task.definition.calls.isEmpty {
            let whole = task.definition.partOf ?? task.definition.name
            let group =
                [position]
                + TaskDefinition.pieces(of: task.definition.name) { name in
                    positions[name].flatMap { tasks[$0].definition.partOf == whole ? $0 : nil }
                }
            guard group.count > 1 else { continue }
            for member in group { pieces[member] = group }
        }
        return (positions, pieces)
    }

    /// The plan cut down to `affected`: its tasks only (their unaffected dependencies are taken as
    /// done), and `each:` tasks limited to the files that changed. A task runs whole or not at
    /// all: when one piece of a task with `- task:` calls is affected, all its pieces are kept,
    /// and the tasks they call (a call is part of its caller's work, not a dependency taken as
    /// done).
    public func restricted(to affected: AffectedTasks) -> BuildPlan {
        let (positions, pieces) = pieceGroups()
        var keep = Set(affected.tasks.compactMap { positions[$0] })
        var pending = Array(keep)
        while let position = pending.popLast() {
            let called = tasks[position].definition.calls.compactMap { positions[$0.value] }
            for more in (pieces[position] ?? []) + called where keep.insert(more).inserted { pending.append(more) }
        }
        var newPosition: [Int: Int] = [:]
        var kept: [Task] = []
        for (position, task) in tasks.enumerated() where keep.contains(position) {
            newPosition[position] = kept.count
            kept.append(task)
        }
        let keptPositions = tasks.indices.filter { newPosition[$0] != nil }
        var plan = self
        plan.tasks = kept
        plan.dependencyPositions = keptPositions.map { dependencyPositions[$0].compactMap { newPosition[$0] } }
        plan.eachSourceFilter = affected.eachFiles
        // Which tasks wait to be called, among those kept (positions changed).
        plan.gating = gating.map { _ in
            var named: [String: Int] = [:]
            for (position, task) in kept.enumerated() { named[task.definition.name] = position }
            let roots = targets.compactMap { named[$0] ?? taskfile.aliases[$0].flatMap { named[$0] } }
            return CallGating(tasks: kept.map(\.definition), positions: named, roots: roots)
        }
        return plan
    }
}
