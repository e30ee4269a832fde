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
}

extension Taskfile {
    /// `task` as its Taskfile writes it.
    ///
    /// Threading: any thread.
    public func written(_ task: TaskDefinition) -> WrittenTask {
        // The steps are named `T #1`, `T #2`, … and the last is `T` itself (splitSteps).
        let whole = task.partOf ?? task.name
        var pieces: [TaskDefinition] = []
        while let step = self.task(named: "\(task.name) #\(pieces.count + 1)"), step.partOf == whole {
            pieces.append(step)
        }
        pieces.append(task)
        func shown(_ name: String) -> String { self.task(named: name)?.partOf ?? name }
        let first = pieces[0]
        var written = WrittenTask(
            dependencies: first.dependencies.dropLast(first.calls.count).map { shown($0.value) },
            commands: []
        )
        for piece in pieces {
            for call in piece.calls { written.commands.append(.call(shown(call.value))) }
            let variables = piece.templateVariables
            let settings = piece.options.commandOptions
            for (index, command) in piece.commands.enumerated() {
                func rendered(_ scope: [String: TemplateValue]) -> String {
                    (try? TaskfileTemplates.render(command.value, variables: scope, at: nil)) ?? command.value
                }
                guard index < settings.count, let loop = settings[index].loop else {
                    written.commands.append(.command(rendered(variables)))
                    continue
                }
                let items: [TemplateValue] =
                    switch loop.items {
                    case .sources: piece.sourceFiles().map(TemplateValue.string)
                    case .generates:
                        Glob.files(matching: piece.generates.map(\.value), in: piece.directory).map(
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
        return written
    }
}
