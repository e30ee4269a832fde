import KilnPaths
import KilnPluginAPI

/// The tasks a run needs — the ones asked for and everything they depend on, nothing else — in
/// dependency order, each bound to its task kind.
///
/// Threading: a value type; safe to pass between threads.
public struct BuildPlan: Sendable {
    /// A task of the plan.
    public struct Task: Sendable {
        /// Its definition.
        public var definition: TaskDefinition
        /// Its kind, holding the validated configuration.
        public var prepared: PreparedTask
    }

    /// The loaded Taskfile.
    public var taskfile: Taskfile
    /// The selected tasks, dependencies before dependents.
    public var tasks: [Task]
    /// The names asked for (after defaulting).
    public var targets: [String]
    /// For each task, the positions in ``tasks`` of its dependencies (all earlier).
    public var dependencyPositions: [[Int]]
    /// For `each:` tasks, by name, the only source files whose jobs run (`kiln run --affected`);
    /// a task not named here runs all of its files.
    public var eachSourceFilter: [String: Set<String>] = [:]

    /// The files an `each:` task's jobs are for now: its sources, limited by ``eachSourceFilter``.
    func sourceFiles(of task: Task, visited: inout [VisitedDirectory]) -> [String] {
        let files = task.definition.sourceFiles(visited: &visited)
        guard let filter = eachSourceFilter[task.definition.name] else { return files }
        return files.filter(filter.contains)
    }
}

/// Turns a ``Taskfile`` and the names on the command line into a ``BuildPlan``.
///
/// Threading: a value type; `plan` may run on any thread.
public struct BuildPlanner: Sendable {
    private let taskfile: Taskfile
    private let registry: TaskKindRegistry

    /// Creates a planner.
    public init(taskfile: Taskfile, registry: TaskKindRegistry) {
        self.taskfile = taskfile
        self.registry = registry
    }

    /// Plans a run of `targets` (the `default` task when empty).
    ///
    /// - Throws: ``TaskfileErrors``: an unknown task name, an unknown task kind, a configuration
    ///   its kind rejected, or a task that writes outside the project root.
    public func plan(targets requested: [String]) throws(TaskfileErrors) -> BuildPlan {
        var errors: [TaskfileError] = []
        var targets = requested
        if targets.isEmpty {
            guard taskfile.task(named: "default") != nil else {
                let names = taskfile.tasks.map(\.name).joined(separator: ", ")
                throw TaskfileErrors(errors: [
                    TaskfileError(.unknownTask, "no task given and no 'default' task; name one of: \(names)", at: nil)
                ])
            }
            targets = ["default"]
        }
        let index = Dictionary(taskfile.tasks.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        var order: [Int] = []
        var visited = Set<Int>()
        func visit(_ position: Int) {
            guard visited.insert(position).inserted else { return }
            for dependency in taskfile.tasks[position].dependencies {
                if let next = index[dependency.value] { visit(next) }
            }
            order.append(position)
        }
        for name in targets {
            if let position = index[name] {
                visit(position)
            } else {
                var message = "no task named '\(name)' in \(taskfile.path)"
                if let close = suggestion(for: name, among: index.keys) { message += "; did you mean '\(close)'?" }
                errors.append(TaskfileError(.unknownTask, message, at: nil))
            }
        }
        var tasks: [BuildPlan.Task] = []
        tasks.reserveCapacity(order.count)
        let rootWithSlash = taskfile.root == "/" ? "/" : taskfile.root + "/"
        for position in order {
            let definition = taskfile.tasks[position]
            errors += rootEscapes(definition, rootWithSlash: rootWithSlash)
            guard let kind = registry.kind(named: definition.kind.value) else {
                let known = registry.kinds.map(\.name).joined(separator: ", ")
                errors.append(TaskfileError(
                    .unknownTaskKind,
                    "task '\(definition.name)' uses task kind '\(definition.kind.value)', which no plugin provides (no libkiln-\(definition.kind.value).so on the plugin path: see --plugin-path); known kinds: \(known)",
                    at: definition.kind.location
                ))
                continue
            }
            let description = TaskDescription(
                name: definition.name, location: definition.location, variables: definition.variables
            )
            do {
                tasks.append(BuildPlan.Task(definition: definition, prepared: try kind.prepare(definition.configuration, for: description)))
            } catch {
                errors.append(TaskfileError(
                    .configurationRejected, "task '\(definition.name)': \(error.message) (task kind '\(kind.name)')",
                    at: error.location ?? definition.location
                ))
            }
        }
        if !errors.isEmpty {
            throw TaskfileErrors(sorting: errors, fileOrder: taskfile.files)
        }
        var positions: [String: Int] = [:]
        positions.reserveCapacity(tasks.count)
        for (position, task) in tasks.enumerated() { positions[task.definition.name] = position }
        let dependencyPositions = tasks.map { task in task.definition.dependencies.compactMap { positions[$0.value] } }
        return BuildPlan(taskfile: taskfile, tasks: tasks, targets: targets, dependencyPositions: dependencyPositions)
    }

    /// Errors for `generates` (and `dir`) that leave the project root, unless the task allows it.
    private func rootEscapes(_ task: TaskDefinition, rootWithSlash: String) -> [TaskfileError] {
        guard !task.allowsOutsideRoot else { return [] }
        var errors: [TaskfileError] = []
        let root = taskfile.root
        if task.directory != root, !Self.isInside(task.directory, root: root) {
            errors.append(TaskfileError(
                .outsideRoot,
                "task '\(task.name)' runs in \(task.directory), outside the project root \(root); add 'allow-outside-root: true' if that is intended",
                at: task.location
            ))
        }
        var variables: [String: String]?
        let directoryInside = task.directory == root || task.directory.hasPrefix(rootWithSlash)
        for output in task.generates where !GlobList.isExclusion(output.value) {
            var rendered = output.value
            if rendered.utf8.contains(UInt8(ascii: "{")) {
                // Per-source variables stand for paths inside the root; render them as a placeholder.
                if variables == nil {
                    variables = task.templateVariables
                    for name in TaskfileLoader.eachVariables { variables?[name] = "x" }
                }
                rendered = Template.render(rendered, variables: variables ?? [:])
            }
            // The common case — a relative path without `..` under a directory inside the root —
            // needs no normalizing.
            if !rendered.hasPrefix("/"), !Path.hasParentReference(rendered), directoryInside { continue }
            let path = rendered.hasPrefix("/") ? rendered : task.directory + "/" + rendered
            if !Self.isInside(path, root: root) {
                errors.append(TaskfileError(
                    .outsideRoot,
                    "task '\(task.name)' would write \(rendered), outside the project root; add 'allow-outside-root: true' to the task if that is intended",
                    at: output.location
                ))
            }
        }
        return errors
    }

    /// Whether `path`, normalized, is `root` or below it.
    static func isInside(_ path: String, root: String) -> Bool {
        Path.isInside(path, root: root)
    }
}

extension BuildPlan.Task {
    /// The resources its jobs claim: the Taskfile's `resources:`, or — when it names none — what
    /// its kind asks for (`cpu` for commands, `disk` for the archive plugin, `net:HOST` for http).
    public var resourceClaims: [String] {
        guard definition.resources.isEmpty else { return definition.resources.map(\.value) }
        return prepared.defaultResources(for: definition.jobRequest(source: nil))
    }
}
