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
        /// Its kind, shared by the plan's tasks of that kind.
        let kind: PlannedKind

        /// The name of its kind.
        public var kindName: String { kind.registered.name }

        /// Its kind holding its configuration, prepared anew at each call. The plan had the kind
        /// check every configuration and kept none: a plan of 10k tasks held 1.7 MB of them while
        /// a window of 256 ran. A job's check prepares it and hands it to the job
        /// (``IncrementalState/Check/prepared``): a job costs one more preparation than before,
        /// about 6,400 instructions of a shell task's (callgrind, a 1k-task build: 410.7M →
        /// 417.1M).
        ///
        /// - Throws: ``TaskConfigurationError`` when the kind refuses now what it accepted when the
        ///   plan was made (a plugin's kind may depend on more than the configuration).
        ///
        /// Threading: any thread (a kind's requirements are thread-safe).
        public func prepared() throws(TaskConfigurationError) -> PreparedTask {
            try kind.registered.prepare(
                definition.configuration,
                for: TaskDescription(
                    name: definition.name,
                    location: definition.location,
                    variables: definition.variables
                )
            )
        }
    }

    /// A task kind of the plan: one object a kind, so a task holds a reference, not the kind's
    /// fields.
    ///
    /// Threading: immutable.
    final class PlannedKind: Sendable {
        let registered: RegisteredTaskKind
        init(_ registered: RegisteredTaskKind) { self.registered = registered }
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
    /// When tasks of the plan call others (`- task:` in `cmds`), which of them wait to be called;
    /// `nil` when none do.
    var gating: CallGating?
    /// The project root as a boundary (links resolved): what a run may write or remove.
    let boundary: ProjectBoundary

    /// The plan with its tasks in the order to start them: the longest remaining path first.
    ///
    /// A task's remaining path is its own weight plus the longest remaining path among the tasks
    /// that depend on it. Its weight is how long its job last ran (`durations`, by task name, from
    /// the build state); a task never timed weighs the mean of those that were, and when none
    /// was (a first build) every task weighs the same, so the order is by depth. Every weight is
    /// at least 1, so a dependency's remaining path is always longer than its dependent's: sorted
    /// by it (ties in plan order), the tasks stay in dependency order. Among tasks equally ready,
    /// a queue starts the one created first, so the long poles start first instead of last.
    ///
    /// A plan whose tasks call others (`- task:` in `cmds`) keeps its order: calls run in the
    /// order written.
    public func startingLongestPathFirst(durations: [String: Int64]) -> BuildPlan {
        guard gating == nil, tasks.count > 1 else { return self }
        let count = tasks.count
        // Each task's recorded duration, looked up once (-1: never timed).
        var own = [Int64](repeating: -1, count: count)
        var timed: Int64 = 0
        var total: Int64 = 0
        if !durations.isEmpty {
            for position in 0..<count {
                guard let duration = durations[tasks[position].definition.name] else { continue }
                own[position] = duration
                timed += 1
                total &+= duration
            }
        }
        let fallback = timed == 0 ? 1 : max(1, total / timed)
        // Dependents come later in the plan: one pass from the end, each task handing its
        // remaining path to its dependencies.
        var remaining = [Int64](repeating: 0, count: count)
        var longestAfter = [Int64](repeating: 0, count: count)
        for position in (0..<count).reversed() {
            let path = max(1, own[position] < 0 ? fallback : own[position]) &+ longestAfter[position]
            remaining[position] = path
            for dependency in dependencyPositions[position] where longestAfter[dependency] < path {
                longestAfter[dependency] = path
            }
        }
        let order = remaining.withUnsafeBufferPointer { remaining in
            (0..<count).sorted { remaining[$0] != remaining[$1] ? remaining[$0] > remaining[$1] : $0 < $1 }
        }
        if order.elementsEqual(0..<count) { return self }
        var newPosition = [Int](repeating: 0, count: count)
        for (new, old) in order.enumerated() { newPosition[old] = new }
        var reordered = self
        reordered.tasks = order.map { tasks[$0] }
        reordered.dependencyPositions = order.map { dependencyPositions[$0].map { newPosition[$0] } }
        return reordered
    }

    /// The files an `each:` task's jobs are for now: its sources, limited by ``eachSourceFilter``.
    /// Calls `body` with each file the plan's tasks declare as outputs (`generates:`), as the
    /// patterns match now — for an `each:` task, those of the files its sources match now —
    /// absolute, and the task that declares it. A template that can't be rendered names none.
    func forEachDeclaredOutput(_ body: (TaskDefinition, String) -> Void) {
        for task in tasks where !task.definition.generatesInPlace.isEmpty {
            forEachDeclaredOutput(of: task.definition) { body(task.definition, $0) }
        }
    }

    /// Calls `body` with each file `definition` declares as an output, as
    /// ``forEachDeclaredOutput(_:)`` lists them.
    func forEachDeclaredOutput(of definition: TaskDefinition, _ body: (String) -> Void) {
        guard !definition.generatesInPlace.isEmpty else { return }
        let variableSets =
            definition.each == .sources
            ? definition.sourceFiles().map(definition.templateVariables(forSource:))
            : [definition.templateVariables]
        for variables in variableSets {
            guard case .success(let rendered) = definition.renderedOutputs(variables: variables) else { continue }
            for path in Glob.files(matching: rendered, in: definition.directory, keepingMissingLiterals: true) {
                body(Path.join(definition.directory, path))
            }
        }
    }

    /// Whether a task the plan was made for says `watch: true` (go-task then watches it).
    public var targetsWatch: Bool { taskfile.watches(targets.isEmpty ? ["default"] : targets) }

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
        try plan(targets: requested, choose: nil).plan
    }

    /// What chooses the part of a plan a run takes (``plan(targets:choose:)``): given the
    /// Taskfile's tasks, the plan's order of them, the positions in that order of each one's
    /// dependencies, and whether a target says `watch: true`; `nil` for the whole plan.
    typealias Choose = (
        _ outline: TaskOutline, _ order: [Int], _ dependencyPositions: [[Int]], _ watches: Bool
    ) -> ChangedPart?

    /// Plans a run of `targets`, leaving out the tasks `choose` says the run doesn't take
    /// (``ChangedPart/of(_:order:dependencyPositions:watches:after:)``): they are neither checked
    /// nor prepared, nor decoded from the Taskfile cache. `choose` is given the Taskfile's
    /// outline (``TaskOutline``) and the whole plan's order of its tasks (dependencies first), the
    /// positions in that order of each one's dependencies, and whether a target says
    /// `watch: true` (`nil`: the whole plan, without working out what to give it). A task
    /// left out doesn't run, so it can't write outside the project; whether it would is checked
    /// by the next run that takes it (the boundary's memo isn't saved for a plan with tasks left
    /// out: they weren't checked).
    ///
    /// - Returns: The plan of the tasks kept, and what `choose` chose (`nil`: the whole plan).
    func plan(
        targets requested: [String],
        choose: Choose?
    ) throws(TaskfileErrors) -> (plan: BuildPlan, part: ChangedPart?) {
        var errors: [TaskfileError] = []
        var targets = requested
        // Names, dependencies and flags, without decoding a definition.
        let outline = taskfile.tasks.outline
        // A name is a task's or an alias's (the loader refuses an alias that is a task's name).
        func position(of name: String) -> Int? {
            outline.position(named: name) ?? outline.aliases[name].flatMap(outline.position(named:))
        }
        if targets.isEmpty {
            guard position(of: "default") != nil else {
                // The Taskfile's tasks, not the pieces kiln makes of them (instances, steps).
                let names = taskfile.tasks.filter { $0.partOf == nil && !$0.isInternal }.map(\.name).joined(
                    separator: ", "
                )
                throw TaskfileErrors(errors: [
                    TaskfileError(.unknownTask, "no task given and no 'default' task; name one of: \(names)", at: nil)
                ])
            }
            targets = ["default"]
        }
        var order: [Int] = []
        var visited = [Bool](repeating: false, count: outline.count)
        // Depth first, dependencies before dependents, with an explicit stack: a chain of a
        // million tasks must not need a million stack frames.
        func visit(_ start: Int) {
            guard !visited[start] else { return }
            visited[start] = true
            var stack: [(position: Int, next: Int)] = [(start, 0)]
            while let top = stack.last {
                // A task that doesn't run on this platform skips its dependencies too (go-task's rule).
                let dependencies =
                    outline.flags[top.position].contains(.runsHere) ? outline.dependencies(of: top.position) : []
                if top.next < dependencies.count {
                    stack[stack.count - 1].next += 1
                    let next = Int(dependencies[dependencies.startIndex + top.next])
                    if !visited[next] {
                        visited[next] = true
                        stack.append((next, 0))
                    }
                } else {
                    order.append(top.position)
                    stack.removeLast()
                }
            }
        }
        for name in targets {
            if let position = position(of: name) {
                let target = taskfile.tasks[position]
                // A wildcard task's instance answers to the name that matched it (`start:web`).
                if let whole = target.partOf, !(whole.contains("*") && target.name == name) {
                    errors.append(
                        TaskfileError(
                            .unknownTask,
                            "'\(name)' is a piece of task '\(whole)' that kiln made (an instance called with variables, or a step between calls), not a task of the Taskfile; run '\(whole)'",
                            at: nil
                        )
                    )
                    continue
                }
                if target.options.isInternal {
                    errors.append(
                        TaskfileError(
                            .unknownTask,
                            "task '\(target.name)' is internal: it runs only as another task's dependency",
                            at: target.location
                        )
                    )
                    continue
                }
                visit(position)
            } else {
                var message = "no task named '\(name)' in \(taskfile.path)"
                let named = taskfile.tasks.filter { $0.partOf == nil }.map(\.name)
                if let close = suggestion(for: name, among: named) { message += "; did you mean '\(close)'?" }
                errors.append(TaskfileError(.unknownTask, message, at: nil))
            }
        }
        var tasks: [BuildPlan.Task] = []
        tasks.reserveCapacity(order.count)
        // Each planned task's position in the outline.
        var planned: [Int] = []
        planned.reserveCapacity(order.count)
        let boundary = ProjectBoundary(root: taskfile.root)
        // The same Taskfile over the same directories: the last check's verdict holds.
        let memo = taskfile.contentIdentity.map { BoundaryMemo(root: taskfile.root, identity: $0) }
        let checkBoundary = memo?.vouches(resolvedRoot: boundary.resolvedRoot) != true
        var part: ChangedPart?
        if let choose, errors.isEmpty {
            var inOrder = [Int](repeating: -1, count: outline.count)
            for (offset, position) in order.enumerated() { inOrder[position] = offset }
            // Each visited task's dependencies, as the visit followed them, by position in the plan.
            let dependencyPositions = order.map { position in
                outline.flags[position].contains(.runsHere)
                    ? outline.dependencies(of: position).map { inOrder[Int($0)] } : []
            }
            let watches = targets.contains { name in
                position(of: name).map { outline.flags[$0].contains(.watches) } == true
            }
            part = choose(outline, order, dependencyPositions, watches)
        }
        var escapes = 0
        var plannedKinds: [String: BuildPlan.PlannedKind] = [:]
        for (offset, position) in order.enumerated() {
            if let part, !part.kept[offset] { continue }
            var definition = taskfile.tasks[position]
            // A task that doesn't run here (`platforms:`, `if:`) is skipped whole, as in go-task:
            // nothing of it is rendered, so nothing of it is checked.
            if !definition.runsHere { definition.dependencies = [] }
            if definition.hasPlanChecks, definition.runsHere {
                if definition.options.dynamicVariablesSkipped {
                    // The loader runs them for every task a run needs: this is kiln's mistake.
                    errors.append(
                        TaskfileError(
                            .invalidValue,
                            "task '\(definition.name)' is planned, but its dynamic variables weren't run when the Taskfile loaded (a kiln bug: please report it); name it on the command line",
                            at: definition.location
                        )
                    )
                }
                errors += Self.missingVariables(of: definition)
                errors += definition.options.deferredErrors.map(\.error)
                errors += Self.undefinedVariables(in: definition)
            }
            if checkBoundary {
                let found = rootEscapes(definition, boundary: boundary)
                escapes += found.count
                errors += found
            }
            guard let kind = registry.kind(named: definition.kind.value) else {
                let known = registry.kinds.map(\.name).joined(separator: ", ")
                errors.append(
                    TaskfileError(
                        .unknownTaskKind,
                        "task '\(definition.name)' uses task kind '\(definition.kind.value)', which no plugin provides (no libkiln-\(definition.kind.value).so on the plugin path: see --plugin-path); known kinds: \(known)",
                        at: definition.kind.location
                    )
                )
                continue
            }
            let plannedKind = plannedKinds[kind.name] ?? BuildPlan.PlannedKind(kind)
            plannedKinds[kind.name] = plannedKind
            let task = BuildPlan.Task(definition: definition, kind: plannedKind)
            do {
                // Checked, and let go: the run prepares it again when it makes its jobs.
                _ = try task.prepared()
                tasks.append(task)
                planned.append(position)
            } catch {
                errors.append(
                    TaskfileError(
                        .configurationRejected,
                        "task '\(definition.name)': \(error.message) (task kind '\(kind.name)')",
                        at: error.location ?? definition.location
                    )
                )
            }
        }
        if let memo, checkBoundary {
            if escapes == 0 {
                // Only when every task was checked: a task left out wasn't.
                if part == nil {
                    memo.save(directories: boundary.consultedDirectories, resolvedRoot: boundary.resolvedRoot)
                }
            } else {
                memo.remove()
            }
        }
        if !errors.isEmpty {
            throw TaskfileErrors(sorting: errors, fileOrder: taskfile.files)
        }
        // A task's dependencies by position, from the outline's (each name resolved to the first
        // task of that name, as every visit resolved it, so the plan holds no other task of that
        // name): those the plan holds. None for a task that doesn't run here. (By name, a task
        // depending on ten thousand hashed each of them.)
        var inPlan = [Int32](repeating: -1, count: outline.count)
        for (index, position) in planned.enumerated() { inPlan[position] = Int32(index) }
        let dependencyPositions = zip(tasks, planned).map { task, position in
            guard task.definition.runsHere else { return [Int]() }
            return outline.dependencies(of: position).compactMap { inPlan[Int($0)] < 0 ? nil : Int(inPlan[Int($0)]) }
        }
        var plan = BuildPlan(
            taskfile: taskfile,
            tasks: tasks,
            targets: targets,
            dependencyPositions: dependencyPositions,
            boundary: boundary
        )
        if tasks.contains(where: { !$0.definition.calls.isEmpty }) {
            // The plan's tasks by name, for the calls (no other plan needs them).
            var positions: [String: Int] = [:]
            positions.reserveCapacity(tasks.count)
            for (position, task) in tasks.enumerated() { positions[task.definition.name] = position }
            let roots = targets.compactMap { positions[$0] ?? taskfile.aliases[$0].flatMap { positions[$0] } }
            plan.gating = CallGating(tasks: tasks.map(\.definition), positions: positions, roots: roots)
        }
        return (plan, part)
    }

    /// Errors for a `dir`, `generates` or `depfile` that leaves the project root — lexically, or
    /// through a symbolic link — unless the task allows it.
    private func rootEscapes(_ task: TaskDefinition, boundary: ProjectBoundary) -> [TaskfileError] {
        guard !task.allowsOutsideRoot else { return [] }
        var errors: [TaskfileError] = []
        let root = taskfile.root
        let hint = "add 'allow-outside-root: true' to the task if that is intended"
        if !boundary.contains(task.directory, followingLastLink: true) {
            let how = Self.isInside(task.directory, root: root) ? " through a symbolic link" : ""
            errors.append(
                TaskfileError(
                    .outsideRoot,
                    "task '\(task.name)' runs in \(task.directory), outside the project root \(root)\(how); \(hint)",
                    at: task.location
                )
            )
        }
        var variables: [String: TemplateValue]?
        func rendered(_ text: String) -> String {
            guard TextTemplate.hasActions(text) else { return text }
            // Per-source variables stand for paths inside the root; render them as a placeholder.
            if variables == nil {
                variables = task.templateVariables
                for name in TaskfileLoader.eachVariables { variables?[name] = "x" }
            }
            // One that can't be rendered fails its job, which names why.
            return (try? TaskfileTemplates.render(text, variables: variables ?? [:], at: nil)) ?? text
        }
        func check(_ written: String, what: String, at location: SourceLocation) {
            let text = rendered(written)
            let path = Path.join(task.directory, text)
            guard !boundary.contains(path, followingLastLink: true) else { return }
            let how = Self.isInside(path, root: root) ? " through a symbolic link" : ""
            errors.append(
                TaskfileError(
                    .outsideRoot,
                    "task '\(task.name)' would \(what) \(text), outside the project root\(how); \(hint)",
                    at: location
                )
            )
        }
        for output in task.generatesInPlace where !GlobList.isExclusion(output.value) {
            check(output.value, what: "write", at: output.location)
        }
        if let depfile = task.depfile { check(depfile, what: "read and remove the depfile", at: task.location) }
        return errors
    }

    /// Variables the task's templates print as they are (`{{.NAME}}`) that nothing sets — not the
    /// Taskfile, the command line or the environment: go-task would print nothing, kiln says so
    /// before anything runs. Asking about one (`{{if .X}}`, `{{.X | default "d"}}`) is fine.
    static func undefinedVariables(in task: TaskDefinition) -> [TaskfileError] {
        var templates: [Located<String>] = task.commands + task.generates + task.options.preconditions.map(\.test)
        if let depfile = task.locatedDepfile { templates.append(depfile) }
        if let configuration = task.pluginConfiguration {
            var pending = [configuration]
            while let value = pending.popLast() {
                switch value.kind {
                case .scalar(let text): templates.append(Located(value: text, location: value.location))
                case .list(let items): pending += items
                case .map(let entries): pending += entries.map(\.value)
                case .null: break
                }
            }
        }
        // A `for:` command's item variable (`ITEM`, or its `as:` name) is defined for it and its
        // `if:`; `EXIT_CODE` for a `defer:` command.
        var ownNames: [SourceLocation: Set<String>] = [:]
        for (index, settings) in task.options.commandOptions.enumerated() where index < task.commands.count {
            var names: Set<String> = []
            if let loop = settings.loop { names.insert(loop.name) }
            if settings.isDeferred { names.insert("EXIT_CODE") }
            if let condition = settings.condition {
                templates.append(condition)
                ownNames[condition.location] = names
            }
            ownNames[task.commands[index].location] = names
        }
        let templatesWithActions = templates.filter { TextTemplate.hasActions($0.value) }
        guard !templatesWithActions.isEmpty else { return [] }
        var known = task.templateVariables
        if let fingerprint = task.options.fingerprint { known[fingerprint.variable] = "" }
        let each = task.each == .sources
        var errors: [TaskfileError] = []
        // Each file is read once to place the errors in it (only when there are some).
        var locators: [String: TaskfileLocator?] = [:]
        func locator(_ path: String) -> TaskfileLocator? {
            if let known = locators[path] { return known }
            let made = (try? Files.readText(path)).map(TaskfileLocator.init(text:))
            locators[path] = made
            return made
        }
        for text in templatesWithActions {
            guard let template = try? TaskfileTemplates.library.template(text.value) else { continue }
            for reference in template.printedVariableReferences {
                let name = reference.name
                if known[name] != nil || TaskfileLoader.builtInVariables.contains(name)
                    || (each && TaskfileLoader.eachVariables.contains(name))
                    || ownNames[text.location]?.contains(name) == true
                {
                    continue
                }
                let message = TaskfileError.undefinedVariableMessage(
                    name,
                    // The task as the command line names it (a step or an instance can't be).
                    task: task.partOf ?? task.name,
                    known: Array(known.keys) + TaskfileLoader.builtInVariables
                )
                errors.append(
                    TaskfileError(
                        .undefinedVariable,
                        message,
                        at: TaskfileTemplates.locate(
                            offset: TaskfileTemplates.actionStart(before: reference.offset, in: text.value),
                            in: text.value,
                            writtenAt: text.location,
                            file: locator
                        )
                    )
                )
            }
        }
        return errors
    }

    /// go-task's `requires:`: each required variable set (by the Taskfile, the command line or the
    /// environment), to one of its allowed values when it says which.
    static func missingVariables(of task: TaskDefinition) -> [TaskfileError] {
        guard !task.options.requiredVariables.isEmpty else { return [] }
        let variables = task.templateVariables
        return task.options.requiredVariables.compactMap { required in
            guard let value = variables[required.name], value != .missing else {
                return TaskfileError(
                    .missingVariable,
                    "task '\(task.name)' requires variable '\(required.name)', which isn't set; give it on the command line (kiln run \(task.name) \(required.name)=…), in the environment, or under 'vars:'",
                    at: required.location
                )
            }
            if let allowed = required.allowed, case .string(let text) = value, !allowed.contains(text) {
                return TaskfileError(
                    .missingVariable,
                    "task '\(task.name)': variable '\(required.name)' is '\(text)', not one of its allowed values: \(allowed.joined(separator: ", "))",
                    at: required.location
                )
            }
            return nil
        }
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
        return (try? prepared())?.defaultResources(for: definition.jobRequest(source: nil)) ?? []
    }
}

