import KilnCommandLine
import KilnHost

extension Kiln {
    struct List {
        static let spec = CommandSpec(
            name: "list",
            abstract: "List the tasks of the Taskfile.",
            options: TaskfileOptions.specs + [
                .flag("json", help: "Print JSON."),
                .flag(
                    "described",
                    help: "Only the tasks with a 'desc:' (go-task's --list; plain 'kiln list' is its --list-all)."
                ),
                .value(
                    "summary",
                    help: "Print one task's summary, dependencies, aliases and commands (go-task's --summary)."
                ),
            ]
        )

        var options: TaskfileOptions
        var json: Bool
        var described: Bool
        var summary: String?

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            json = arguments.flag("json")
            described = arguments.flag("described")
            summary = arguments.value("summary")
        }

        func run() throws {
            let project: Project
            do {
                // A listing runs no task's dynamic variables (go-task's --list doesn't either).
                var context = TaskfileContext.process
                context.workingDirectory = ""
                context.dynamicScope = .none
                project = try Project(
                    taskfilePath: options.taskfile,
                    currentDirectory: options.workingDirectory,
                    runner: ProcessMonitor(),
                    plugins: options.plugins,
                    context: context
                )
            } catch {
                throw taskfileFailure(error)
            }
            // Internal tasks run only as dependencies: not listed (go-task hides them too).
            let tasks = project.taskfile.tasks.filter {
                !$0.isInternal && $0.partOf == nil && (!described || $0.summary != nil)
            }
            if let summary {
                guard let task = project.taskfile.task(named: summary) else {
                    System.writeError("kiln: no task named '\(summary)' in \(project.taskfile.path)\n")
                    throw ExitCode(ExitStatus.invalidTaskfile)
                }
                let text = Kiln.summaryText(of: task, written: project.taskfile.written(task, includingVariables: true))
                print(project.taskfile.secrets.masking(text))
                return
            }
            if json {
                let lookup = project.taskfile.lookup()
                let objects: [JSONValue] = tasks.map { task in
                    let written = project.taskfile.written(task, lookup: lookup)
                    var object: [(String, JSONValue)] = [
                        ("name", .string(task.name)), ("deps", .array(written.dependencies.map { .string($0) })),
                        ("kind", .string(task.kind.value)),
                    ]
                    let calls = written.commands.compactMap { item -> JSONValue? in
                        if case .call(let name) = item { return .string(name) }
                        return nil
                    }
                    if !calls.isEmpty { object.append(("calls", .array(calls))) }
                    if let summary = task.summary { object.append(("desc", .string(summary))) }
                    if !task.aliases.isEmpty { object.append(("aliases", .array(task.aliases.map { .string($0) }))) }
                    return .object(object)
                }
                print(JSONValue.object([("tasks", .array(objects))]).serialized(pretty: true))
                return
            }
            let width = tasks.map(\.name.count).max() ?? 0
            for task in tasks {
                let padding = String(repeating: " ", count: width - task.name.count)
                let aliases = task.aliases.isEmpty ? "" : "  (aliases: \(task.aliases.joined(separator: ", ")))"
                print("* \(task.name):\(padding)  \(task.summary ?? "")\(aliases)")
            }
        }
    }

    /// go-task's `--summary` text: the name, the summary (else the description), variables,
    /// environment, required variables, dependencies, aliases and commands.
    static func summaryText(of task: TaskDefinition, written: WrittenTask) -> String {
        var text = "task: \(task.name)\n\n"
        text += (task.options.longSummary ?? task.summary ?? "(task does not have description or summary)")
        if !text.hasSuffix("\n") { text += "\n" }
        // As go-task: not the variables the environment or kiln itself sets.
        let environment = System.environment
        func isShown(_ name: String) -> Bool {
            environment[name] == nil && !["TASK_", "CLI_", "ROOT_"].contains(where: name.hasPrefix)
                && ![
                    "TASK", "TASKFILE", "TASKFILE_DIR", "USER_WORKING_DIR", "ALIAS", "MATCH", "PATH_LIST_SEPARATOR",
                    "FILE_PATH_SEPARATOR",
                ].contains(name)
        }
        let variables = written.variables.filter { isShown($0.name) }
        if !variables.isEmpty { text += "\nvars:\n" + variables.map { "  \($0.name): \($0.shown)\n" }.joined() }
        let exported = written.environment.filter { isShown($0.name) }
        if !exported.isEmpty { text += "\nenv:\n" + exported.map { "  \($0.name): \($0.shown)\n" }.joined() }
        if !task.options.requiredVariables.isEmpty {
            text += "\nrequires:\n  vars:\n"
            for required in task.options.requiredVariables {
                guard let allowed = required.allowed, !allowed.isEmpty else {
                    text += "    - \(required.name)\n"
                    continue
                }
                text += "    - \(required.name):\n        enum:\n" + allowed.map { "          - \($0)\n" }.joined()
            }
        }
        if !written.dependencies.isEmpty {
            text += "\ndependencies:\n" + written.dependencies.map { " - \($0)\n" }.joined()
        }
        if !task.aliases.isEmpty {
            text += "\naliases:\n" + task.aliases.map { " - \($0)\n" }.joined()
        }
        if !written.commands.isEmpty {
            text += "\ncommands:\n"
            for item in written.commands {
                switch item {
                case .command(let command): text += " - \(command)\n"
                case .call(let name): text += " - Task: \(name)\n"
                }
            }
        }
        return String(text.dropLast())
    }
}
