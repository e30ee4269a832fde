import KilnPaths
import KilnPluginAPI

/// A task's `deps` and `cmds` as its Taskfile writes them, for people (`kiln list --summary`,
/// `kiln list --json`): a task that calls others is run as steps (see ``TaskDefinition/calls``),
/// and this puts them back together.
///
/// Threading: a value type; safe to pass between threads.
public struct WrittenTask: Sendable {
    /// One of `cmds`.
    ///
    /// Threading: a value type; safe to pass between threads.
    public enum Item: Sendable, Equatable {
        /// A command, rendered with the task's variables (as written when it can't be).
        case command(String)
        /// `- task: NAME`: the task's name (an instance shown as its task).
        case call(String)
    }

    /// `deps`: task names (an instance shown as its task).
    public var dependencies: [String]
    /// `cmds`, in order; a `for:` command once per item, as go-task's `--summary` shows it.
    public var commands: [Item]
    /// With `includingVariables`: the variables the task sees, in go-task's order — the files' `vars:` (the main file's
    /// first), then the task's — each as go-task's `--summary` shows it: `"value"` (a list as
    /// `"[a b]"`, a map as indented `key: value` lines), or `sh: COMMAND` for a dynamic one,
    /// which a listing doesn't run. Names the task's `env:` also sets are left out.
    public var variables: [(name: String, shown: String)] = []
    /// With `includingVariables`: the files' `env:`, then the task's, shown the same way.
    public var environment: [(name: String, shown: String)] = []
}

/// A Taskfile's tasks by name and alias, for many lookups (``Taskfile/task(named:)`` looks
/// through every task each time).
///
/// Threading: a value type; safe to pass between threads.
public struct TaskLookup: Sendable {
    private let tasks: TaskList
    private let positions: [String: Int]
    private let aliases: [String: String]

    init(_ taskfile: Taskfile) {
        tasks = taskfile.tasks
        let names = taskfile.tasks.outline.names
        positions = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
        aliases = taskfile.aliases
    }

    /// The task called `name`, or answering to it as an alias.
    public func task(named name: String) -> TaskDefinition? {
        positions[aliases[name] ?? name].map { tasks[$0] }
    }
}

extension Taskfile {
    /// The tasks by name, for many lookups.
    ///
    /// Threading: any thread.
    public func lookup() -> TaskLookup { TaskLookup(self) }

    /// `task` as its Taskfile writes it.
    ///
    /// Threading: any thread.
    /// - Parameters:
    ///   - includingVariables: Also ``WrittenTask/variables`` and ``WrittenTask/environment``,
    ///     for `--summary`: the Taskfiles are read again for them.
    ///   - lookup: The tasks by name (``lookup()``): made once for many tasks, it keeps listing
    ///     them all linear.
    public func written(_ task: TaskDefinition, includingVariables: Bool = false, lookup: TaskLookup? = nil)
        -> WrittenTask
    {
        let lookup = lookup ?? self.lookup()
        // A task whose `if:` is a shell test runs its body, `T [if]`: that is what is written.
        if let bodyName = task.options.conditionalBody, let body = lookup.task(named: bodyName) {
            var written = written(body, lookup: lookup)
            if includingVariables { (written.variables, written.environment) = writtenVariables(of: task) }
            return written
        }
        // The steps are named `T #1`, `T #2`, … and the last is `T` itself (splitSteps).
        let whole = task.partOf ?? task.name
        let pieces =
            TaskDefinition.pieces(of: task.name) { name in
                lookup.task(named: name).flatMap { $0.partOf == whole ? $0 : nil }
            }
            + [task]
        func shown(_ name: String) -> String { lookup.task(named: name)?.partOf ?? name }
        let first = pieces[0]
        var written = WrittenTask(
            dependencies: first.dependencies.dropLast(first.calls.count).map { shown($0.value) },
            commands: []
        )
        for piece in pieces {
            // An end's calls are the deferred ones, written in their places among the commands.
            if piece.options.deferralBody == nil {
                for call in piece.calls { written.commands.append(.call(shown(call.value))) }
            }
            let variables = piece.templateVariables
            let settings = piece.options.commandOptions
            for (index, command) in piece.commands.enumerated() {
                func rendered(_ scope: [String: TemplateValue]) -> String {
                    (try? TaskfileTemplates.render(command.value, variables: scope, at: nil)) ?? command.value
                }
                if index < settings.count, settings[index].deferredCall != nil, !settings[index].isDeferred {
                    written.commands.append(.call(shown(command.value)))
                    continue
                }
                // go-task shows a deferred command as written: it renders it only when it runs.
                if index < settings.count, settings[index].isDeferred {
                    written.commands.append(.command(command.value))
                    continue
                }
                guard index < settings.count, let loop = settings[index].loop else {
                    written.commands.append(.command(rendered(variables)))
                    continue
                }
                let items: [TemplateValue] =
                    switch loop.items {
                    case .sources: piece.sourceFiles().map(TemplateValue.string)
                    case .generates:
                        Glob.files(
                            matching: piece.generates.map(\.value)
                                + piece.renderedSources.filter { $0 == GlobList.gitignoreMarker },
                            in: piece.directory
                        ).map(
                            TemplateValue.string
                        )
                    default: loop.staticItems(variables: variables) ?? []
                    }
                for item in items {
                    var scope = variables
                    scope[loop.name] = item
                    written.commands.append(.command(rendered(scope)))
                }
            }
        }
        if includingVariables { (written.variables, written.environment) = writtenVariables(of: task) }
        return written
    }

