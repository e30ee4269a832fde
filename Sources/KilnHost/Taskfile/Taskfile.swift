import KilnPaths
import KilnPluginAPI

/// A loaded Taskfile, with every include merged in: what the user wrote, resolved and checked.
///
/// Names of tasks from an include carry its namespace (`lib:compile`). Every element keeps the
/// place it was written, so later stages can point at it.
///
/// Threading: a value type; safe to pass between threads.
public struct Taskfile: Sendable {
    /// The main Taskfile's absolute path.
    public var path: String
    /// The project root: the main Taskfile's directory.
    public var root: String
    /// The `version:` of the main file.
    public var version: String
    /// Resources defined with a width (user-defined queues, and overrides of built-in widths).
    public var resources: [ResourceDefinition]
    /// Every task, in the order written (includes after the file that includes them). From the
    /// Taskfile cache, each is decoded when first read.
    public var tasks: TaskList
    /// Every file read (the main one first), for messages and the Taskfile cache.
    public var files: [String]
    /// `plugins:` — plugins to load, each a name (looked up on the plugin path) or a path (with a
    /// `/`, relative to the Taskfile that names it; made absolute), from every file.
    public var plugins: [Located<String>] = []
    /// Identifies the Taskfile files and their contents as the Taskfile cache recorded them (a
    /// checksum of its header), when the model came from or went to the cache; `nil` otherwise.
    /// Not part of the model: what is keyed on it (``BoundaryMemo``) is forgotten when it changes.
    public var contentIdentity: UInt64?
    /// `hooks:` — git hook names (`pre-commit`, …) and the tasks each runs, from the main file.
    public var hooks: [String: [Located<String>]] = [:]
    /// `output: {group: {begin, end, error_only}}` of the main file.
    public var outputGroup: OutputGroup?
    /// The values of the variables written `secret: true`, hidden in what kiln prints.
    public var secrets = SecretMask()
    /// `interval:` of the main file: how often `kiln run --watch` looks for changes (go-task's
    /// watch interval); `nil`: the default, 100 ms.
    public var watchInterval: GoDuration?
    /// The `remote:` section: the remote cache runs use when the command line and the
    /// environment name none (a kiln extension; go-task has no such key).
    public var remote: RemoteSettings?

    /// The task called `name`, or answering to it as an alias.
    public func task(named name: String) -> TaskDefinition? {
        // An alias first (the last task that claims it), then a name: the outline's rule.
        tasks.outline.position(answeringTo: name).map { tasks[$0] }
    }

    /// Whether one of the tasks `names` (or aliases) says `watch: true` (go-task then watches it).
    func watches(_ names: [String]) -> Bool {
        let outline = tasks.outline
        return names.contains { outline.position(answeringTo: $0).map { outline.flags[$0].contains(.watches) } == true }
    }

    /// Every alias (`aliases:`, with its include namespace) and the task it names: the last task
    /// that claims it.
    public var aliases: [String: String] { tasks.outline.aliases }
}

/// `resources: { link: 1 }` — a queue and its width.
///
/// Threading: a value type; safe to pass between threads.
public struct ResourceDefinition: Sendable, Hashable {
    /// The resource's name (`link`, or a built-in such as `cpu` to change its width).
    public var name: String
    /// How many jobs may hold it at once.
    public var width: Int
    /// Where it is defined.
    public var location: SourceLocation
}

/// A name written somewhere, with its place (a dependency, a resource claim).
///
/// Threading: a value type; safe to pass between threads.
public struct Located<Value: Sendable & Hashable>: Sendable, Hashable {
    /// The value.
    public var value: Value
    /// Where it was written.
    public var location: SourceLocation
}