/// Which tasks of a plan wait to be called. A task that something depends on (or that was asked
/// for) starts when its dependencies are done; a task reached only through `- task:` calls — and
/// what it alone depends on — starts only once a step that calls it is reached (the commands
/// before the call have run), as in go-task. Each such task has a gate, opened by the first call
/// reached; when every caller failed or was skipped, the gate is closed for good and the task
/// doesn't run.
///
/// Threading: a value type; safe to pass between threads.
struct CallGating: Sendable {
    /// Per plan position: whether the task waits to be called.
    var isGated: [Bool]
    /// Per position: the positions it calls (its last dependencies).
    var calls: [[Int]]
    /// Per position: its other dependencies — what must succeed before its calls start.
    var staticDependencies: [[Int]]
    /// Per waiting task: how many things may open its gate — steps that call it, and waiting
    /// tasks that depend on it. When all of them have said no, it never runs.
    var triggers: [Int]
    /// The ends of tasks with deferred calls (``TaskOptions/deferralBody``): per end's position,
    /// the positions of the pieces that run the task's commands — the steps between its calls
    /// (`T #1`, `T #2`, …), then the body, last: a deferred call's place may be in any of them.
    /// An end's calls aren't made when its other dependencies succeed but when the body has
    /// ended, however it ended, and only those its commands reached.
    var deferralPieces: [Int: [Int]] = [:]
    /// Per deferred call's task, the end that makes the call.
    var deferralEnds: [Int: Int] = [:]
    /// The positions of the tasks that run to clean up after a body (the deferred calls' tasks,
    /// and what they alone depend on): a failure elsewhere doesn't stop them; a call not reached
    /// is skipped, not failed.
    var cleanups = Set<Int>()

