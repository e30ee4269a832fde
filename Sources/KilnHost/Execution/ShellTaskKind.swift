import KilnJobs
import KilnPaths
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
            /// The rest, which most commands leave as they are: boxed, and one shared box for
            /// all that do. A run holds every task's commands, so this makes a command 48 bytes
            /// instead of 200 (a 10k-task Taskfile's commands: 2.3 → 0.8 MB).
            private var box = SettingsBox.defaults

            /// A command with every other setting as go-task's default.
            init(text: String, location: SourceLocation) {
                self.text = text
                self.location = location
            }

            /// `ignore_error:` — its failure doesn't fail the job.
            public var ignoresError: Bool {
                get { box.settings.ignoresError }
                set { change { $0.ignoresError = newValue } }
            }
            /// `platforms:` — where it runs; skipped elsewhere (`nil`: everywhere).
            public var platforms: [String]? {
                get { box.settings.platforms }
                set { change { $0.platforms = newValue } }
            }
            /// `for:` — what it runs once per item of, and the variable holding the item.
            public var loop: ConfigurationValue? {
                get { box.settings.loop }
                set { change { $0.loop = newValue } }
            }
            /// `as:` — the item's variable (`ITEM`).
            public var itemName: String {
                get { box.settings.itemName }
                set { change { $0.itemName = newValue } }
            }
            /// What goes before the rendered command: `set -e; shopt -s globstar; ` (go-task's
            /// `set:`/`shopt:`).
            public var prefix: String {
                get { box.settings.prefix }
                set { change { $0.prefix = newValue } }
            }
            /// `if:` — a test (a template) run first; the command is skipped when it fails.
            public var condition: String? {
                get { box.settings.condition }
                set { change { $0.condition = newValue } }
            }
            /// `defer:` — it runs after the task's other commands, even after a failure.
            public var isDeferred: Bool {
                get { box.settings.isDeferred }
                set { change { $0.isDeferred = newValue } }
            }
            /// `timeout:` — how long it (with its `if:` test) may run.
            public var timeout: GoDuration? {
                get { box.settings.timeout }
                set { change { $0.timeout = newValue } }
            }
            /// Not a command: the place of the task's k-th deferred call (`defer: {task: …}`,
            /// ``text`` naming the task), which the host makes once the job has ended, if it
            /// got this far (``CommandJob/reachedDeferredCalls``).
            public var deferredCall: Int? {
                get { box.settings.deferredCall }
                set { change { $0.deferredCall = newValue } }
            }

            /// The settings after `body`, in a box of their own, or the shared one when they are
            /// the defaults again.
            private mutating func change(_ body: (inout Settings) -> Void) {
                var settings = box.settings
                body(&settings)
                box = settings.isDefault ? SettingsBox.defaults : SettingsBox(settings)
            }

            /// What a command says besides its text, go-task's defaults at first.
            private struct Settings: Sendable {
                var ignoresError = false
                var platforms: [String]?
                var loop: ConfigurationValue?
                var itemName = "ITEM"
                var prefix = ""
                var condition: String?
                var isDeferred = false
                var timeout: GoDuration?
                var deferredCall: Int?

                var isDefault: Bool {
                    !ignoresError && platforms == nil && loop == nil && itemName == "ITEM" && prefix.isEmpty
                        && condition == nil && !isDeferred && timeout == nil && deferredCall == nil
                }
            }

            /// Immutable, so shared between copies (a change makes a new one).
            private final class SettingsBox: Sendable {
                static let defaults = SettingsBox(Settings())
                let settings: Settings
                init(_ settings: Settings) { self.settings = settings }
            }
        }

        /// `cmds`.
        public var commands: [Command]
        /// `preconditions`: a test and the message its failure shows.
        public var preconditions: [(test: String, location: SourceLocation, message: String?)]
        /// go-task's `interactive: true`: the commands get kiln's terminal (see
        /// ``CommandRunner/runInteractive(_:directory:environment:completion:)``).
        public var isInteractive = false
        /// How long the commands may run all together (a call's or a dependency's `timeout:`).
        public var timeout: GoDuration?
    }

    /// `shell`: the kind's name, without an instance.
    public static let kindName = "shell"
    /// `shell`.
    public var name: String { Self.kindName }
    /// Bumped when the way commands run changes (2: `sh -e`, bash for bash's syntax, `set:`/`shopt:`):
    /// every shell job runs once more after an upgrade.
    public var version: String { "2" }

    /// The runner, behind one reference: every task's prepared configuration holds a copy of the
    /// kind, so the kind is 8 bytes instead of 56 (an existential and the version).
    private let shared: Shared

    /// Immutable, so shared between copies.
    private final class Shared: Sendable {
        let runner: any CommandRunner
        init(_ runner: any CommandRunner) { self.runner = runner }
    }

    private var runner: any CommandRunner { shared.runner }

    /// Creates the kind.
    ///
    /// - Parameter runner: Starts processes. Commands run with the environment the host gives
    ///   the job (``TaskContext/environment``): one rule for it, in the run.
    public init(runner: any CommandRunner) {
        shared = Shared(runner)
    }

    /// Reads `cmds`.
    public func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        var configuration = Configuration(commands: [], preconditions: [])
        configuration.isInteractive = try value["interactive"]?.requireString("'interactive'") == "true"
        configuration.timeout = try Self.duration(value["timeout"])
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
            // Only what is written is set: each setting set makes the command's own box.
            if let value = item["ignore_error"] {
                command.ignoresError = try value.requireString("'ignore_error'") == "true"
            }
            if let value = item["platforms"] { command.platforms = try value.requireStrings("'platforms'") }
            if let value = item["for"] { command.loop = value }
            if let value = item["as"] { command.itemName = try value.requireString("'as'") }
            if let value = item["prefix"] { command.prefix = try value.requireString("'prefix'") }
            if let value = item["if"] { command.condition = try value.requireString("'if'") }
            if let value = item["defer"] { command.isDeferred = try value.requireString("'defer'") == "true" }
            if let value = item["timeout"] { command.timeout = try Self.duration(value) }
            if let call = item["defer_call"] {
                guard let index = Int(try call.requireString("'defer_call'")), index >= 0 else {
                    throw TaskConfigurationError("'defer_call' must be a deferred call's number", at: call.location)
                }
                command.deferredCall = index
            }
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

    /// A `timeout:` as the configuration holds it (a Go duration above zero).
    private static func duration(_ value: ConfigurationValue?) throws(TaskConfigurationError) -> GoDuration? {
        guard let value else { return nil }
        let text = try value.requireString("'timeout'")
        guard let duration = GoDuration(text), duration.seconds > 0 else {
            throw TaskConfigurationError(
                "'timeout' must be a duration above zero (500ms, 30s, 5m), not '\(text)'",
                at: value.location
            )
        }
        return duration
    }

    /// The items of a `for:` (as the configuration holds it): a list; `sources` or `generates`
    /// (the files the task's patterns match now, in its directory); `{var: NAME, split: SEP}`
    /// (a list variable's items, or a text split on SEP, on white space without one); or
    /// `{matrix: {KEY: [values]}}` (each combination as a map, the first key varying slowest).
    static func items(of loop: ConfigurationValue, request: JobRequest) -> [TemplateValue] {
        if let list = loop.list { return list.compactMap { $0.string.map(TemplateValue.string) } }
        if let word = loop.string {
            // `use_gitignore: true` (its marker is among the inputs) applies to both lists.
            let gitignored = request.inputs.last == GlobList.gitignoreMarker ? [GlobList.gitignoreMarker] : []
            let patterns = word == "sources" ? request.inputs : request.outputs + gitignored
            return Glob.files(matching: patterns, in: request.directory).map(TemplateValue.string)
        }
        if let rows = loop["matrix"]?.map {
            return CommandLoop.combinations(of: rows.map { ($0.key, $0.value.list?.compactMap(\.string) ?? []) })
        }
        guard let name = loop["var"]?.string else { return [] }
        return CommandLoop.items(ofVariable: request.variables[name], split: loop["split"]?.string)
    }

    /// The commands that run on this machine, after templating, joined with `&&`; a command
    /// with `if:` shows its test (`if TEST; then CMD; fi`), a deferred one is marked `defer:`.
    public func summary(of configuration: Configuration, request: JobRequest) -> String {
        configuration.commands.filter { TaskOptions.allows($0.platforms) }.map { command in
            guard !command.isDeferred, command.condition == nil, command.deferredCall == nil else {
                return Self.shown(command, request: request)
            }
            return command.prefix + request.display(command.text)
        }.joined(separator: " && ")
    }

    /// A command with `defer:` or `if:` as ``summary(of:request:)`` shows it.
    private static func shown(_ command: Configuration.Command, request: JobRequest) -> String {
        // A deferred call's place; a deferred command written before a call is run as a call.
        if command.deferredCall != nil {
            return command.isDeferred ? "defer: " + request.display(command.text) : "defer: task " + command.text
        }
        if command.isDeferred {
            let text =
                (try? deferredText(command, variables: request.variables, exitCode: nil, templates: request.templates))
                ?? command.prefix + command.text
            return "defer: " + text
        }
        let text = command.prefix + request.display(command.text)
        guard let condition = command.condition else { return text }
        return "if \(request.display(condition)); then \(text); fi"
    }

    /// A `defer:` command's line: `EXIT_CODE` is the failed command's exit status, empty when
    /// none failed (go-task's rule).
    static func deferredText(
        _ command: Configuration.Command,
        variables: [String: TemplateValue],
        exitCode: Int32?,
        templates: TemplateLibrary
    ) throws(TemplateRenderError) -> String {
        var variables = variables
        variables["EXIT_CODE"] = .string(exitCode.map { String($0) } ?? "")
        return command.prefix + (try templates.render(command.text, variables: variables, at: command.location))
    }

    /// A `defer:` command: rendered when it runs (``deferredText(_:variables:exitCode:templates:)``).
    /// Rendered once now, so a mistake in it fails the job before any command runs.
    static func deferredStep(_ command: Configuration.Command, request: JobRequest) throws -> CommandJob.Step {
        let now = try deferredText(command, variables: request.variables, exitCode: nil, templates: request.templates)
        let templates = request.templates
        let variables = request.variables
        let later: @Sendable (Int32?) throws -> String = { exitCode in
            guard let exitCode else { return now }
            return try deferredText(command, variables: variables, exitCode: exitCode, templates: templates)
        }
        var step = CommandJob.Step(command: now, deferred: later)
        step.timeout = command.timeout
        return step
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
            if let call = command.deferredCall {
                steps.append(CommandJob.Step(command: "", deferredCall: call))
                continue
            }
            if command.isDeferred {
                steps.append(try Self.deferredStep(command, request: request))
                continue
            }
            // go-task's `for:`: the command once per item, the item in {{.ITEM}} (or `as:`'s name).
            let items: [TemplateValue?] =
                command.loop.map { Self.items(of: $0, request: request).map(Optional.some) } ?? [nil]
            for item in items {
                var variables = request.variables
                if let item { variables[command.itemName] = item }
                var step = CommandJob.Step(
                    command: command.prefix
                        + (try request.templates.render(command.text, variables: variables, at: command.location)),
                    ignoresError: command.ignoresError
                )
                step.timeout = command.timeout
                if let condition = command.condition {
                    let test = try request.templates.render(condition, variables: variables, at: command.location)
                    // `true`, `false` and nothing need no shell: the same answer, without a process.
                    switch TaskOptions.constantCondition(test) {
                    case false?: continue
                    case true?: break
                    case nil: step.condition = test
                    }
                }
                steps.append(step)
            }
        }
        // The host made the environment (sharing its own storage unless the task adds to it).
        return CommandJob(
            steps: steps,
            directory: request.directory,
            environment: context.environment,
            output: context.output,
            runner: runner,
            isInteractive: configuration.isInteractive,
            timeout: configuration.timeout
        )
    }
}