/// One task of a Taskfile.
///
/// A value type whose fixed fields live in one shared, immutable storage object: copying a task
/// (into a plan, a closure, an array) costs a reference, which matters for 10k-task Taskfiles.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskDefinition: Sendable {
    /// How the task's jobs are made.
    public enum Each: String, Sendable {
        /// One job for the whole task.
        case none
        /// One job per file matched by `sources`.
        case sources
    }

    /// The fixed fields and the lists, in one object shared by copies (``TaskStorage``).
    private let shared: TaskStorage.Shared
    private var storage: TaskStorage { shared.storage }

    /// `deps:`, resolved to full task names — plus, for a step of a task's `cmds` that calls
    /// another (`- task: X`), the step before it and the task it calls (see ``calls``).
    public var dependencies: [Located<String>]
    /// The tasks among ``dependencies`` that this one calls (`- task:` in `cmds`), rather than
    /// depends on: each starts only once the others have succeeded (the commands before the
    /// call have run), unless something else needs it first. Empty for most tasks. (In the
    /// storage: a copy of a task costs no more for it.)
    public var calls: [Located<String>] { storage.rare?.calls ?? [] }

    /// The full name, with include namespace.
    public var name: String { storage.name }
    /// Where the task's key is.
    public var location: SourceLocation { storage.location }
    /// `desc:`.
    public var summary: String? { storage.rare?.summary }
    /// `cmds:` of a shell task, before templating.
    public var commands: [Located<String>] { storage.commands }
    /// `sources:` glob patterns, relative to the task's directory, before templating.
    public var sources: [Located<String>] { storage.sources }
    /// `sources:` with templates rendered (when the Taskfile was loaded: they can't use the
    /// per-source variables): the patterns a changed file is matched against.
    public var renderedSources: [String] { storage.renderedSources ?? storage.sourceTexts }
    /// `generates:` paths or patterns, relative to the task's directory, before templating.
    public var generates: [Located<String>] { storage.generates }
    /// ``commands``, ``sources`` and ``generates`` as views of the task's packed lists, for
    /// reading in order without making an array (each read of the arrays makes one).
    var commandsInPlace: LocatedList { storage.commandsInPlace }
    var sourcesInPlace: LocatedList { storage.sourcesInPlace }
    var generatesInPlace: LocatedList { storage.generatesInPlace }
    /// Variables visible to the task's templates: the file's `vars`, then the task's own. Tasks
    /// without `vars:` share their file's dictionary. ``templateVariables`` adds `TASK`. Kept
    /// beside the storage, not in it, so the loader can lay the environment under them without
    /// making the task again.
    public private(set) var variables: [String: TemplateValue]
    /// Environment variables the task's commands get, beside the host's.
    public var environment: [String: String] { storage.environment }
    /// `dir:`, absolute, after templating.
    public var directory: String { storage.directory }
    /// `resources:` claims as written (built-ins `cpu`, `disk`, `net:<host>`, or user-defined).
    public var resources: [Located<String>] { storage.rare?.resources ?? [] }
    /// `each:`.
    public var each: Each { storage.each }
    /// `batch:` — how many jobs of an `each:` task exist at once.
    public var batchSize: Int? { storage.rare?.batchSize }
    /// `plugin:` — the task kind, `shell` when the task has `cmds`.
    public var kind: Located<String> {
        storage.rare?.kind ?? Located(value: ShellTaskKind.kindName, location: storage.location)
    }
    /// `with:` — a plugin task's configuration; `nil` for shell tasks, whose configuration is
    /// made from ``commands`` when asked for (it would double the memory of a large Taskfile).
    public var pluginConfiguration: ConfigurationValue? { storage.rare?.pluginConfiguration }
    /// `allow-outside-root: true` lets the task write outside the project root.
    public var allowsOutsideRoot: Bool { storage.rare?.allowsOutsideRoot ?? false }
    /// `depfile:` — a Makefile-syntax file the command writes (`cc -MD -MF FILE`) naming the
    /// files it read; they become the job's inputs next time. Before templating.
    public var depfile: String? { storage.depfile?.value }
    /// `depfile:` with its place.
    public var locatedDepfile: Located<String>? { storage.depfile }
    /// `keep-depfile: true` leaves the depfile in place after reading it (like make), so the
    /// files it names are known from the files alone — remote-cache keys include them.
    public var keepsDepfile: Bool { storage.rare?.keepsDepfile ?? false }
    /// The file the task was defined in.
    public var file: String { storage.file }
    /// go-task's settings: aliases, `internal`, `platforms`, `prompt`, `preconditions`, ….
    public var options: TaskOptions { storage.options?.options ?? TaskOptions.defaults }
    /// Whether the task runs in this run: its `platforms:` allow this machine and its `if:` held.
    /// When not, it is skipped with its dependencies (go-task's rule).
    public var runsHere: Bool { storage.runsHere }
    /// `method: none`: the task runs every time.
    public var runsEveryTime: Bool { storage.options?.options.runsEveryTime ?? false }
    /// `internal: true`.
    public var isInternal: Bool { storage.options?.options.isInternal ?? false }
    /// `aliases:`.
    public var aliases: [String] { storage.options?.options.aliases ?? [] }
    /// The task this is a piece of (an instance called with variables, or a step between calls):
    /// see ``TaskOptions/partOf``.
    public var partOf: String? { storage.options?.options.partOf }
    /// ``TaskOptions/guardedBy`` (read without copying the options: a run asks for every job).
    var guardedBy: String? { storage.options?.options.guardedBy }
    /// Whether it has `prompt:`s (read without copying the options).
    var hasPrompts: Bool { !(storage.options?.options.prompts.isEmpty ?? true) }
    /// Whether it has `status:` tests (read without copying the options).
    var hasStatusChecks: Bool { !(storage.options?.options.statusChecks.isEmpty ?? true) }
    /// ``TaskOptions/callTest`` (read without copying the options).
    var callTest: Located<String>? { storage.options?.options.callTest }
    /// ``TaskOptions/recordsGuard`` (read without copying the options).
    var recordsGuard: Bool { storage.options?.options.recordsGuard ?? false }
    /// ``TaskOptions/guardedWork`` (read without copying the options).
    var guardedWork: [String] { storage.options?.options.guardedWork ?? [] }
    /// Whether planning the task has anything to check (templates, deferred mistakes, required
    /// variables): most tasks of a large Taskfile have none.
    var hasPlanChecks: Bool { storage.hasPlanChecks }
    /// Whether the task says any of what few tasks do (``calls``, ``summary``, ``resources``,
    /// ``batchSize``, a ``kind`` of its own, ``pluginConfiguration``, ``allowsOutsideRoot``, a
    /// depfile), or is defined in a ``file`` other than its key's, or has lists written in
    /// another file: those have a second object; the others share none.
    var hasRareFields: Bool { storage.rare != nil }

    /// Creates a task.
    public init(
        name: String,
        location: SourceLocation,
        summary: String?,
        dependencies: [Located<String>],
        calls: [Located<String>] = [],
        commands: [Located<String>],
        sources: [Located<String>],
        generates: [Located<String>],
        variables: [String: TemplateValue],
        renderedSources: [String]? = nil,
        environment: [String: String],
        directory: String,
        resources: [Located<String>],
        each: Each,
        batchSize: Int?,
        kind: Located<String>,
        pluginConfiguration: ConfigurationValue?,
        allowsOutsideRoot: Bool,
        depfile: Located<String>? = nil,
        keepsDepfile: Bool = false,
        file: String,
        options: TaskOptions? = nil
    ) {
        self.dependencies = dependencies
        self.variables = variables
        var entries: [Located<String>] = []
        entries.reserveCapacity(commands.count + sources.count + generates.count)
        entries += commands
        entries += sources
        entries += generates
        let packs = TaskStorage.canPack(entries, in: location.file)
        let ownKind = kind == Located(value: ShellTaskKind.kindName, location: location) ? nil : kind
        let ownFile = file == location.file ? nil : file
        var rare: TaskStorage.Rare?
        if !calls.isEmpty || summary != nil || !resources.isEmpty || batchSize != nil || ownKind != nil
            || pluginConfiguration != nil || allowsOutsideRoot || depfile != nil || keepsDepfile || ownFile != nil
            || !packs
        {
            rare = TaskStorage.Rare(
                calls: calls,
                summary: summary,
                resources: resources,
                batchSize: batchSize,
                kind: ownKind,
                pluginConfiguration: pluginConfiguration,
                allowsOutsideRoot: allowsOutsideRoot,
                depfile: depfile,
                keepsDepfile: keepsDepfile,
                file: ownFile,
                unpackedEntries: packs ? nil : entries
            )
        }
        // The defaults are no box at all: most tasks have none.
        let options = options.flatMap { $0 == TaskOptions.defaults ? nil : $0 }
        let fields = TaskStorage.Fields(
            name: name,
            location: location,
            sourcesStart: Int32(commands.count),
            generatesStart: Int32(commands.count + sources.count),
            entryCount: Int32(entries.count),
            each: each,
            runsHere: TaskOptions.allows(options?.platforms) && options?.conditionHolds != false,
            // Something the planner checks: a template in what the task runs, a deferred
            // mistake, a required variable.
            hasPlanChecks: options != nil || pluginConfiguration != nil
                || commands.contains { TextTemplate.hasActions($0.value) }
                || generates.contains { TextTemplate.hasActions($0.value) }
                || depfile.map { TextTemplate.hasActions($0.value) } == true,
            renderedSources: renderedSources.flatMap { $0 == sources.map(\.value) ? nil : $0 },
            environment: environment,
            directory: directory,
            options: options.map(TaskOptionsBox.init),
            rare: rare
        )
        shared = TaskStorage.Shared(storage: TaskStorage.make(fields, entries: entries))
    }

    /// One step of this task's `cmds` when they call other tasks: a task named `name` that runs
    /// `commands` (with their settings) after `dependencies`, calling `calls`. The first step
    /// also checks the preconditions; the last (`isLast`, named as the task) keeps everything
    /// else that makes the task what it is — its aliases, description, prompts, requirements.
    /// With `guarding` (the first step's name, and what the others run), the task declares
    /// sources, outputs or `status:` and is decided whole by its first step: see
    /// ``TaskOptions/guardedWork``. `callTest` is the shell test of the call that starts the step
    /// (``TaskOptions/callTest``).
    func step(
        named name: String,
        commands range: Range<Int>,
        dependencies: [Located<String>],
        calls: [Located<String>],
        isFirst: Bool,
        isLast: Bool,
        guarding: (first: String, work: [String])? = nil,
        callTest: Located<String>? = nil
    ) -> TaskDefinition {
        let own = options
        var stepOptions = isLast ? own : TaskOptions()
        if !isLast {
            stepOptions.partOf = own.partOf ?? self.name
            stepOptions.label = own.label ?? self.name
            stepOptions.isSilent = own.isSilent
            stepOptions.ignoresError = own.ignoresError
            stepOptions.runsEveryTime = own.runsEveryTime
            stepOptions.shellOptions = own.shellOptions
        }
        stepOptions.preconditions = isFirst ? own.preconditions : []
        stepOptions.commandOptions = own.commandOptions.isEmpty ? [] : Array(own.commandOptions[range])
        stepOptions.callTest = callTest
        // A task decided whole (``TaskOptions/guardedWork``): every piece has its files (its
        // commands may loop over them), the first decides, the others follow.
        if let guarding {
            stepOptions.fingerprint = own.fingerprint
            stepOptions.statusChecks = isFirst ? own.statusChecks : []
            stepOptions.guardedWork = isFirst ? guarding.work : []
            stepOptions.guardedBy = isFirst ? nil : guarding.first
            stepOptions.recordsGuard = isLast
        }
        return TaskDefinition(
            name: name,
            location: location,
            summary: isLast ? summary : nil,
            dependencies: dependencies,
            calls: calls,
            commands: Array(commands[range]),
            sources: guarding == nil ? [] : sources,
            generates: guarding == nil ? [] : generates,
            variables: variables,
            renderedSources: guarding == nil ? nil : renderedSources,
            environment: environment,
            directory: directory,
            resources: resources,
            each: .none,
            batchSize: nil,
            kind: kind,
            pluginConfiguration: nil,
            allowsOutsideRoot: allowsOutsideRoot,
            file: file,
            options: stepOptions
        )
    }

    /// The name kiln gives the `number`-th piece of `task` (1-based): a step between its calls,
    /// or the body of a task with deferred calls — `build #2`. The one place that names them.
    static func pieceName(_ task: String, _ number: Int) -> String { "\(task) #\(number)" }

    /// The pieces kiln cut the task `name` into, in order — `name #1`, `name #2`, … up to the
    /// first number `find` finds nothing under — as `find` gives them (a position, a
    /// definition). The one place that looks them up.
    static func pieces<Piece>(of name: String, _ find: (String) -> Piece?) -> [Piece] {
        var found: [Piece] = []
        while let piece = find(pieceName(name, found.count + 1)) { found.append(piece) }
        return found
    }

    /// The two pieces of a task with deferred calls (`defer: {task: …}`, resolved to `called`, in
    /// the order written): the body, `bodyName` (`T #1`, or after the steps between calls), which
    /// is the task's last piece under another name — its
    /// commands (each deferred call's place among them), sources, everything that runs — and
    /// the end, named as the task, which waits for the body and then the calls it reached, and
    /// keeps what makes the task what it is to others (its aliases, description, prompts,
    /// requirements). See ``TaskOptions/deferralBody``.
    func splitForDeferredCalls(_ called: [Located<String>], bodyName: String) -> (
        body: TaskDefinition, end: TaskDefinition
    ) {
        let body = copy(named: bodyName, summary: nil, options: bodyOptions)
        var endOptions = options
        endOptions.deferralBody = bodyName
        endOptions.commandOptions = []
        endOptions.preconditions = []
        endOptions.statusChecks = []
        endOptions.isInteractive = false
        endOptions.timeout = nil
        // The body (the task's last piece under another name) follows or records a guard.
        endOptions.guardedBy = nil
        endOptions.recordsGuard = false
        let end = commandless(
            dependencies: [Located(value: bodyName, location: location)] + called,
            calls: called,
            options: endOptions
        )
        return (body, end)
    }

    /// The two tasks a task whose `if:` is a shell test (``TaskOptions/taskTest``) is made of: its
    /// body, `bodyName` (`T [if]`) — everything that runs: its dependencies, commands, files —
    /// and the task named `T`, which calls the body when the test succeeds
    /// (``TaskOptions/callTest``) and keeps what makes the task what it is to others (its
    /// aliases, description, prompts, requirements). So the test runs when the task is reached,
    /// before its dependencies, as in go-task; when it fails, none of the task runs, and it
    /// counts as up to date.
    func splitForCondition(bodyName: String) -> (body: TaskDefinition, wrapper: TaskDefinition) {
        var bodyOptions = bodyOptions
        bodyOptions.taskTest = nil
        let body = copy(named: bodyName, summary: nil, options: bodyOptions)
        var wrapperOptions = TaskOptions()
        wrapperOptions.longSummary = options.longSummary
        wrapperOptions.aliases = options.aliases
        wrapperOptions.isInternal = options.isInternal
        wrapperOptions.label = options.label
        wrapperOptions.isSilent = options.isSilent
        wrapperOptions.prompts = options.prompts
        wrapperOptions.requiredVariables = options.requiredVariables
        wrapperOptions.partOf = options.partOf
        wrapperOptions.platforms = options.platforms
        wrapperOptions.shellOptions = options.shellOptions
        wrapperOptions.conditionalBody = bodyName
        wrapperOptions.watches = options.watches
        return (body, commandless(dependencies: [], calls: [], options: wrapperOptions))
    }

    /// The options of this task's body under another name (a deferral's, a condition's): all
    /// it runs, none of what names it to others — which its task, named as it, keeps.
    private var bodyOptions: TaskOptions {
        var bodyOptions = options
        bodyOptions.partOf = options.partOf ?? name
        bodyOptions.label = options.label ?? name
        bodyOptions.aliases = []
        bodyOptions.prompts = []
        bodyOptions.requiredVariables = []
        bodyOptions.longSummary = nil
        return bodyOptions
    }

    /// A task named as this one that runs no command of its own — the end of a deferral, a
    /// condition's task — waiting for `dependencies` and calling `calls`, with `options`.
    private func commandless(
        dependencies: [Located<String>],
        calls: [Located<String>],
        options: TaskOptions
    ) -> TaskDefinition {
        var task = TaskDefinition(
            name: name,
            location: location,
            summary: summary,
            dependencies: dependencies,
            calls: calls,
            commands: [],
            sources: [],
            generates: [],
            variables: variables,
            environment: environment,
            directory: directory,
            resources: [],
            each: .none,
            batchSize: nil,
            kind: kind,
            pluginConfiguration: nil,
            allowsOutsideRoot: allowsOutsideRoot,
            file: file,
            options: options
        )
        task.variables = variables
        return task
    }

    /// The same task with `errors` added to the mistakes reported when a run plans it (a
    /// dependency or a call that names no task, found once every file is read).
    func addingDeferredErrors(_ errors: [TaskOptions.DeferredError]) -> TaskDefinition {
        var changed = options
        changed.deferredErrors += errors
        return copy(named: name, summary: summary, options: changed)
    }

    /// The same task under `name`, with `summary` and `options`.
    private func copy(named name: String, summary: String?, options: TaskOptions) -> TaskDefinition {
        var copy = TaskDefinition(
            name: name,
            location: location,
            summary: summary,
            dependencies: dependencies,
            calls: calls,
            commands: commands,
            sources: sources,
            generates: generates,
            variables: variables,
            renderedSources: renderedSources,
            environment: environment,
            directory: directory,
            resources: resources,
            each: each,
            batchSize: batchSize,
            kind: kind,
            pluginConfiguration: pluginConfiguration,
            allowsOutsideRoot: allowsOutsideRoot,
            depfile: locatedDepfile,
            keepsDepfile: keepsDepfile,
            file: file,
            options: options
        )
        copy.variables = variables
        return copy
    }

    /// The same task with `variables` in place of its own (the loader's environment layer).
    func replacingVariables(_ variables: [String: TemplateValue]) -> TaskDefinition {
        var copy = self
        copy.variables = variables
        return copy
    }

    /// The variables of the job for `source` of an `each: sources` task: ``templateVariables``
    /// plus `source`, `source_dir`, `source_base`, `source_stem` and `output` (the first
    /// `generates` entry, rendered).
    public func templateVariables(forSource source: String) -> [String: TemplateValue] {
        var result = templateVariables
        setSourceVariables(&result, source: source)
        return result
    }

    /// Sets the per-source variables of `source` in `variables` (``templateVariables`` or an
    /// earlier source's): changing five entries in place, not copying the dictionary. `output`
    /// is "" when the first `generates` entry can't be rendered (the job's request says why).
    func setSourceVariables(_ variables: inout [String: TemplateValue], source: String) {
        variables["source"] = .string(source)
        variables["source_dir"] = .string(Path.directory(of: source))
        variables["source_base"] = .string(Path.lastComponent(source))
        variables["source_stem"] = .string(Path.stem(source))
        variables["output"] = .string("")
        if let first = generates.first {
            variables["output"] = .string(
                (try? TaskfileTemplates.render(first.value, variables: variables, at: nil)) ?? ""
            )
        }
    }

    /// `generates:` entries rendered with `variables`, or the first that can't be.
    func renderedOutputs(variables: [String: TemplateValue]) -> Result<[String], TemplateRenderError> {
        var outputs: [String] = []
        outputs.reserveCapacity(generatesInPlace.count)
        for output in generatesInPlace {
            do {
                outputs.append(try TaskfileTemplates.render(output.value, variables: variables, at: output.location))
            } catch {
                return .failure(error)
            }
        }
        return .success(outputs)
    }

    /// `depfile:` rendered for a job with `variables` (checked when its request was made).
    func renderedDepfile(variables: [String: TemplateValue]) -> String? {
        guard let depfile = storage.depfile else { return nil }
        return (try? TaskfileTemplates.render(depfile.value, variables: variables, at: depfile.location))
            ?? depfile.value
    }

    /// Two of `sources` whose jobs would write the same plain `generates:` path: a message naming
    /// both jobs and the path; `nil` when every job's outputs are its own.
    func outputClash(among sources: [String]) -> String? {
        let literal = generates.filter { GlobList.isPlainPath($0.value) }
        guard !literal.isEmpty, sources.count > 1 else { return nil }
        var variables = templateVariables
        func paths(_ variables: [String: TemplateValue]) -> [String] {
            literal.compactMap { try? TaskfileTemplates.render($0.value, variables: variables, at: nil) }.map(
                Path.normalize
            )
        }
        // By a 64-bit hash of the path (a few bytes a file, not the path), then confirmed.
        var owners: [Int: Int] = [:]
        owners.reserveCapacity(sources.count)
        for (position, source) in sources.enumerated() {
            setSourceVariables(&variables, source: source)
            for path in paths(variables) {
                if let other = owners.updateValue(position, forKey: path.hashValue) {
                    var earlier = variables
                    setSourceVariables(&earlier, source: sources[other])
                    if paths(earlier).contains(path) {
                        return
                            "jobs '\(name) \(sources[other])' and '\(name) \(source)' both declare the output \(path); only one job may write a file (name outputs after {{.source}}, not only {{.source_stem}})"
                    }
                }
            }
        }
        return nil
    }

    /// The files an `each: sources` task's patterns match now, relative to its directory, sorted
    /// and unique: a file two patterns match is one job.
    func sourceFiles() -> [String] {
        var ignored: [VisitedDirectory] = []
        return sourceFiles(visited: &ignored)
    }

    /// ``sourceFiles()``, noting in `visited` every directory the patterns read.
    func sourceFiles(visited: inout [VisitedDirectory]) -> [String] {
        Glob.files(matching: renderedSources, in: directory, visited: &visited)
    }

    /// The request for one job of the task: the whole task, or the file `source` of an
    /// `each: sources` task. A `generates:` or `depfile:` template that can't be rendered is
    /// the request's ``JobRequest/renderFailure``: the job fails with it.
    func jobRequest(source: String?) -> JobRequest {
        let variables = withFingerprint(source.map(templateVariables(forSource:)) ?? templateVariables, source: source)
        var failure: TemplateRenderError?
        var outputs: [String] = []
        switch renderedOutputs(variables: variables) {
        case .success(let rendered): outputs = rendered
        case .failure(let error): failure = error
        }
        if failure == nil, let depfile = storage.depfile {
            do {
                _ = try TaskfileTemplates.render(depfile.value, variables: variables, at: depfile.location)
            } catch {
                failure = error
            }
        }
        // `label:` names the task for people (a template; the name when it can't be rendered).
        let shown =
            storage.options?.options.label.flatMap { try? TaskfileTemplates.render($0, variables: variables, at: nil) }
            ?? name
        return JobRequest(
            taskName: name,
            label: source.map { "\(shown) \($0)" } ?? shown,
            inputs: source.map { [$0] } ?? renderedSources,
            outputs: outputs,
            resources: resources.map(\.value),
            variables: variables,
            directory: directory,
            environment: environment,
            templates: TaskfileTemplates.library,
            renderFailure: failure
        )
    }

    /// `variables` with go-task's `CHECKSUM` or `TIMESTAMP` when the task's templates name one.
    private func withFingerprint(_ variables: [String: TemplateValue], source: String?) -> [String: TemplateValue] {
        guard let fingerprint = storage.options?.options.fingerprint else { return variables }
        var result = variables
        result[fingerprint.variable] = fingerprintValue(fingerprint, source: source)
        return result
    }

    /// go-task's `CHECKSUM` — a digest of the job's source files' paths (relative to the task's
    /// directory) and contents — or `TIMESTAMP`, when the newest of them was last modified (the
    /// epoch when there are none).
    func fingerprintValue(_ fingerprint: TaskOptions.Fingerprint, source: String?) -> TemplateValue {
        let files = source.map { [$0] } ?? sourceFiles()
        switch fingerprint {
        case .checksum:
            var text = ""
            for file in files.sorted() {
                let content = (try? FileContent.hash(Path.join(directory, file)))?.description ?? "missing"
                text += file + "\u{0}" + content + "\n"
            }
            return .string(ContentHash.of(text).description)
        case .timestamp:
            var newest = (seconds: 0, nanoseconds: 0)
            for file in files {
                guard let modified = Files.modificationTime(Path.join(directory, file)) else { continue }
                if (modified.seconds, modified.nanoseconds) > (newest.seconds, newest.nanoseconds) { newest = modified }
            }
            return .time(TemplateTime.local(seconds: newest.seconds, nanoseconds: newest.nanoseconds))
        }
    }

    /// A task with no commands and no plugin: it only gathers its dependencies. It makes no job
    /// (nothing runs, nothing is counted); it is done when they are.
    public var isGroup: Bool {
        // A task whose `platforms:` exclude this machine, or whose `if:` said no, is skipped: it
        // is done at once. The pieces of a task decided whole have a verdict, even with no
        // command (``TaskOptions/guardedWork``).
        !runsHere
            || commandsInPlace.isEmpty && pluginConfiguration == nil && each == .none && kind.value == "shell"
                && storage.options.map {
                    $0.options.preconditions.isEmpty && $0.options.guardedWork.isEmpty && $0.options.guardedBy == nil
                } != false
    }

    /// The variables for rendering this task's templates: ``variables`` plus `TASK`.
    public var templateVariables: [String: TemplateValue] {
        var result = variables
        // go-task's special variables are its lowest layer: a variable of the Taskfile's wins.
        let shownName = storage.options?.options.partOf ?? name
        if result["TASK"] == nil { result["TASK"] = .string(shownName) }
        if result["ALIAS"] == nil { result["ALIAS"] = .string(shownName) }
        if result["TASK_DIR"] == nil { result["TASK_DIR"] = .string(directory) }
        result["staged_files"] = .string(Self.hookFiles)
        return result
    }

    /// `{{.staged_files}}`: in a run started by a git hook, the files the hook concerns (the staged
    /// files for pre-commit), relative to the project root, shell-quoted where needed and separated
    /// by spaces; empty otherwise. `kiln hook` passes them in a file named by
    /// `KILN_HOOK_FILES_FROM` (and, when short, in `KILN_HOOK_FILES`), one per line.
    static let hookFiles: String = {
        let named = System.variable("KILN_HOOK_FILES_FROM").flatMap { try? Files.readText($0) }
        guard let list = named ?? System.variable("KILN_HOOK_FILES") else { return "" }
        return list.split(separator: "\n").map { path in
            let safe = path.allSatisfy { $0.isLetter || $0.isNumber || "/._-+,:@".contains($0) }
            return safe
                ? String(path)
                : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
        }.joined(separator: " ")
    }()

    /// The configuration handed to the task's kind: `with:` for plugin tasks, a map holding `cmds`
    /// for shell tasks.
    public var configuration: ConfigurationValue {
        if let pluginConfiguration { return pluginConfiguration }
        // Most tasks have go-task's defaults: their commands are plain strings.
        guard let options = storage.options?.options else {
            let commandValues = commandsInPlace.map { ConfigurationValue(.scalar($0.value), at: $0.location) }
            return ConfigurationValue(
                .map([
                    (key: "cmds", keyLocation: location, value: ConfigurationValue(.list(commandValues), at: location))
                ]),
                at: location
            )
        }
        let commandOptions = options.commandOptions
        let commandValues = commands.enumerated().map { index, command in
            let text = ConfigurationValue(.scalar(command.value), at: command.location)
            let settings = index < commandOptions.count ? commandOptions[index] : CommandOptions()
            // `set:`/`shopt:` of the file, the task and the command: what goes before the command.
            let prefix = options.shellOptions.adding(settings.shellOptions).prefix
            guard settings != CommandOptions() || options.ignoresError || !prefix.isEmpty else { return text }
            // A map as go-task writes it: `{cmd: …, ignore_error: true, platforms: [...]}`.
            var entries: [(key: String, keyLocation: SourceLocation, value: ConfigurationValue)] = [
                ("cmd", command.location, text)
            ]
            if !prefix.isEmpty {
                entries.append(("prefix", command.location, ConfigurationValue(.scalar(prefix), at: command.location)))
            }
            if let condition = settings.condition {
                entries.append(
                    ("if", condition.location, ConfigurationValue(.scalar(condition.value), at: condition.location))
                )
            }
            if settings.isDeferred {
                entries.append(("defer", command.location, ConfigurationValue(.scalar("true"), at: command.location)))
            }
            if let timeout = settings.timeout {
                entries.append(
                    (
                        "timeout", command.location,
                        ConfigurationValue(.scalar(timeout.description), at: command.location)
                    )
                )
            }
            if let call = settings.deferredCall {
                entries.append(
                    ("defer_call", command.location, ConfigurationValue(.scalar(String(call)), at: command.location))
                )
            }
            if settings.ignoresError || options.ignoresError {
                entries.append(
                    ("ignore_error", command.location, ConfigurationValue(.scalar("true"), at: command.location))
                )
            }
            if let platforms = settings.platforms {
                entries.append(
                    (
                        "platforms", command.location,
                        ConfigurationValue(
                            .list(platforms.map { ConfigurationValue(.scalar($0), at: command.location) }),
                            at: command.location
                        )
                    )
                )
            }
            if let loop = settings.loop {
                let at = command.location
                func scalar(_ text: String) -> ConfigurationValue { ConfigurationValue(.scalar(text), at: at) }
                func list(_ items: [String]) -> ConfigurationValue {
                    ConfigurationValue(.list(items.map(scalar)), at: at)
                }
                let items: ConfigurationValue =
                    switch loop.items {
                    case .list(let values): list(values)
                    case .sources: scalar("sources")
                    case .generates: scalar("generates")
                    case .variable(let name, let split):
                        ConfigurationValue(
                            .map([("var", at, scalar(name))] + (split.map { [("split", at, scalar($0))] } ?? [])),
                            at: at
                        )
                    case .matrix(let rows):
                        ConfigurationValue(
                            .map([
                                (
                                    "matrix", at,
                                    ConfigurationValue(.map(rows.map { ($0.key, at, list($0.values)) }), at: at)
                                )
                            ]),
                            at: at
                        )
                    }
                entries.append(("for", at, items))
                entries.append(("as", at, scalar(loop.name)))
            }
            return ConfigurationValue(.map(entries), at: command.location)
        }
        var entries: [(key: String, keyLocation: SourceLocation, value: ConfigurationValue)] = [
            (key: "cmds", keyLocation: location, value: ConfigurationValue(.list(commandValues), at: location))
        ]
        if options.isInteractive {
            entries.append(("interactive", location, ConfigurationValue(.scalar("true"), at: location)))
        }
        if let timeout = options.timeout {
            entries.append(("timeout", location, ConfigurationValue(.scalar(timeout.description), at: location)))
        }
        if !options.preconditions.isEmpty {
            let items = options.preconditions.map { precondition in
                var fields: [(key: String, keyLocation: SourceLocation, value: ConfigurationValue)] = [
                    (
                        "sh", precondition.test.location,
                        ConfigurationValue(.scalar(precondition.test.value), at: precondition.test.location)
                    )
                ]
                if let message = precondition.message {
                    fields.append(
                        (
                            "msg", precondition.test.location,
                            ConfigurationValue(.scalar(message), at: precondition.test.location)
                        )
                    )
                }
                return ConfigurationValue(.map(fields), at: precondition.test.location)
            }
            entries.append(
                (key: "preconditions", keyLocation: location, value: ConfigurationValue(.list(items), at: location))
            )
        }
        return ConfigurationValue(.map(entries), at: location)
    }
}

/// go-task's `output: {group: {begin, end, error_only}}`: lines printed before and after each
/// job's output (templates, rendered with the job's variables), and whether a job's output is
/// shown only when it fails.
///
/// Threading: a value type; safe to pass between threads.
public struct OutputGroup: Sendable, Hashable {
    /// The line before (`::group::{{.TASK}}`); `nil`: none.
    public var begin: String?
    /// The line after; `nil`: none.
    public var end: String?
    /// `error_only: true`.
    public var showsOnlyFailures = false

    /// No lines; every output shown.
    public init() {}

    /// What goes before an output: the begin line, or nothing.
    public var header: String { begin.map { $0 + "\n" } ?? "" }
    /// What goes after an output (one that ends with a line break): the end line, or nothing.
    public var footer: String { end.map { $0 + "\n" } ?? "" }
}
