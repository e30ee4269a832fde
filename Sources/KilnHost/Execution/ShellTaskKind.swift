import KilnJobs
import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The built-in task kind for tasks with `cmds:`: each job runs its commands one after another
/// with `/bin/sh -c` (or bash, see ``CommandShell``), stopping at the first that fails.
///
/// It registers through ``TaskKindRegistry`` like any plugin's kind; the host has no other path
/// to it.
///
/// Threading: a value type; its methods are safe from any thread.
public struct ShellTaskKind: TaskKind {
    /// A task's commands and preconditions, as templates with where each is written.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct Configuration: Sendable {
        /// One of `cmds`.
        ///
        /// Threading: a value type; safe to pass between threads.
        public struct Command: Sendable {
            /// The template.
            public var text: String
            /// Where it is written.
            public var location: SourceLocation
            /// `ignore_error:` — its failure doesn't fail the job.
            public var ignoresError = false
            /// `platforms:` — where it runs; skipped elsewhere (`nil`: everywhere).
            public var platforms: [String]?
            /// `for:` — what it runs once per item of, and the variable holding the item.
            public var loop: ConfigurationValue?
            /// `as:` — the item's variable (`ITEM`).
            public var itemName = "ITEM"
            /// What goes before the rendered command: `set -e; shopt -s globstar; ` (go-task's
            /// `set:`/`shopt:`).
            public var prefix = ""
        }

        /// `cmds`.
        public var commands: [Command]
        /// `preconditions`: a test and the message its failure shows.
        public var preconditions: [(test: String, location: SourceLocation, message: String?)]
    }

    /// `shell`.
    public let name = "shell"
    /// Bumped when the way commands run changes (2: `sh -e`, bash for bash's syntax, `set:`/`shopt:`):
    /// every shell job runs once more after an upgrade.
    public let version = "2"

    private let runner: any CommandRunner

    /// Creates the kind.
    ///
    /// - Parameter runner: Starts processes. Commands run with the environment the host gives
    ///   the job (``TaskContext/environment``): one rule for it, in the run.
    public init(runner: any CommandRunner) {
        self.runner = runner
    }

    /// Reads `cmds`.
    public func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        var configuration = Configuration(commands: [], preconditions: [])
        for item in value["cmds"]?.list ?? [] {
            // A string, or go-task's map: `{cmd: …, ignore_error: true, platforms: [linux]}`.
            guard item.map != nil else {
                configuration.commands.append(
                    Configuration.Command(text: try item.requireString("a command"), location: item.location)
                )
                continue
            }
            guard let text = item["cmd"] else {
                throw TaskConfigurationError("a command needs 'cmd'", at: item.location)
            }
            var command = Configuration.Command(text: try text.requireString("'cmd'"), location: text.location)
            command.ignoresError = try item["ignore_error"]?.requireString("'ignore_error'") == "true"
            command.platforms = try item["platforms"]?.requireStrings("'platforms'")
            command.loop = item["for"]
            command.itemName = try item["as"]?.requireString("'as'") ?? "ITEM"
            command.prefix = try item["prefix"]?.requireString("'prefix'") ?? ""
            configuration.commands.append(command)
        }
        for item in value["preconditions"]?.list ?? [] {
            let test = try item["sh"]?.requireString("'sh'") ?? ""
            configuration.preconditions.append(
                (test, item["sh"]?.location ?? item.location, try item["msg"]?.requireString("'msg'"))
            )
        }
        return configuration
    }

    /// The items of a `for:` (as the configuration holds it): a list; `sources` or `generates`
    /// (the files the task's patterns match now, in its directory); `{var: NAME, split: SEP}`
    /// (a list variable's items, or a text split on SEP, on white space without one); or
    /// `{matrix: {KEY: [values]}}` (each combination as a map, the first key varying slowest).
    static func items(of loop: ConfigurationValue, request: JobRequest) -> [TemplateValue] {
        if let list = loop.list { return list.compactMap { $0.string.map(TemplateValue.string) } }
        if let word = loop.string {
            let patterns = word == "sources" ? request.inputs : request.outputs
            return Glob.files(matching: patterns, in: request.directory).map(TemplateValue.string)
        }
        if let rows = loop["matrix"]?.map {
            return CommandLoop.combinations(of: rows.map { ($0.key, $0.value.list?.compactMap(\.string) ?? []) })
        }
        guard let name = loop["var"]?.string else { return [] }
        return CommandLoop.items(ofVariable: request.variables[name], split: loop["split"]?.string)
    }

    /// The commands that run on this machine, after templating, joined with `&&`.
    public func summary(of configuration: Configuration, request: JobRequest) -> String {
        configuration.commands.filter { TaskOptions.allows($0.platforms) }.map { $0.prefix + request.display($0.text) }.joined(
            separator: " && "
        )
    }

    /// Makes a ``CommandJob``.
    ///
    /// - Throws: ``TemplateRenderError`` when a command's template fails, naming its place.
    public func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        var steps: [CommandJob.Step] = []
        steps.reserveCapacity(configuration.preconditions.count + configuration.commands.count)
        for precondition in configuration.preconditions {
            let test = try request.render(precondition.test, at: precondition.location)
            steps.append(CommandJob.Step(command: test, precondition: precondition.message ?? test))
        }
        for command in configuration.commands where TaskOptions.allows(command.platforms) {
            guard let loop = command.loop else {
                steps.append(
                    CommandJob.Step(
                        command: command.prefix + (try request.render(command.text, at: command.location)),
                        ignoresError: command.ignoresError
                    )
                )
                continue
            }
            // go-task's `for:`: the command once per item, the item in {{.ITEM}} (or `as:`'s name).
            for item in Self.items(of: loop, request: request) {
                var variables = request.variables
                variables[command.itemName] = item
                let text = try request.templates.render(command.text, variables: variables, at: command.location)
                steps.append(CommandJob.Step(command: command.prefix + text, ignoresError: command.ignoresError))
            }
        }
        // The host made the environment (sharing its own storage unless the task adds to it).
        return CommandJob(
            steps: steps,
            directory: request.directory,
            environment: context.environment,
            output: context.output,
            runner: runner
        )
    }
}

