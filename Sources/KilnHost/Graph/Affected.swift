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
        let inside = changedFiles.filter { Path.isInside($0, root: root) && !Path.isInside($0, root: KilnDirectory(root: root).path) }
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
                    discoveredSource = discovered.first { key, inputs in key.task == definition.name && inputs.contains(relative) }
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
            if dependencyPositions[position].contains(where: affected.contains) { eachFiles[task.definition.name] = nil }
        }
        return AffectedTasks(
            changedFiles: relativeFiles, direct: direct,
            tasks: tasks.indices.filter(affected.contains).map { tasks[$0].definition.name }, eachFiles: eachFiles
        )
    }

    /// The plan cut down to `affected`: its tasks only (their unaffected dependencies are taken as
    /// done), and `each:` tasks limited to the files that changed.
    public func restricted(to affected: AffectedTasks) -> BuildPlan {
        let keep = Set(affected.tasks)
        var newPosition: [Int: Int] = [:]
        var kept: [Task] = []
        for (position, task) in tasks.enumerated() where keep.contains(task.definition.name) {
            newPosition[position] = kept.count
            kept.append(task)
        }
        let positions = tasks.indices.filter { newPosition[$0] != nil }
        var plan = self
        plan.tasks = kept
        plan.dependencyPositions = positions.map { dependencyPositions[$0].compactMap { newPosition[$0] } }
        plan.eachSourceFilter = affected.eachFiles
        return plan
    }
}