/// A command that failed: which one, how, and the end of its output.
///
/// Threading: a value type; safe to pass between threads.
public struct CommandFailure: Error, Sendable, CustomStringConvertible {
    /// What stopped a command that ran out of time.
    ///
    /// Threading: a value type; safe to pass between threads.
    public enum Timeout: Sendable {
        /// The command's own `timeout:`.
        case command(GoDuration)
        /// The `timeout:` of the call or dependency that runs the task: all its commands ran
        /// that long.
        case task(GoDuration)
    }

    /// The command line.
    public var command: String
    /// How it ended.
    public var result: CommandResult
    /// Set when it was stopped for running out of time (its exit code is then 124).
    public var timeout: Timeout?
    /// `exit status 2: command`, `command timeout exceeded (5m): command`.
    public var description: String {
        switch timeout {
        case .command(let limit)?: "command timeout exceeded (\(limit)): \(command)"
        case .task(let limit)?: "timeout exceeded (\(limit), set by the task's caller): \(command)"
        case nil: "\(result.description): \(command)"
        }
    }
}

extension CommandFailure.Timeout {
    /// Whether it is the task's (its call's) timeout, not the command's own.
    var isTask: Bool {
        if case .task = self { return true }
        return false
    }
}

/// A precondition that didn't hold: its message (go-task's `msg:`), or its test.
///
/// Threading: a value type; safe to pass between threads.
public struct PreconditionFailure: Error, Sendable, CustomStringConvertible {
    /// What the Taskfile says about it.
    public var message: String
    /// How the test ended.
    public var result: CommandResult
    /// `precondition not met: MESSAGE`, and why the test couldn't run when it couldn't.
    public var description: String {
        if case .failedToStart(let reason) = result { return Self.describe(message, unrunnable: reason) }
        return Self.describe(message, unrunnable: nil)
    }