    /// The `vars:` and `env:` entries `task` sees, in the order its files write them (see
    /// ``WrittenTask/variables``). The files are read again: only a summary needs this.
    func writtenVariables(of task: TaskDefinition) -> (variables: [(String, String)], environment: [(String, String)]) {
        var variableNodes: [(String, YAMLNode)] = []
        var environmentNodes: [(String, YAMLNode)] = []
        func add(_ node: YAMLNode?, to list: inout [(String, YAMLNode)], keeping: (String) -> Bool = { _ in true }) {
            for (key, value) in node?.mapping ?? [] {
                guard let name = key.string, keeping(name) else { continue }
                if let index = list.firstIndex(where: { $0.0 == name }) {
                    list[index].1 = value
                } else {
                    list.append((name, value))
                }
            }
        }
        let visible = task.variables
        for file in files {
            guard let text = try? Files.readText(file), let top = try? YAMLNode.parse(text) else { continue }
            // Another file's variables count only when the task sees a variable of that name.
            add(top["vars"], to: &variableNodes) { visible[$0] != nil }
            if file == self.path || file == task.file { add(top["env"], to: &environmentNodes) }
            guard file == task.file else { continue }
            let own = top["tasks"]?.mapping?.first { entry in
                Int(entry.key.mark.line) == task.location.line && Int(entry.key.mark.column) == task.location.column
            }?.value
            add(own?["vars"], to: &variableNodes)
            add(own?["env"], to: &environmentNodes)
        }
        func shown(_ node: YAMLNode, value: TemplateValue?) -> String {
            // go-task's `secret: true`: masked, whatever the value.
            if let secret = node["secret"]?.string, TaskfileLoader.boolean(secret) == true {
                return SecretMask.replacement
            }
            if let command = node["sh"]?.string, node.mapping?.count == 1 {
                // Rendered, as go-task shows it; a listing doesn't run it.
                return "sh: "
                    + ((try? TaskfileTemplates.render(command, variables: task.templateVariables, at: nil)) ?? command)
            }
            switch value ?? .string(node.string ?? "") {
            case .map(let entries):
                guard !entries.isEmpty else { return "{}" }
                return "\n" + entries.keys.sorted().map { "    \($0): \(entries[$0]?.printed ?? "")\n" }.joined()
            case let other: return "\"\(other.printed)\""
            }
        }
        let environmentNames = Set(environmentNodes.map(\.0))
        return (
            variableNodes.filter { !environmentNames.contains($0.0) }.map { ($0.0, shown($0.1, value: visible[$0.0])) },
            environmentNodes.map { ($0.0, shown($0.1, value: task.environment[$0.0].map(TemplateValue.string))) }
        )
    }
}