/// A command that failed: which one, how, and the end of its output.
///
/// Threading: a value type; safe to pass between threads.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    /// The command line.
    public var command: String
    /// How it ended.
    public var result: CommandResult
    /// `command: exit status 2`.
    public var description: String { "\(result.description): \(command)" }
}

/// A precondition that didn't hold: its message (go-task's `msg:`), or its test.
///
/// Threading: a value type; safe to pass between threads.
public struct PreconditionFailure: Error, Sendable, CustomStringConvertible {
    /// What the Taskfile says about it.
    public var message: String
    /// How the test ended.
    public var result: CommandResult
    /// `precondition not met: MESSAGE`.
    public var description: String { "precondition not met: \(message)" }
}

/// An asynchronous job that runs shell commands in sequence. It holds a slot of its queue while
/// a command runs, but no thread: the process monitor completes it.
///
/// Cancelling it terminates the running command's process group.
///
/// Threading: as ``Job``. `@unchecked Sendable`: `running` is guarded by its mutex.
public final class CommandJob: Job, @unchecked Sendable {
    /// A command to run: one of the task's, or a precondition's test.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct Step: Sendable {
        /// The command line, after templating.
        public var command: String
        /// Whether its failure is ignored (`ignore_error:`).
        public var ignoresError = false
        /// For a precondition: the message its failure shows.
        public var precondition: String?
    }

    /// The steps: preconditions first, then the commands.
    public let steps: [Step]
    /// The commands, after templating.
    public var commands: [String] { steps.filter { $0.precondition == nil }.map(\.command) }
    private let directory: String
    private let environment: [String: String]
    private let output: TaskOutput
    private let runner: any CommandRunner
    /// The command running now (by index) and its handle; `finished` is the last index that ended,
    /// so a completion that beats the handle's storing doesn't leave a stale handle behind.
    private let running = HostMutex<(index: Int, finished: Int, handle: RunningCommand?)>((-1, -1, nil))

    init(steps: [Step], directory: String, environment: [String: String], output: TaskOutput, runner: any CommandRunner)
    {
        self.steps = steps
        self.directory = directory
        self.environment = environment
        self.output = output
        self.runner = runner
        super.init()
    }

    /// `true`: the job finishes when its last command exits.
    public override var isAsynchronous: Bool { true }

    /// Starts the first command.
    public override func start() throws(JobError) {
        guard try beginExecution() else { return }
        // A `dir:` that doesn't exist yet is made first, as go-task does (the plan checked that
        // it is inside the project, or that the task allows outside).
        if !Files.isDirectory(directory), let failure = Self.makeDirectories(directory) {
            try? finish(error: failure)
            return
        }
        run(0)
    }

    /// Makes `path` and its missing parents (`mkdir -p`); the failure, naming the directory.
    static func makeDirectories(_ path: String) -> DirectoryFailure? {
        var missing: [String] = []
        var current = path
        while !Files.isDirectory(current), current != "/", !current.isEmpty {
            missing.append(current)
            current = Path.directory(of: current)
        }
        for directory in missing.reversed() where mkdir(directory, 0o755) != 0 && errno != EEXIST {
            return DirectoryFailure(directory: directory, reason: String(cString: strerror(errno)))
        }
        return nil
    }

    /// The task's directory couldn't be made.
    struct DirectoryFailure: Error, CustomStringConvertible {
        var directory: String
        var reason: String
        var description: String { "can't make its directory \(directory): \(reason)" }
    }

    private func run(_ index: Int) {
        guard index < steps.count else {
            try? finish()
            return
        }
        if isCancelled {
            try? finish()
            return
        }
        let step = steps[index]
        let command = step.command
        running.withLock { $0.index = index }
        let handle = runner.run(command, directory: directory, environment: environment, output: output) {
            [self] result in
            running.withLock { running in
                running.finished = index
                running.handle = nil
            }
            if result.succeeded || step.ignoresError {
                run(index + 1)
            } else if let message = step.precondition {
                try? finish(error: PreconditionFailure(message: message, result: result))
            } else {
                try? finish(error: CommandFailure(command: command, result: result))
            }
        }
        let cancelledMeanwhile = running.withLock { running -> Bool in
            guard running.index == index, running.finished < index else { return false }
            running.handle = handle
            return isCancelled
        }
        if cancelledMeanwhile { handle.terminate() }
    }

    /// Cancels the job and terminates its running command.
    public override func cancel() {
        super.cancel()
        running.withLock { $0.handle }?.terminate()
    }
}