    /// `precondition not met: MESSAGE`, with why the test couldn't run when it couldn't (a run's
    /// failure and a dry run's verdict say it alike).
    static func describe(_ message: String, unrunnable reason: String?) -> String {
        "precondition not met: \(message)" + (reason.map { " (\($0))" } ?? "")
    }
}

/// An asynchronous job that runs shell commands in sequence. It holds a slot of its queue while
/// a command runs, but no thread: the process monitor completes it.
///
/// Commands with `if:` run their test first and are skipped when it fails. `defer:` commands are
/// kept as they are reached and run when the others have ended — after the last, after a
/// failure, or after a cancellation — the last reached first; their own failures don't change
/// the job's result (go-task's rules).
///
/// Cancelling it terminates the running command's process group; deferred commands still run,
/// and a cancellation doesn't stop them (they are the task's clean-up).
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
        /// `if:` — a test run first, after templating; the step is skipped when it fails.
        public var condition: String?
        /// For a `defer:` command: its command line given the failed command's exit status
        /// (`nil` when none failed). It runs when the other steps have ended.
        public var deferred: (@Sendable (Int32?) throws -> String)?
        /// `timeout:` — how long it (with its test) may run: then it is stopped and fails with
        /// exit code 124 (a deferred command's is stopped and ignored).
        public var timeout: GoDuration?
        /// Not a command: the place of the task's k-th deferred call, noted when reached.
        public var deferredCall: Int?

        init(
            command: String,
            ignoresError: Bool = false,
            precondition: String? = nil,
            deferred: (@Sendable (Int32?) throws -> String)? = nil,
            deferredCall: Int? = nil
        ) {
            self.command = command
            self.ignoresError = ignoresError
            self.precondition = precondition
            self.deferred = deferred
            self.deferredCall = deferredCall
        }
    }

    /// The steps: preconditions first, then the commands.
    public let steps: [Step]
    /// The commands, after templating (deferred ones as they run when nothing failed).
    public var commands: [String] { steps.filter { $0.precondition == nil && $0.deferredCall == nil }.map(\.command) }

    /// The deferred calls (by number) whose places the commands reached, in the order reached:
    /// the ones the host makes once the job has ended.
    public var reachedDeferredCalls: [Int] { running.withLock { $0.reachedCalls } }

    /// The exit status of the command that failed the job (124 for one that ran out of time), as
    /// its deferred commands see it in `{{.EXIT_CODE}}`; `nil` while none has.
    public var failedExitCode: Int32? { running.withLock { $0.failedExitCode } }

    /// For a task made of a deferred command (``TaskOptions/isDeferredCommand``): where its
    /// `{{.EXIT_CODE}}` comes from, the job that failed its task. Set before the job starts.
    var inheritedExitCode: (@Sendable () -> Int32?)? {
        get { running.withLock { $0.inheritedExitCode } }
        set { running.withLock { $0.inheritedExitCode = newValue } }
    }
    private let directory: String
    private let environment: [String: String]
    private let output: TaskOutput
    private let runner: any CommandRunner
    /// go-task's `interactive: true`: the commands (not the tests) run on kiln's terminal.
    private let isInteractive: Bool
    /// How long the commands may run all together (the `timeout:` of the task's call).
    private let timeout: GoDuration?

    /// What runs now, and what is deferred.
    private struct Running {
        /// Each process started gets the next number; `finished` is the last that ended, so a
        /// completion that beats the handle's storing doesn't leave a stale handle behind.
        var started = 0
        var finished = 0
        var handle: RunningCommand?
        /// Whether `handle` is a deferred command (a cancellation leaves it running).
        var handleIsDeferred = false
        /// The `defer:` steps reached, by index, in order; the deferred calls reached.
        var deferred: [Int] = []
        var reachedCalls: [Int] = []
        /// Steps begun so far; the number of the one whose `timeout:` runs now, if it has one, and
        /// whether that ran out.
        var stepsBegun = 0
        var boundedStep: Int?
        var stepTimedOut = false
        /// Whether the job's own ``CommandJob/timeout`` ran out.
        var jobTimedOut = false
        /// See ``CommandJob/failedExitCode`` and ``CommandJob/inheritedExitCode``.
        var failedExitCode: Int32?
        var inheritedExitCode: (@Sendable () -> Int32?)?
    }
    private let running = HostMutex(Running())

    init(
        steps: [Step],
        directory: String,
        environment: [String: String],
        output: TaskOutput,
        runner: any CommandRunner,
        isInteractive: Bool = false,
        timeout: GoDuration? = nil
    ) {
        self.steps = steps
        self.directory = directory
        self.environment = environment
        self.output = output
        self.runner = runner
        self.isInteractive = isInteractive
        self.timeout = timeout
        super.init()
    }

    /// `true`: the job finishes when its last command exits.
    public override var isAsynchronous: Bool { true }

    /// Starts the first command.
    public override func start() throws(JobError) {
        guard try beginExecution() else { return }
        if let timeout {
            Self.after(timeout) { [weak self] in
                guard let self else { return }
                // The commands stop; the deferred ones still run, as after a failure.
                running.withLock { running -> RunningCommand? in
                    running.jobTimedOut = true
                    return running.handleIsDeferred ? nil : running.handle
                }?.terminate()
            }
        }
        run(0)
    }

    /// Runs `body` once `duration` has passed, on the timers' thread.
    private static func after(_ duration: GoDuration, _ body: @escaping @Sendable () -> Void) {
        timers.run(after: .nanoseconds(Int64(max(0, min(duration.seconds, 9_223_372_036)) * 1e9)), body)
    }

    /// The thread the `timeout:` clocks of every command run on: one for the process, however
    /// many commands have one (each is a block waiting its time, not a thread).
    private static let timers = SerialThread()

    /// Begins the step at `index` (a test and its command, or a deferred command): when it has a
    /// `timeout:`, the clock starts, and whatever of it runs then is stopped.
    private func beginStep(_ index: Int) {
        let number = running.withLock { running -> Int in
            running.stepsBegun += 1
            running.boundedStep = steps[index].timeout == nil ? nil : running.stepsBegun
            running.stepTimedOut = false
            return running.stepsBegun
        }
        guard let timeout = steps[index].timeout else { return }
        Self.after(timeout) { [weak self] in
            guard let self else { return }
            running.withLock { running -> RunningCommand? in
                guard running.boundedStep == number else { return nil }
                running.stepTimedOut = true
                return running.handle
            }?.terminate()
        }
    }

    /// Ends the step begun last: which timeout, if any, stopped it.
    private func endStep(_ index: Int) -> CommandFailure.Timeout? {
        let (stepTimedOut, jobTimedOut) = running.withLock { running -> (Bool, Bool) in
            defer {
                running.boundedStep = nil
                running.stepTimedOut = false
            }
            return (running.boundedStep != nil && running.stepTimedOut, running.jobTimedOut)
        }
        if stepTimedOut, let limit = steps[index].timeout { return .command(limit) }
        if jobTimedOut, steps[index].deferred == nil, let timeout { return .task(timeout) }
        return nil
    }

    /// The job's own timeout ran out: nothing more starts.
    private var hasTimedOut: Bool { running.withLock { $0.jobTimedOut } }

    /// A `dir:` that doesn't exist yet is made before the first command — after the
    /// preconditions, as go-task does (the plan checked that it is inside the project, or that
    /// the task allows outside). `false` when it can't be made: the job has failed.
    private func makeDirectoryIfNeeded() -> Bool {
        guard !Files.isDirectory(directory), let failure = Self.makeDirectories(directory) else { return true }
        runDeferred(failure: failure, exitCode: nil)
        return false
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

    /// Why a test can't run in `directory`.
    static func missing(_ directory: String) -> String { "its directory \(directory) doesn't exist yet" }

    /// The task's directory couldn't be made.
    struct DirectoryFailure: Error, CustomStringConvertible {
        var directory: String
        var reason: String
        var description: String { "can't make its directory \(directory): \(reason)" }
    }

    /// Runs the steps from `start` on: `defer:`s are set aside, a test runs before its command.
    private func run(_ start: Int) {
        var index = start
        while index < steps.count, steps[index].deferred != nil || steps[index].deferredCall != nil {
            let step = steps[index]
            running.withLock { running in
                if let call = step.deferredCall {
                    running.reachedCalls.append(call)
                } else {
                    running.deferred.append(index)
                }
            }
            index += 1
        }
        guard index < steps.count, !isCancelled else {
            runDeferred(failure: nil, exitCode: nil)
            return
        }
        if hasTimedOut, let timeout {
            // Between two commands: the next one would be stopped at once.
            let failure = CommandFailure(
                command: steps[index].command,
                result: .signaled(SIGTERM),
                timeout: .task(timeout)
            )
            runDeferred(failure: failure, exitCode: 124)
            return
        }
        let step = steps[index]
        beginStep(index)
        guard let condition = step.condition else {
            runCommand(index)
            return
        }
        // go-task runs the test without the command's `set:`/`shopt:`, its output unshown, in
        // the directory made for the commands. A timeout bounds the test and the command together.
        guard makeDirectoryIfNeeded() else { return }
        launch(condition, output: TaskOutput(), isDeferred: false) { [self, index] result in
            if running.withLock({ ($0.boundedStep != nil && $0.stepTimedOut) || $0.jobTimedOut }) {
                commandEnded(index, result: result, testTimedOut: true)
            } else if result.succeeded, !isCancelled {
                runCommand(index)
            } else {
                _ = endStep(index)
                run(index + 1)
            }
        }
    }

    private func runCommand(_ index: Int) {
        let step = steps[index]
        if let message = step.precondition, !Files.isDirectory(directory) {
            // go-task tests preconditions before it makes the directory: in one that isn't there
            // they fail.
            try? finish(error: PreconditionFailure(message: message, result: .failedToStart(Self.missing(directory))))
            return
        }
        if step.precondition == nil, !makeDirectoryIfNeeded() { return }
        launch(step.command, output: output, isDeferred: false, interactive: step.precondition == nil) {
            [self] result in
            commandEnded(index, result: result)
        }
    }

    /// The step at `index` ended with `result` (its test's, when a timeout stopped the test): on
    /// to the next step, or to the deferred commands after a failure.
    private func commandEnded(_ index: Int, result: CommandResult, testTimedOut: Bool = false) {
        let step = steps[index]
        let timeout = endStep(index)
        // A command's `ignore_error:` covers its own timeout (go-task's rule), not its task's,
        // nor its test's (go-task fails the task for a test that ran out of time).
        let ignored = step.ignoresError && !testTimedOut && !(timeout.map(\.isTask) ?? false)
        if timeout == nil && result.succeeded || ignored {
            run(index + 1)
            return
        }
        let failure: any Error =
            if let message = step.precondition, timeout == nil {
                PreconditionFailure(message: message, result: result)
            } else {
                CommandFailure(command: step.command, result: result, timeout: timeout)
            }
        // `{{.EXIT_CODE}}` for the deferred commands: the status it exited with; 124 when it ran
        // out of time (timeout(1)'s convention, as go-task).
        let exitCode: Int32? =
            switch result {
            case _ where timeout != nil: 124
            case .exited(let status): status
            case .signaled(let signal): 128 + signal
            case .failedToStart: nil
            }
        runDeferred(failure: failure, exitCode: exitCode)
    }

    /// Runs the deferred commands reached, the last first, then finishes with `failure`.
    private func runDeferred(failure: (any Error)?, exitCode: Int32?) {
        let (next, inherited) = running.withLock { running -> (Int?, (@Sendable () -> Int32?)?) in
            if failure != nil, running.failedExitCode == nil { running.failedExitCode = exitCode }
            return (running.deferred.popLast(), running.inheritedExitCode)
        }
        let exitCode = exitCode ?? inherited?()
        guard let index = next else {
            if let failure { try? finish(error: failure) } else { try? finish() }
            return
        }
        let command: String
        do {
            command = try steps[index].deferred?(exitCode) ?? steps[index].command
        } catch {
            output.write(line: "kiln: a deferred command can't be rendered: \(error)")
            runDeferred(failure: failure, exitCode: exitCode)
            return
        }
        // Its failure is shown by its output, and changes nothing (go-task ignores it too).
        beginStep(index)
        launch(command, output: output, isDeferred: true, interactive: true) { [self] _ in
            if case .command(let limit)? = endStep(index) {
                output.write(line: "kiln: a deferred command ran out of time (\(limit)) and was stopped: \(command)")
            }
            runDeferred(failure: failure, exitCode: exitCode)
        }
    }

    /// Starts `command`, keeping its handle for ``cancel()``. In an interactive task, a command
    /// (`interactive`; not a test) gets the terminal.
    private func launch(
        _ command: String,
        output: TaskOutput,
        isDeferred: Bool,
        interactive: Bool = false,
        completion: @escaping @Sendable (CommandResult) -> Void
    ) {
        let number = running.withLock { running -> Int in
            running.started += 1
            return running.started
        }
        let ended: @Sendable (CommandResult) -> Void = { [self] result in
            running.withLock { running in
                running.finished = number
                running.handle = nil
            }
            completion(result)
        }
        let handle =
            interactive && isInteractive
            ? runner.runInteractive(command, directory: directory, environment: environment, completion: ended)
            : runner.run(command, directory: directory, environment: environment, output: output, completion: ended)
        let cancelledMeanwhile = running.withLock { running -> Bool in
            guard running.started == number, running.finished < number else { return false }
            running.handle = handle
            running.handleIsDeferred = isDeferred
            // A timeout may have run out while it was starting.
            return (isCancelled || running.jobTimedOut) && !isDeferred
                || running.boundedStep != nil && running.stepTimedOut
        }
        if cancelledMeanwhile { handle.terminate() }
    }

    /// Cancels the job and terminates its running command (not a deferred one: the clean-up runs).
    public override func cancel() {
        super.cancel()
        running.withLock { $0.handleIsDeferred ? nil : $0.handle }?.terminate()
    }
}