    init(tasks: [TaskDefinition], positions: [String: Int], roots: [Int]) {
        calls = tasks.map { task in task.calls.compactMap { positions[$0.value] } }
        staticDependencies = tasks.map { task in
            task.dependencies.dropLast(task.calls.count).compactMap { positions[$0.value] }
        }
        // Reached from what was asked for without going through a call: starts as usual.
        var reached = [Bool](repeating: false, count: tasks.count)
        var stack = roots
        while let position = stack.popLast() {
            guard !reached[position] else { continue }
            reached[position] = true
            stack += staticDependencies[position]
        }
        isGated = reached.map { !$0 }
        triggers = [Int](repeating: 0, count: tasks.count)
        for position in tasks.indices {
            for called in calls[position] where isGated[called] { triggers[called] += 1 }
            if isGated[position] {
                for dependency in staticDependencies[position] { triggers[dependency] += 1 }
            }
        }
        for (position, task) in tasks.enumerated() {
            guard let body = task.options.deferralBody, let bodyPosition = positions[body] else { continue }
            let pieces = TaskDefinition.pieces(of: task.name) { positions[$0] }
            deferralPieces[position] = pieces.contains(bodyPosition) ? pieces : pieces + [bodyPosition]
            for called in calls[position] { deferralEnds[called] = position }
            var stack = calls[position].filter { isGated[$0] }
            while let cleanup = stack.popLast() {
                guard cleanups.insert(cleanup).inserted else { continue }
                stack += staticDependencies[cleanup].filter { isGated[$0] } + calls[cleanup].filter { isGated[$0] }
            }
        }
    }

    /// The waiting tasks that opening (or closing) the gate of `position` opens (or counts a no for).
    func gatedDependencies(of position: Int) -> [Int] {
        staticDependencies[position].filter { isGated[$0] }
    }
}
