import KilnPaths
import KilnPluginAPI

/// Reads a Taskfile and its includes, checks everything, and returns the merged ``Taskfile`` —
/// or every mistake found, each with its file, line and column.
///
/// Threading: a value type; `load` may run on any thread, concurrently with other loads.
public struct TaskfileLoader: Sendable {
    /// A Taskfile up to this size is parsed once: the first pass gathers its tasks' entries (as
    /// the second pass would stream them, merge keys and all), decoded once the file's variables
    /// are. A larger one is parsed twice, and its tasks stream one at a time, so that a file of
    /// ten thousand tasks never holds them all as YAML nodes. (The second parse of a 1k-task file
    /// was ~25M instructions of a 145M load.)
    static let onePassLimit = 256 * 1024

    /// Resource names every project has: `cpu`, `disk` (one queue per storage device) and the
    /// `net` family (`net:<host>`, one queue per host).
    public static let builtInResources: Set<String> = ["cpu", "disk", "net", RemoteSettings.resource]
    /// The largest value a variable may have once its templates are filled in.
    public static let maximumValueSize = 1 << 20
    /// How deep includes may nest.
    public static let maximumIncludeDepth = 100
    /// How many files may be loaded through includes in all, counting a file each time it is
    /// included: a file included twice at each of thirty levels is a billion.
    public static let maximumIncludes = 10_000
    /// How many instances of tasks (called with variables) a Taskfile may make.
    public static let maximumInstances = 1000

    /// Variables every task's templates may use besides the Taskfile's own.
    public static let builtInVariables: Set<String> = [
        "ROOT_DIR", "TASK", "TASKFILE_DIR", "TASK_DIR", "ALIAS", "staged_files",
    ]

    /// Variables the templates of an `each: sources` task may use, set per source file.
    public static let eachVariables: Set<String> = ["source", "output", "source_dir", "source_base", "source_stem"]

    static let topLevelKeys: Set<String> = [
        "version", "vars", "env", "tasks", "includes", "resources", "plugins", "hooks", "silent", "output", "method",
        "run",
        "interval", "dotenv", "set", "shopt", "use_gitignore", "remote",
    ]

    /// The git hooks a Taskfile may map to tasks.
    public static let hookNames: [String] = ["pre-commit", "commit-msg", "pre-push", "post-merge", "post-checkout"]
    static let taskKeys: Set<String> = [
        "desc", "deps", "cmds", "sources", "generates", "vars", "env", "dir", "resources", "each", "batch",
        "plugin", "with", "allow-outside-root", "depfile", "keep-depfile", "summary", "aliases", "internal", "label",
        "silent", "ignore_error", "platforms", "prompt", "preconditions", "method", "run", "cmd", "requires", "dotenv",
        "status", "set", "shopt", "if", "prefix", "failfast", "interactive", "use_gitignore", "watch",
    ]

    /// A YAML boolean as the Taskfile reads one: `true`/`yes`/`on`, `false`/`no`/`off`, any case;
    /// `nil` for anything else.
    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "on": true
        case "false", "no", "off": false
        default: nil
        }
    }

    /// go-task keys kiln doesn't take yet, and what to do instead. Refused where they are written:
    /// never ignored.
    static let pendingKeys: [String: String] = [
        "requires_vars": "define the variable under 'vars:' for now"
    ]

    private let readFile: @Sendable (String) throws -> String
    private let usesCache: Bool
    private let context: TaskfileContext

    /// Creates a loader that reads files from disk and keeps the checked model in the project's
    /// Taskfile cache (`.kiln/taskfile.cache`; see ``TaskfileCache``).
    ///
    /// - Parameters:
    ///   - usesCache: Whether to read and write the cache.
    ///   - context: The environment, command-line variables and arguments the variables may read.
    public init(usesCache: Bool = true, context: TaskfileContext = .process) {
        self.readFile = { try Files.readText($0) }
        self.usesCache = usesCache
        self.context = context
    }

    /// Creates a loader that reads files through `readFile` — the seam tests use to feed files
    /// from memory — and never uses the cache.
    public init(readFile: @escaping @Sendable (String) throws -> String, context: TaskfileContext = .process) {
        self.readFile = readFile
        self.usesCache = false
        self.context = context
    }

    /// Every file the last load of the Taskfile at `path` (absolute) read, and each optional
    /// include it looked for and didn't find — what its model depends on — while the project's
    /// Taskfile cache is valid for it; `nil` otherwise.
    ///
    /// Threading: any thread.
    public static func filesRead(byTaskfileAt path: String, context: TaskfileContext = .process) -> [String]? {
        TaskfileCache.filesRead(taskfilePath: path, root: Path.directory(of: path), context: context)
    }

    /// Whether a name this load is for is none of `taskfile`'s tasks or aliases, and it has
    /// wildcard names: the name may need an instance the cached model doesn't hold.
    static func needsWildcardInstances(_ taskfile: Taskfile, context: TaskfileContext) -> Bool {
        guard case .tasks(let names) = context.dynamicScope, !names.isEmpty else { return false }
        let outline = taskfile.tasks.outline
        return outline.hasWildcardNames && names.contains { outline.position(answeringTo: $0) == nil }
    }

    /// Loads the Taskfile at `path` (absolute, or relative to the current directory).
    ///
    /// - Throws: ``TaskfileErrors`` with every mistake found.
    public func load(path: String) throws(TaskfileErrors) -> Taskfile {
        let absolute = Path.absolute(path, base: Path.currentDirectory)
        let root = Path.directory(of: absolute)
        if usesCache, let cached = TaskfileCache.load(taskfilePath: absolute, root: root, context: context),
            !Self.needsWildcardInstances(cached, context: context)
        {
            return cached
        }
        let session = LoadSession(root: root, readFile: readFile, context: context)
        let version = session.loadTree(
            PendingInclude(
                path: absolute,
                namespace: "",
                directory: session.root,
                inherited: context.specialVariables(rootTaskfile: absolute),
                chain: [],
                includedAt: nil,
                settings: FileSettings()
            )
        )
        // Instances are decoded while references are resolved; the environment layer is laid
        // under every task's variables after that.
        session.resolveReferences()
        session.addEnvironmentLayer()
        session.checkResources()
        session.checkCycles()
        session.checkOutputs()
        session.texts = [:]
        session.outlines = [:]
        session.lineIndex = [:]
        if !session.errors.isEmpty {
            // Every mistake at once: those waiting for a run to plan their task too.
            var seen = Set<String>()
            let waiting = session.tasks.flatMap(\.options.deferredErrors).filter {
                seen.insert("\($0.location.map(String.init(describing:)) ?? "") \($0.message)").inserted
            }
            throw TaskfileErrors(sorting: session.errors + waiting.map(\.error), fileOrder: session.files)
        }
        var taskfile = Taskfile(
            path: absolute,
            root: session.root,
            version: version ?? "3",
            resources: session.resources,
            tasks: TaskList(session.tasks),
            files: session.files,
            plugins: session.plugins,
            hooks: session.hooks
        )
        taskfile.outputGroup = session.outputGroup
        taskfile.watchInterval = session.watchInterval
        taskfile.remote = session.remote
        taskfile.secrets = session.secretMask()
        // A Taskfile with dynamic variables is loaded afresh each run: its values may change.
        if usesCache {
            if session.isVolatile {
                TaskfileCache.remove(root: root)
            } else {
                TaskfileCache.save(
                    &taskfile,
                    missingOptional: session.missingOptional,
                    requirements: session.requirementList
                )
            }
        }
        return taskfile
    }
}

/// The state of one load: files read so far, tasks, and the mistakes found.
private final class LoadSession {
    let root: String
    let readFile: @Sendable (String) throws -> String
    var errors: [TaskfileError] = []
    var files: [String] = []
    /// Optional includes that didn't exist: creating one must invalidate the cache.
    var missingOptional: [String] = []
    /// Each file's text while loading, to point errors at the exact character.
    var texts: [String: String] = [:]
    /// Each file's first-pass parse while loading: a file included under several names is parsed
    /// once.
    var outlines: [String: Result<Outline, YAMLSyntaxError>] = [:]

    /// A file's first pass: the document without its tasks, and a small file's tasks' entries,
    /// gathered as the second pass would stream them (``TaskfileLoader/onePassLimit``).
    struct Outline {
        var root: YAMLNode?
        /// `nil` for a large file: its tasks stream in a second pass.
        var tasks: [(key: YAMLNode, value: YAMLNode)]?
    }

    /// Each file's bytes and where its lines start, made on the first error located in it.
    var lineIndex: [String: TaskfileLocator] = [:]
    /// Files loaded through includes so far, counting each time a file is included.
    var includeCount = 0
    var tasks: [TaskDefinition] = []
    var taskIndex: [String: Int] = [:]
    var resources: [ResourceDefinition] = []
    var plugins: [Located<String>] = []
    var hooks: [String: [Located<String>]] = [:]
    /// The main file's `output: {group: …}`.
    var outputGroup: OutputGroup?
    var watchInterval: GoDuration?
    var remote: RemoteSettings?
    /// The main file's `vars:` as written, by name (see checkSharedVariableNames).
    var mainVariables: [String: (value: TemplateValue, location: SourceLocation)] = [:]
    /// The namespace each task's `deps` are resolved in.
    var namespaces: [String: String] = [:]
    /// The include names a namespace is made of, outermost first (`a:b:` → `[a, b]`); a flattened
    /// include adds none.
    var namespaceLevels: [String: [String]] = [:]
    /// What each file's tasks were decoded with, and where each task was: to decode a task again
    /// as an instance (called with variables).
    var contexts: [FileContext] = []
    var origins: [String: TaskOrigin] = [:]
    /// Dependencies with variables and `- task:` calls, by task, until resolved.
    var references: [String: TaskReferences] = [:]
    /// Tasks with `run: once`, and with `run: always`.
    var runsOnce = Set<String>()
    var runsAlways = Set<String>()
    /// Instances decoded or about to be, and how many.
    var instances = Set<String>()

    let context: TaskfileContext
    /// What outside the files the model depends on (the environment variables templates read,
    /// the command line's variables), by key.
    var requirements: [String: TaskfileRequirement] = [:]
    /// Environment variables the templates read that the Taskfile doesn't define: every task sees
    /// them, under its own variables (go-task's lowest layer).
    var environmentLayer: [String: TemplateValue] = [:]
    /// A dynamic variable (`sh:`) was run, or skipped: the model can't be cached.
    var isVolatile = false
    /// The names of the variables written `secret: true`, in any file or task; their values
    /// among the files' tasks, once instances are named; the instances whose names show a
    /// secret, and the masked names given (see ``shownInstanceName(_:variables:)``).
    var secretNames = Set<String>()
    var knownSecrets: SecretMask?
    var maskedInstanceNames: [String: String] = [:]
    var shownMaskedNames = Set<String>()
    /// Whether the task being decoded runs its dynamic variables; whether one was skipped; the
    /// tasks whose were (decoded again, running them, when a task this load is for needs them).
    var runsDynamicVariables = true
    var skippedDynamicVariables = false
    var lazyTasks = Set<String>()
    /// Aliases and the tasks they name; mistakes in what each task names (by index), reported
    /// when a run plans it; the variables each `run: once` task was first called with, where, by whom.
    var aliasMap: [String: String] = [:]
    var mistakes: [Int: [TaskOptions.DeferredError]] = [:]
    var onceCalls: [String: (variables: String, location: SourceLocation, caller: String)] = [:]
    /// How each instance was made, to decode it again.
    var instanceOrigins: [String: (origin: TaskOrigin, request: InstanceRequest)] = [:]
    let dynamicVariables: DynamicVariables
    /// Where ``failOrDefer(_:_:at:)`` puts mistakes while values are read; `nil`: report them now.
    var deferred: [TaskOptions.DeferredError]?

    init(root: String, readFile: @escaping @Sendable (String) throws -> String, context: TaskfileContext) {
        self.root = root
        self.readFile = readFile
        self.context = context
        dynamicVariables = DynamicVariables(interruption: context.interruption)
    }

    /// Records that the model depends on `key` (``TaskfileRequirement``).
    func require(_ key: String) {
        if requirements[key] == nil { requirements[key] = TaskfileRequirement(key: key, context: context) }
    }

    var requirementList: [TaskfileRequirement] {
        requirements.keys.sorted().map { requirements[$0]! }
    }

    /// A template reads `name`, which `known` doesn't define: from the environment if it is set
    /// there (and the model depends on it either way); a special variable from the context is a
    /// dependency too.
    func noteReference(_ name: String, known: KnownVariables) {
        if TaskfileContext.contextual.contains(name) { require("special:" + name) }
        guard !known.contains(name), environmentLayer[name] == nil else { return }
        require("env:" + name)
        if let value = context.environment[name] { environmentLayer[name] = .string(value) }
    }

    /// Every task's variables get the environment layer under them (memoized: tasks sharing a
    /// dictionary share the result).
    func addEnvironmentLayer() {
        guard !environmentLayer.isEmpty else { return }
        var merged: [[String: TemplateValue]: [String: TemplateValue]] = [:]
        for index in tasks.indices {
            let variables = tasks[index].variables
            let layered = merged[variables] ?? environmentLayer.merging(variables) { _, own in own }
            merged[variables] = layered
            tasks[index] = tasks[index].replacingVariables(layered)
        }
    }

    func fail(_ code: TaskfileError.Code, _ message: String, at location: SourceLocation?) {
        errors.append(TaskfileError(code, message, at: location))
    }

    // MARK: Files

    /// Loads one file; returns its `version`.
    @discardableResult
    /// Loads the main file and every file it includes, depth first and in order — with a stack of
    /// files still to read, not recursion: includes may nest a hundred deep. Returns the main
    /// file's `version`.
    func loadTree(_ main: PendingInclude) -> String? {
        var version: String?
        var stack = [main]
        var isMain = true
        while let next = stack.popLast() {
            var includes: [PendingInclude] = []
            let fileVersion = loadFile(
                next.path,
                namespace: next.namespace,
                directory: next.directory,
                inherited: next.inherited,
                chain: next.chain,
                includedAt: next.includedAt,
                settings: next.settings,
                includes: &includes
            )
            if isMain { version = fileVersion }
            isMain = false
            stack += includes.reversed()
        }
        return version
    }

    /// Loads one file; its includes are appended to `includes`, to load after it.
    func loadFile(
        _ path: String,
        namespace: String,
        directory: String,
        inherited: [String: TemplateValue],
        chain: [String],
        includedAt: SourceLocation?,
        settings settingsFromInclude: FileSettings,
        includes: inout [PendingInclude]
    ) -> String? {
        if chain.contains(path) {
            fail(.includeCycle, "include cycle: \((chain + [path]).joined(separator: " → "))", at: includedAt)
            return nil
        }
        guard chain.count < TaskfileLoader.maximumIncludeDepth else {
            fail(.invalidValue, "includes nested more than \(TaskfileLoader.maximumIncludeDepth) deep", at: includedAt)
            return nil
        }
        includeCount += 1
        guard includeCount <= TaskfileLoader.maximumIncludes else {
            if includeCount == TaskfileLoader.maximumIncludes + 1 {
                fail(
                    .invalidValue,
                    "more than \(TaskfileLoader.maximumIncludes) includes in all (files included again and again, under several names at each level?)",
                    at: includedAt
                )
            }
            return nil
        }
        // Each file is read once, however often it is included.
        let text: String
        if let known = texts[path] {
            text = known
        } else {
            do {
                text = try readFile(path)
            } catch let error as Files.ReadError {
                fail(.unreadableFile, "can't read Taskfile \(path): \(error.reason)", at: includedAt)
                return nil
            } catch {
                fail(.unreadableFile, "can't read Taskfile \(path): \(error)", at: includedAt)
                return nil
            }
            files.append(path)
            texts[path] = text
        }
        let node: YAMLNode?
        let gatheredTasks: [(key: YAMLNode, value: YAMLNode)]?
        do {
            // First pass: everything but the tasks, whose decoding needs the file's vars and env
            // (which may come after them). A small file's tasks are gathered as they come and
            // decoded below; a large file's stream in a second pass, one at a time.
            let outline =
                outlines[path]
                ?? Result { () throws(YAMLSyntaxError) in
                    guard text.utf8.count <= TaskfileLoader.onePassLimit else {
                        return Outline(root: try YAMLNode.parse(text, mode: .skipping("tasks")))
                    }
                    var gathered: [(key: YAMLNode, value: YAMLNode)] = []
                    let root = try YAMLNode.parse(text, mode: .streaming("tasks") { gathered.append(($0, $1)) })
                    return Outline(root: root, tasks: gathered)
                }
            outlines[path] = outline
            let parsed = try outline.get()
            node = parsed.root
            gatheredTasks = parsed.tasks
        } catch {
            fail(
                .syntax,
                "YAML syntax: \(error.message)",
                at: SourceLocation(file: path, line: Int(error.mark.line), column: Int(error.mark.column))
            )
            return nil
        }
        guard let node, let top = mapping(node, file: path, what: "a Taskfile") else {
            if node == nil {
                fail(
                    .wrongType,
                    "the Taskfile is empty; expected a map with 'tasks:'",
                    at: .init(file: path, line: 1, column: 1)
                )
            }
            return nil
        }
        var version: String?
        var variables = inherited
        variables["TASKFILE_DIR"] = .string(Path.directory(of: path))
        variables["TASKFILE"] = .string(path)
        var environment: [String: String] = [:]
        var variablesYAMLNode: YAMLNode?
        var environmentYAMLNode: YAMLNode?
        var dotenvNode: YAMLNode?
        var tasksYAMLNode: YAMLNode?
        var includesYAMLNode: YAMLNode?
        var fileSettings = settingsFromInclude
        for (key, value) in top {
            guard let name = key.string else { continue }
            switch name {
            case "version":
                version = scalar(value, file: path, what: "version")
            case "vars": variablesYAMLNode = value
            case "env": environmentYAMLNode = value
            case "resources":
                decodeResources(value, file: path)
            case "remote":
                // kiln's own: the remote cache (the main file's; an included file may not name one).
                if chain.isEmpty {
                    remote = decodeRemote(value, file: path)
                } else {
                    fail(
                        .invalidValue,
                        "'remote' belongs in the main Taskfile, not in an included one",
                        at: location(key, path)
                    )
                }
            case "plugins":
                decodePlugins(value, file: path)
            case "silent":
                // go-task stops echoing commands; kiln never echoes them.
                _ = bool(value, file: path, what: "'silent'")
            case "interval":
                // How often `kiln run --watch` looks for changes (go-task reads the main file's).
                if let text = scalar(value, file: path, what: "'interval'") {
                    if let duration = GoDuration(text), duration.seconds > 0 {
                        if chain.isEmpty { watchInterval = duration }
                    } else {
                        fail(
                            .invalidValue,
                            "'interval' must be a duration greater than zero as Go writes one (100ms, 1s), not '\(text)'",
                            at: location(value, path)
                        )
                    }
                }
            case "output":
                if let style = value.string {
                    if !["interleaved", "group", "prefixed"].contains(style) {
                        fail(
                            .invalidValue,
                            "'output' must be interleaved, group or prefixed, not '\(style)'",
                            at: location(value, path)
                        )
                    }
                } else if let group = outputGroup(value, file: path), chain.isEmpty {
                    // go-task reads the main file's only.
                    outputGroup = group
                }
            case "use_gitignore":
                // go-task 3.52: its tasks' sources leave out what the `.gitignore` files list.
                fileSettings.usesGitignore =
                    bool(value, file: path, what: "'use_gitignore'") == true ? location(key, path) : nil
            case "method":
                switch scalar(value, file: path, what: "'method'") {
                case "none": fileSettings.runsEveryTime = true
                case "timestamp": fileSettings.usesTimestamps = true
                case "checksum", nil: break
                case let method?:
                    fail(
                        .invalidValue,
                        "'method' must be checksum, timestamp or none, not '\(method)'",
                        at: location(value, path)
                    )
                }
            case "run":
                switch scalar(value, file: path, what: "'run'") {
                case "once": fileSettings.runPolicy = .once
                case "always": fileSettings.runPolicy = .always
                case "when_changed", nil: break
                case let policy?:
                    fail(
                        .invalidValue,
                        "'run' must be always, once or when_changed, not '\(policy)'",
                        at: location(value, path)
                    )
                }
            case "dotenv":
                if chain.isEmpty {
                    dotenvNode = value
                } else {
                    fail(
                        .invalidValue,
                        "'dotenv' belongs in the main Taskfile, not in an included one (as in go-task)",
                        at: location(key, path)
                    )
                }
            case "set", "shopt":
                // The options every command of the file (and of the files it includes) runs under.
                var options = ShellOptions()
                if name == "set" {
                    options.posix = shellOptionNames(value, file: path, what: "'set'")
                } else {
                    options.bash = shellOptionNames(value, file: path, what: "'shopt'")
                }
                fileSettings.shellOptions = fileSettings.shellOptions.adding(options)
            case "hooks":
                if chain.isEmpty {
                    decodeHooks(value, file: path)
                } else {
                    fail(
                        .invalidValue,
                        "'hooks' belong in the main Taskfile, not in an included one",
                        at: location(key, path)
                    )
                }
            case "tasks":
                tasksYAMLNode = value
            case "includes":
                includesYAMLNode = value
            default:
                unknownKey(name, at: location(key, path), allowed: TaskfileLoader.topLevelKeys, in: "the Taskfile")
            }
        }
        // go-task's order: the file's `env:` (as variables, seeing only what comes before), then its
        // `vars:` — the main file's with the command line's `NAME=value` in their place — then
        // `env:` again, for the commands, seeing the variables.
        // Mistakes in these values wait for a run that plans one of the file's tasks.
        deferred = fileSettings.deferredErrors
        if let environmentYAMLNode { decodeEnvironmentVariables(environmentYAMLNode, file: path, into: &variables) }
        // `dotenv:` files add to `env:` what it doesn't set (the first file to set a name wins).
        var dotenv: [(name: String, value: String)] = []
        if let dotenvNode {
            let declared = Set((environmentYAMLNode?.mapping ?? []).compactMap { $0.key.string })
            dotenv = readDotEnvironment(dotenvNode, file: path, base: Path.directory(of: path), variables: variables)
                .filter { !declared.contains($0.name) }
            for (name, value) in dotenv { variables[name] = .string(value) }
        }
        let overrides = chain.isEmpty ? context.variables : []
        // With or without them: a run that adds some must not reuse this model.
        if chain.isEmpty { require("cli:variables") }
        if let variablesYAMLNode { checkSharedVariableNames(variablesYAMLNode, file: path, isMain: chain.isEmpty) }
        if let variablesYAMLNode {
            // A listing runs none, not even the file's own.
            runsDynamicVariables = context.dynamicScope != .none
            decodeVariables(variablesYAMLNode, file: path, into: &variables, directory: root, overrides: overrides)
            runsDynamicVariables = true
        }
        for (name, value) in overrides
        where !(variablesYAMLNode?.mapping ?? []).contains(where: { $0.key.string == name }) {
            variables[name] = .string(value)
        }
        if let environmentYAMLNode {
            decodeEnvironment(environmentYAMLNode, file: path, variables: variables, into: &environment)
        }
        for (name, value) in dotenv {
            require("env:" + name)
            environment[name] = context.environment[name] ?? value
        }
        fileSettings.deferredErrors = deferred ?? []
        deferred = nil
        if let tasksYAMLNode, mapping(tasksYAMLNode, file: path, what: "'tasks'") != nil {
            var seen = Set<String>()
            let contextIndex = contexts.count
            contexts.append(
                FileContext(
                    file: path,
                    namespace: namespace,
                    directory: directory,
                    variables: variables,
                    environment: environment,
                    settings: fileSettings
                )
            )
            let decode = { (key: YAMLNode, value: YAMLNode) in
                guard let name = self.scalar(key, file: path, what: "a task name") else { return }
                // A NUL can't reach a command line, and it separates a job key's parts (JobKey).
                guard !name.utf8.contains(0) else {
                    self.fail(.invalidValue, "a task name can't contain a NUL character", at: self.location(key, path))
                    return
                }
                guard seen.insert(name).inserted else {
                    self.fail(.syntax, "duplicate key '\(name)' in 'tasks'", at: self.location(key, path))
                    return
                }
                self.decodeTask(name: name, key: key, body: value, context: contextIndex)
            }
            // A small file's one pass gathered them (an alias bomb among them failed that pass).
            if let gathered = gatheredTasks {
                for (key, value) in gathered { decode(key, value) }
            } else {
                // The first pass read the same text, so a syntax error here was reported already;
                // what only this pass sees (an alias bomb among the tasks) is reported now.
                let before = errors.count
                do {
                    _ = try YAMLNode.parse(text, mode: .streaming("tasks") { decode($0, $1) })
                } catch {
                    let location = SourceLocation(
                        file: path,
                        line: Int(error.mark.line),
                        column: Int(error.mark.column)
                    )
                    if !errors[before...].contains(where: { $0.location == location }) {
                        fail(.syntax, "YAML: \(error.message)", at: location)
                    }
                }
            }
        } else if tasksYAMLNode == nil, includesYAMLNode == nil {
            fail(.wrongType, "the Taskfile has no 'tasks:'", at: location(node, path))
        }
        if let includesYAMLNode, let entries = mapping(includesYAMLNode, file: path, what: "'includes'") {
            for (key, value) in entries {
                guard let name = scalar(key, file: path, what: "an include namespace") else { continue }
                if let include = decodeInclude(
                    name: name,
                    value: value,
                    file: path,
                    namespace: namespace,
                    directory: directory,
                    variables: variables,
                    chain: chain + [path],
                    settings: fileSettings
                ) {
                    includes.append(include)
                }
            }
        }
        return version
    }

    /// `hooks: {pre-commit: [lint, test], pre-push: test}`.
    func decodeHooks(_ node: YAMLNode, file: String) {
        guard let entries = mapping(node, file: file, what: "'hooks'") else { return }
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "a git hook name") else { continue }
            guard TaskfileLoader.hookNames.contains(name) else {
                fail(
                    .unknownKey,
                    "unknown git hook '\(name)'; kiln runs \(TaskfileLoader.hookNames.joined(separator: ", "))",
                    at: location(key, file)
                )
                continue
            }
            var tasks: [Located<String>] = []
            if let single = value.string {
                tasks = [Located(value: single, location: location(value, file))]
            } else if let list = value.sequence {
                for entry in list {
                    if let task = scalar(entry, file: file, what: "a task name") {
                        tasks.append(Located(value: task, location: location(entry, file)))
                    }
                }
            } else {
                fail(.wrongType, "hook '\(name)' takes a task name or a list of them", at: location(value, file))
            }
            hooks[name] = tasks
        }
    }

    /// `plugins: [archive, ./plugins/libkiln-mine.so]`: names stay names; paths become absolute.
    func decodePlugins(_ node: YAMLNode, file: String) {
        guard let entries = node.sequence else {
            fail(.wrongType, "'plugins' must be a list of plugin names or paths", at: location(node, file))
            return
        }
        for entry in entries {
            guard let text = scalar(entry, file: file, what: "a plugin name or path") else { continue }
            let value = text.contains("/") ? absolute(text, base: Path.directory(of: file)) : text
            plugins.append(Located(value: value, location: location(entry, file)))
        }
    }

    func decodeInclude(
        name: String,
        value: YAMLNode,
        file: String,
        namespace: String,
        directory: String,
        variables: [String: TemplateValue],
        chain: [String],
        settings: FileSettings
    ) -> PendingInclude? {
        let base = Path.directory(of: file)
        var includePath: Located<String>?
        var includeDirectory = directory
        var optional = false
        var included = settings
        included.excludes = []
        var includeVariables = variables
        var flatten = false
        let allowed: Set<String> = [
            "taskfile", "dir", "optional", "internal", "flatten", "aliases", "excludes", "vars", "checksum",
        ]
        if let path = value.string {
            includePath = Located(value: path, location: location(value, file))
        } else if let entries = mapping(value, file: file, what: "include '\(name)'") {
            for (key, entry) in entries {
                switch key.string ?? "" {
                case "taskfile":
                    includePath = scalar(entry, file: file, what: "'taskfile'").map {
                        Located(value: $0, location: location(entry, file))
                    }
                case "dir":
                    if let dir = scalar(entry, file: file, what: "'dir'") {
                        let located = Located(value: dir, location: location(entry, file))
                        checkTemplate(located, known: KnownVariables(variables: variables, each: false, task: false))
                        includeDirectory = absolute(
                            renderNow(located, variables: variables, lenient: true) ?? dir,
                            base: base
                        )
                    }
                case "optional": optional = bool(entry, file: file, what: "'optional'") ?? false
                case "internal":
                    included.isInternal = included.isInternal || (bool(entry, file: file, what: "'internal'") ?? false)
                case "flatten": flatten = bool(entry, file: file, what: "'flatten'") ?? false
                case "aliases":
                    included.namespaceAliases = strings(entry, file: file, what: "'aliases'").map {
                        namespace + $0.value + ":"
                    }
                case "excludes":
                    // `ns:*`: every task of the namespace (go-task 3.53); a bare name, that task.
                    included.excludes += strings(entry, file: file, what: "'excludes'").map { written in
                        written.value.hasSuffix(":*")
                            ? .namespace(String(written.value.dropLast())) : .task(written.value)
                    }
                case "vars":
                    deferred = included.deferredErrors
                    decodeVariables(entry, file: file, into: &includeVariables, directory: root)
                    included.deferredErrors = deferred ?? []
                    deferred = nil
                case "checksum":
                    fail(
                        .unsupported,
                        "'checksum:' pins a remote Taskfile, and kiln includes only local files",
                        at: location(key, file)
                    )
                default:
                    unknownKey(key.string ?? "", at: location(key, file), allowed: allowed, in: "an include")
                }
            }
            if includePath == nil {
                fail(.wrongType, "include '\(name)' needs 'taskfile: PATH'", at: location(value, file))
            }
        }
        guard let written = includePath else { return nil }
        // What the includer's include left out applies to this file's tasks too: `NAME:x` and
        // `NAME:*` are `x` and everything in the file included as NAME (as they are, flattened).
        included.excludes += settings.excludes.compactMap { exclusion in
            let prefix = flatten ? "" : name + ":"
            switch exclusion {
            case .task(let task): return task.hasPrefix(prefix) ? .task(String(task.dropFirst(prefix.count))) : nil
            case .namespace(let start):
                return start.hasPrefix(prefix) ? .namespace(String(start.dropFirst(prefix.count))) : nil
            }
        }
        // go-task renders the path with the including file's variables (`Taskfile_{{OS}}.yml`).
        checkTemplate(written, known: KnownVariables(variables: variables, each: false, task: false))
        let rendered = renderNow(written, variables: variables, lenient: true) ?? written.value
        if let scheme = ["http://", "https://", "git@", "git::", "ssh://"].first(where: { rendered.hasPrefix($0) }) {
            fail(
                .unsupported,
                "include '\(name)' is a remote Taskfile (\(scheme)…); kiln runs offline and includes only local files: download it into the project and include that",
                at: written.location
            )
            return nil
        }
        var path = absolute(rendered, base: base)
        if Files.isDirectory(path) {
            // The directory's Taskfile under any of go-task's names (else the first, to say it's missing).
            path = TaskfileDiscovery.file(in: path) ?? Path.join(path, TaskfileDiscovery.names[0])
        }
        if optional, !Files.exists(path) {
            missingOptional.append(path)
            return nil
        }
        if !flatten { namespaceLevels[namespace + name + ":"] = (namespaceLevels[namespace] ?? []) + [name] }
        return PendingInclude(
            path: path,
            namespace: flatten ? namespace : namespace + name + ":",
            directory: includeDirectory,
            inherited: includeVariables,
            chain: chain,
            includedAt: location(value, file),
            settings: included
        )
    }

    // MARK: Tasks

    /// Decodes the task `localName` of the file read in `contexts[contextIndex]` — or, given an
    /// `instance`, the same task again as that instance: named so, its variables over the file's.
    func decodeTask(
        name localName: String,
        key: YAMLNode,
        body: YAMLNode,
        context contextIndex: Int,
        instance: InstanceRequest? = nil,
        evaluating: Bool = false
    ) {
        let fileContext = contexts[contextIndex]
        let file = fileContext.file
        let namespace = fileContext.namespace
        let directory = fileContext.directory
        // go-task's order: the file's variables, the call's, then the task's own.
        let fileVariables =
            instance.map { fileContext.variables.merging($0.variables) { _, called in called } }
            ?? fileContext.variables
        let fileEnvironment = fileContext.environment
        let fileSettings = fileContext.settings
        let baseName = namespace + localName
        let name = instance?.name ?? baseName
        // The task's own dynamic variables run now only for the tasks this load is for.
        runsDynamicVariables = evaluating || context.dynamicScope == .all
        skippedDynamicVariables = false
        defer {
            if skippedDynamicVariables { lazyTasks.insert(name) } else { lazyTasks.remove(name) }
            runsDynamicVariables = true
            skippedDynamicVariables = false
        }
        // Mistakes in the task's values (and its file's) wait for a run that plans it.
        deferred = fileSettings.deferredErrors
        defer { deferred = nil }
        let taskLocation = location(key, file)
        var summary: String?
        var dependencies: [Located<String>] = []
        var dependencyNodes: [YAMLNode] = []
        var commandYAMLNodes: [YAMLNode] = []
        var sources: [Located<String>] = []
        var generates: [Located<String>] = []
        var variables = fileVariables
        // A wildcard task run by its own name matched nothing (go-task's empty MATCH).
        if localName.utf8.contains(UInt8(ascii: "*")), variables["MATCH"] == nil { variables["MATCH"] = .list([]) }
        var environment = fileEnvironment
        var directoryText: Located<String>?
        var claims: [Located<String>] = []
        var each = TaskDefinition.Each.none
        var batchSize: Int?
        var plugin: Located<String>?
        var with: YAMLNode?
        var allowsOutsideRoot = false
        var depfile: Located<String>?
        var keepsDepfile = false
        var taskVariablesYAMLNode: YAMLNode?
        var options = TaskOptions()
        options.runsEveryTime = fileSettings.runsEveryTime
        options.isInternal = fileSettings.isInternal
        if instance == nil {
            switch fileSettings.runPolicy {
            case .once: runsOnce.insert(baseName)
            case .always: runsAlways.insert(baseName)
            case .whenChanged: break
            }
        }
        var preconditionNodes: [YAMLNode] = []
        var statusNodes: [YAMLNode] = []
        var taskShellOptions = ShellOptions()
        // `use_gitignore:` of the task (set or not, and where it says true).
        var gitignoreSet = false
        var gitignoreAt: SourceLocation?
        var requiresNode: YAMLNode?
        var taskDotenvNode: YAMLNode?
        var environmentYAMLNode: YAMLNode?
        var conditionText: Located<String>?
        var prefix: String?
        var usesTimestamps = fileSettings.usesTimestamps

        switch body {
        case .scalar, .sequence:
            // go-task's short form: `task: cmd` or `task: [cmd, cmd]`.
            commandYAMLNodes = body.sequence ?? [body]
        case .mapping(let entries, _):
            var seenKeys = Set<String>()
            for (keyYAMLNode, value) in entries {
                guard let keyName = keyYAMLNode.string else { continue }
                guard seenKeys.insert(keyName).inserted else {
                    fail(.syntax, "duplicate key '\(keyName)' in task '\(name)'", at: location(keyYAMLNode, file))
                    continue
                }
                switch keyName {
                case "desc": summary = scalar(value, file: file, what: "'desc'")
                case "summary": options.longSummary = scalar(value, file: file, what: "'summary'")
                case "aliases":
                    let written = strings(value, file: file, what: "'aliases'").map(\.value)
                    options.aliases +=
                        written.map { namespace + $0 }
                        + fileSettings.namespaceAliases.flatMap { prefix in written.map { prefix + $0 } }
                case "internal":
                    options.isInternal =
                        fileSettings.isInternal || (bool(value, file: file, what: "'internal'") ?? false)
                case "label":
                    if let text = scalar(value, file: file, what: "'label'") {
                        options.label = text
                        checkTemplate(
                            Located(value: text, location: location(value, file)),
                            known: KnownVariables(variables: fileVariables, each: false)
                        )
                    }
                case "silent": options.isSilent = bool(value, file: file, what: "'silent'") ?? false
                case "ignore_error": options.ignoresError = bool(value, file: file, what: "'ignore_error'") ?? false
                case "platforms": options.platforms = platforms(value, file: file)
                case "prompt": options.prompts = strings(value, file: file, what: "'prompt'").map(\.value)
                case "preconditions": preconditionNodes = list(value, file: file, what: "'preconditions'")
                case "status": statusNodes = list(value, file: file, what: "'status'")
                case "set": taskShellOptions.posix = shellOptionNames(value, file: file, what: "'set'")
                case "shopt": taskShellOptions.bash = shellOptionNames(value, file: file, what: "'shopt'")
                case "requires": requiresNode = value
                case "dotenv": taskDotenvNode = value
                case "use_gitignore":
                    let uses = bool(value, file: file, what: "'use_gitignore'") ?? false
                    gitignoreAt = uses ? location(keyYAMLNode, file) : nil
                    gitignoreSet = true
                case "method":
                    if let method = scalar(value, file: file, what: "'method'") {
                        switch method {
                        case "none": options.runsEveryTime = true
                        // kiln's content signatures serve both; the method names the variable.
                        case "checksum", "timestamp":
                            options.runsEveryTime = false
                            usesTimestamps = method == "timestamp"
                        default:
                            fail(
                                .invalidValue,
                                "'method' must be checksum, timestamp or none, not '\(method)'",
                                at: location(value, file)
                            )
                        }
                    }
                case "run":
                    if let policy = scalar(value, file: file, what: "'run'") {
                        switch policy {
                        case "once":
                            runsOnce.insert(baseName)
                            runsAlways.remove(baseName)
                        // Kiln runs a task once per run and set of variables.
                        case "when_changed":
                            runsOnce.remove(baseName)
                            runsAlways.remove(baseName)
                        case "always":
                            runsAlways.insert(baseName)
                            runsOnce.remove(baseName)
                        default:
                            fail(
                                .invalidValue,
                                "'run' must be always, once or when_changed, not '\(policy)'",
                                at: location(value, file)
                            )
                        }
                    }
                case "cmd":
                    // go-task's short form of a single command.
                    commandYAMLNodes = [value]
                case "deps": dependencyNodes = list(value, file: file, what: "'deps'")
                case "cmds": commandYAMLNodes = list(value, file: file, what: "'cmds'")
                case "sources": sources = globs(value, file: file, what: "'sources'")
                case "generates": generates = globs(value, file: file, what: "'generates'")
                case "vars": taskVariablesYAMLNode = value
                case "env": environmentYAMLNode = value
                case "dir":
                    if let dir = scalar(value, file: file, what: "'dir'") {
                        directoryText = Located(value: dir, location: location(value, file))
                    }
                case "resources": claims = strings(value, file: file, what: "'resources'")
                case "each":
                    if let text = scalar(value, file: file, what: "'each'") {
                        if let mode = TaskDefinition.Each(rawValue: text), mode != .none {
                            each = mode
                        } else {
                            fail(.invalidValue, "'each' must be 'sources', not '\(text)'", at: location(value, file))
                        }
                    }
                case "batch":
                    if let text = scalar(value, file: file, what: "'batch'") {
                        if let size = Int(text), size > 0 {
                            batchSize = size
                        } else {
                            fail(
                                .invalidValue,
                                "'batch' must be a positive integer, not '\(text)'",
                                at: location(value, file)
                            )
                        }
                    }
                case "plugin":
                    if let text = scalar(value, file: file, what: "'plugin'") {
                        plugin = Located(value: text, location: location(value, file))
                    }
                case "with": with = value
                case "allow-outside-root":
                    allowsOutsideRoot = bool(value, file: file, what: "'allow-outside-root'") ?? false
                case "depfile":
                    if let text = scalar(value, file: file, what: "'depfile'") {
                        depfile = Located(value: text, location: location(value, file))
                    }
                case "keep-depfile": keepsDepfile = bool(value, file: file, what: "'keep-depfile'") ?? false
                // Rare keys last: a switch over strings compares in order.
                case "if":
                    if let text = scalar(value, file: file, what: "'if'") {
                        conditionText = Located(value: text, location: location(value, file))
                    }
                case "prefix":
                    // go-task's name for the task's lines in `output: prefixed`; kiln prints each
                    // job's output whole under one name: this one, unless `label:` gives another.
                    if let text = scalar(value, file: file, what: "'prefix'") {
                        prefix = text
                        checkTemplate(
                            Located(value: text, location: location(value, file)),
                            known: KnownVariables(variables: fileVariables, each: false)
                        )
                    }
                case "failfast":
                    // go-task's: the first failing dependency stops the others. Kiln always stops
                    // at the first failure (unless --keep-going).
                    _ = bool(value, file: file, what: "'failfast'")
                case "interactive": options.isInteractive = bool(value, file: file, what: "'interactive'") ?? false
                case "watch": options.watches = bool(value, file: file, what: "'watch'") ?? false
                default:
                    if let instead = TaskfileLoader.pendingKeys[keyName] {
                        failOrDefer(
                            .unsupported,
                            "go-task's '\(keyName)' isn't supported by kiln yet; \(instead)",
                            at: location(keyYAMLNode, file)
                        )
                    } else {
                        unknownKey(
                            keyName,
                            at: location(keyYAMLNode, file),
                            allowed: TaskfileLoader.taskKeys,
                            in: "task '\(name)'"
                        )
                    }
                }
            }
        }
        if let taskVariablesYAMLNode {
            // A dynamic variable of the task runs in the task's directory, as far as the file's
            // variables render it (quietly: the directory is rendered, and reported, below).
            let provisional =
                directoryText.map { text in
                    let rendered = try? TaskfileTemplates.library.template(text.value).render(.map(layered(variables)))
                    return absolute(rendered ?? text.value, base: directory)
                } ?? directory
            decodeVariables(taskVariablesYAMLNode, file: file, into: &variables, directory: provisional)
        }
        // `dir:` and `sources:` can't use the per-source variables: rendered once, now.
        var taskVariables = variables
        taskVariables["TASK"] = .string(baseName)
        taskVariables["staged_files"] = .string(TaskDefinition.hookFiles)
        let taskDirectory =
            directoryText.map {
                absolute(renderNow($0, variables: taskVariables, task: baseName) ?? $0.value, base: directory)
            } ?? directory
        // `if:` — decided now, from the variables, when it renders to true or false; a shell test
        // runs when the task is reached (splitConditions). A task whose own dynamic variables
        // haven't run is decided when they have.
        if let conditionText, !skippedDynamicVariables {
            checkTemplate(conditionText, known: KnownVariables(variables: variables, each: false))
            if let rendered = renderNow(conditionText, variables: taskVariables, lenient: true) {
                switch TaskOptions.constantCondition(rendered) {
                case false?: options.conditionHolds = false
                case true?: break
                case nil: options.taskTest = Located(value: rendered, location: conditionText.location)
                }
            }
        }
        if let taskDotenvNode {
            // A task's `dotenv:` files, in its directory: over the file's `env:`, under the task's.
            for (name, value) in readDotEnvironment(
                taskDotenvNode,
                file: file,
                base: taskDirectory,
                variables: variables
            ) {
                require("env:" + name)
                environment[name] = context.environment[name] ?? value
            }
        }
        if let environmentYAMLNode {
            decodeEnvironment(environmentYAMLNode, file: file, variables: variables, into: &environment)
        }

        // `sources:`/`generates:` patterns as the task's jobs see them (an exclusion keeps its `!`).
        func renderedPatterns(_ patterns: [Located<String>]) -> [String] {
            patterns.map { pattern in
                GlobList.isExclusion(pattern.value)
                    ? "!"
                        + (renderNow(
                            Located(value: String(pattern.value.dropFirst()), location: pattern.location),
                            variables: taskVariables,
                            task: baseName
                        ) ?? "")
                    : renderNow(pattern, variables: taskVariables, task: baseName) ?? pattern.value
            }
        }
        // go-task's `use_gitignore: true` (the task's, else its file's): the files the task's
        // patterns match leave out what git ignores (Gitignore) — its sources, and the files its
        // loops go over — which GlobList.gitignoreMarker at the end of a list asks for.
        let gitignored =
            (gitignoreSet ? gitignoreAt : fileSettings.usesGitignore) != nil ? [GlobList.gitignoreMarker] : []
        // `for: sources`/`for: generates` on a call or a dependency: the files the task's patterns
        // match now, in its directory. They change between runs: this load isn't cached.
        func loopFiles(_ items: CommandLoop.Items) -> [TemplateValue] {
            isVolatile = true
            let patterns = renderedPatterns(items == .sources ? sources : generates) + gitignored
            return Glob.files(matching: patterns, in: taskDirectory).map(TemplateValue.string)
        }
        // Templates may use the Taskfile's variables, the built-ins, and per-source ones for `each:`.
        let known = KnownVariables(variables: variables, each: each == .sources)
        let sourceKnown = KnownVariables(variables: variables, each: false)
        var commands: [Located<String>] = []
        var commandOptions: [CommandOptions] = []
        // The commands and `- task:` calls in order, when there are calls.
        var steps: [TaskStep] = []
        var callsSomething = false
        // `defer: {task: …}`, in the order written — and the deferred commands written before a
        // `- task:` call, each run as a task of its own (see deferredCommandTasks); the first
        // deferred command that stays in the task's last piece (which kiln runs before the
        // deferred calls).
        var deferredCalls: [TaskReference] = []
        var deferredCommandTasks: [(name: String, command: Located<String>, settings: CommandOptions)] = []
        var firstDeferredCommand: SourceLocation?
        // Where the last `- task:` call is written: looked for at the first deferred command.
        var lastCall: Int??
        for (nodeIndex, node) in commandYAMLNodes.enumerated() {
            if let deferred = node["defer"], deferred.mapping != nil {
                guard let reference = deferredCallReference(node, deferred: deferred, file: file, variables: variables)
                else {
                    continue
                }
                if let earlier = firstDeferredCommand {
                    failOrDefer(
                        .unsupported,
                        "a deferred '- task:' call written after a 'defer:' command at \(earlier) runs before it in go-task (the last written first) and after it in kiln; write the deferred calls before the deferred commands, or make the command a task and defer a call to it",
                        at: location(deferred, file)
                    )
                    continue
                }
                var settings = CommandOptions()
                settings.deferredCall = deferredCalls.count
                deferredCalls.append(reference)
                steps.append(.command(commands.count))
                commands.append(reference.name)
                commandOptions.append(settings)
                continue
            }
            if node["task"] != nil {
                for reference in taskReferences(node, file: file, variables: variables, isCall: true, files: loopFiles)
                {
                    steps.append(.call(reference))
                    callsSomething = true
                }
                continue
            }
            guard let (located, settings) = command(node, file: file, variables: variables) else { continue }
            if settings.isDeferred, lastCall == nil {
                lastCall = .some(commandYAMLNodes.lastIndex { $0["task"] != nil })
            }
            if settings.isDeferred, let last = lastCall ?? nil, nodeIndex < last {
                // Before a call: the commands between calls run as separate steps, and a step's
                // deferred command would run at the step's end. It runs as a deferred call instead,
                // of a task of its own made of it, at the task's end (with the failed command's
                // EXIT_CODE, see TaskOptions.isDeferredCommand).
                var deferredKnown = known
                deferredKnown.variables["EXIT_CODE"] = ""
                checkTemplate(located, known: deferredKnown)
                let taskName = "\(name) [deferred command \(deferredCommandTasks.count + 1)]"
                deferredCommandTasks.append((taskName, located, settings))
                var marker = settings
                marker.deferredCall = deferredCalls.count
                deferredCalls.append(
                    TaskReference(
                        name: Located(value: taskName, location: located.location),
                        variables: nil,
                        runsCommand: true
                    )
                )
                steps.append(.command(commands.count))
                commands.append(located)
                commandOptions.append(marker)
                continue
            }
            if settings.isDeferred {
                // A deferred command may print the failed command's exit status.
                var deferredKnown = known
                deferredKnown.variables["EXIT_CODE"] = ""
                checkTemplate(located, known: deferredKnown)
                if firstDeferredCommand == nil { firstDeferredCommand = located.location }
            } else {
                checkTemplate(located, known: known)
            }
            if let condition = settings.condition { checkTemplate(condition, known: known) }
            steps.append(.command(commands.count))
            commands.append(located)
            commandOptions.append(settings)
        }
        // `deps:`: names (templates, as in go-task), `{task: NAME}`, with `vars:` and `for:`.
        // The dependencies written `{task: NAME}` with `vars:` or `timeout:`, by index in `deps`.
        var dependencyCalls: [Int: TaskReference] = [:]
        for item in dependencyNodes {
            // A null item (`~`, `null`, nothing) names no task: go-task skips it.
            if item.isNull { continue }
            if let written = item.string {
                let located = Located(value: written, location: location(item, file))
                checkTemplate(located, known: KnownVariables(variables: variables, each: false))
                dependencies.append(
                    Located(
                        value: renderNow(located, variables: taskVariables, task: baseName) ?? written,
                        location: located.location
                    )
                )
            } else if item.mapping != nil, item["task"] != nil {
                for reference in taskReferences(item, file: file, variables: variables, isCall: false, files: loopFiles)
                {
                    if reference.variables != nil || reference.timeout != nil {
                        dependencyCalls[dependencies.count] = reference
                    }
                    dependencies.append(reference.name)
                }
            } else {
                fail(.wrongType, "each item of 'deps' must be a task name or {task: NAME}", at: location(item, file))
            }
        }
        if commandOptions.contains(where: { $0 != CommandOptions() }) { options.commandOptions = commandOptions }
        if let requiresNode {
            options.requiredVariables = requiredVariables(requiresNode, file: file, variables: variables)
        }
        for node in preconditionNodes {
            // `- test -f x` or `- sh: test -f x` with `msg:`.
            let test = node["sh"] ?? node
            guard let text = scalar(test, file: file, what: "a precondition") else { continue }
            let located = Located(value: text, location: location(test, file))
            checkTemplate(located, known: known)
            var message: String?
            if let entries = node.mapping {
                for (entryKey, entryValue) in entries {
                    switch entryKey.string ?? "" {
                    case "sh": break
                    case "msg": message = scalar(entryValue, file: file, what: "'msg'")
                    default:
                        unknownKey(
                            entryKey.string ?? "",
                            at: location(entryKey, file),
                            allowed: ["sh", "msg"],
                            in: "a precondition"
                        )
                    }
                }
            }
            options.preconditions.append(TaskOptions.Precondition(test: located, message: message))
        }
        for node in statusNodes {
            guard let text = scalar(node, file: file, what: "a status command") else { continue }
            let located = Located(value: text, location: location(node, file))
            checkTemplate(located, known: known)
            options.statusChecks.append(located)
        }
        // go-task's CHECKSUM (or TIMESTAMP, with `method: timestamp`) of a task with sources: worked
        // out for a job only when one of the templates that run names it.
        if !sources.isEmpty, !options.runsEveryTime {
            let variable = usesTimestamps ? "TIMESTAMP" : "CHECKSUM"
            // Most commands have no template at all: a byte scan answers for them.
            func names(_ text: Located<String>) -> Bool {
                TextTemplate.hasActions(text.value) && text.value.containsText(variable)
            }
            if commands.contains(where: names) || options.statusChecks.contains(where: names)
                || options.preconditions.contains(where: { names($0.test) })
            {
                options.fingerprint = usesTimestamps ? .timestamp : .checksum
            }
        }
        for pattern in sources { checkTemplate(pattern, known: sourceKnown) }
        for output in generates { checkTemplate(output, known: known) }
        if let depfile { checkTemplate(depfile, known: known) }
        if let directoryText { checkTemplate(directoryText, known: sourceKnown) }
        if each == .sources, sources.isEmpty {
            fail(.invalidValue, "task '\(name)' has 'each: sources' but no 'sources'", at: taskLocation)
        }
        var renderedSources = renderedPatterns(sources)
        // The marker goes with the sources, where the command loops over `generates` find it too.
        if !gitignored.isEmpty, !sources.isEmpty || commandOptions.contains(where: { $0.loop?.items == .generates }) {
            renderedSources += gitignored
        }

        var kind = Located(value: "shell", location: taskLocation)
        var configuration: ConfigurationValue?
        if let plugin {
            kind = plugin
            if !commands.isEmpty {
                fail(
                    .invalidValue,
                    "task '\(name)' has both 'plugin' and 'cmds'; a plugin task takes its settings from 'with'",
                    at: plugin.location
                )
            }
            let value =
                with.map { configurationValue($0, file: file) } ?? ConfigurationValue(.map([]), at: plugin.location)
            checkTemplates(in: value, known: known)
            configuration = value
        } else if let with {
            fail(
                .invalidValue,
                "'with' configures a plugin task; add 'plugin: NAME' or remove 'with'",
                at: location(with, file)
            )
        }

        if callsSomething {
            // With calls between them, the commands run as separate steps, the first of which
            // decides for the task when it declares files or `status:` (see splitSteps).
            let what = [depfile == nil ? nil : "'depfile'", each == .none ? nil : "'each'"].compactMap { $0 }
            if !what.isEmpty {
                failOrDefer(
                    .unsupported,
                    "task '\(name)' has '- task:' calls in 'cmds' and \(what.joined(separator: ", ")), which kiln doesn't combine yet; move the commands with \(what.joined(separator: ", ")) into a task of their own and call it",
                    at: taskLocation
                )
            }
        }
        if !deferredCalls.isEmpty {
            // The deferred calls run after the task's one job (see splitDeferrals).
            let what = [each == .none ? nil : "'each:'", plugin == nil ? nil : "'plugin:'"].compactMap { $0 }
            if !what.isEmpty {
                failOrDefer(
                    .unsupported,
                    "task '\(name)' has deferred '- task:' calls and \(what.joined(separator: ", ")), which kiln doesn't combine yet; move the commands into a task of their own, and call it from a task with the deferred calls",
                    at: deferredCalls[0].name.location
                )
                deferredCalls = []
            }
        }
        if options.label == nil { options.label = prefix }
        options.dynamicVariablesSkipped = skippedDynamicVariables
        options.shellOptions = fileSettings.shellOptions.adding(taskShellOptions)
        if let instance {
            // An instance answers to no name of its own; its task's do.
            options.aliases = []
            options.partOf = baseName
            options.failureIgnored = instance.ignoresFailure
            options.timeout = instance.timeout
        } else {
            // Under an include's other namespaces too (`aliases:` of the include).
            options.aliases += fileSettings.namespaceAliases.map { $0 + localName }
            if fileSettings.excludes.contains(where: { $0.leavesOut(localName) }) { return }
            origins[name] = TaskOrigin(context: contextIndex, localName: localName)
        }
        // A task that doesn't run here calls nothing (go-task skips it whole).
        let runsHere = TaskOptions.allows(options.platforms) && options.conditionHolds
        if !dependencyCalls.isEmpty || (callsSomething || !deferredCalls.isEmpty) && runsHere {
            references[name] = TaskReferences(
                dependencyCalls: dependencyCalls,
                steps: callsSomething ? steps : nil,
                deferredCalls: runsHere ? deferredCalls : []
            )
        }
        if let existing = taskIndex[name] {
            errors.append(
                TaskfileError(
                    .duplicateTask,
                    "task '\(name)' is defined twice",
                    at: taskLocation,
                    notes: [("first defined here", tasks[existing].location)]
                )
            )
            return
        }
        taskIndex[name] = tasks.count
        namespaces[name] = namespace
        tasks.append(
            TaskDefinition(
                name: name,
                location: taskLocation,
                summary: summary,
                dependencies: dependencies,
                commands: commands,
                sources: sources,
                generates: generates,
                variables: variables,
                renderedSources: renderedSources,
                environment: environment,
                directory: taskDirectory,
                resources: claims,
                each: each,
                batchSize: batchSize,
                kind: kind,
                pluginConfiguration: configuration,
                allowsOutsideRoot: allowsOutsideRoot,
                depfile: depfile,
                keepsDepfile: keepsDepfile,
                file: file,
                options: withDeferredErrors(options)
            )
        )
        // The deferred commands written before a call: each a task of the task's own, in its
        // directory, with its variables and environment, whose failure changes nothing.
        guard !deferredCommandTasks.isEmpty, references[name]?.deferredCalls.isEmpty == false else { return }
        for piece in deferredCommandTasks {
            var pieceOptions = TaskOptions()
            pieceOptions.partOf = options.partOf ?? name
            pieceOptions.label = options.label ?? name
            pieceOptions.failureIgnored = true
            pieceOptions.isDeferredCommand = true
            pieceOptions.shellOptions = options.shellOptions
            // Still deferred: rendered when it runs, with the failed command's EXIT_CODE.
            pieceOptions.commandOptions = [piece.settings]
            let definition = TaskDefinition(
                name: piece.name,
                location: piece.command.location,
                summary: nil,
                dependencies: [],
                commands: [piece.command],
                sources: [],
                generates: [],
                variables: variables,
                environment: environment,
                directory: taskDirectory,
                resources: claims,
                each: .none,
                batchSize: nil,
                kind: kind,
                pluginConfiguration: nil,
                allowsOutsideRoot: allowsOutsideRoot,
                file: file,
                options: pieceOptions
            )
            // Decoded again (its dynamic variables run now): in place of the first one.
            if let existing = taskIndex[piece.name] {
                tasks[existing] = definition
            } else {
                taskIndex[piece.name] = tasks.count
                tasks.append(definition)
            }
        }
    }

    /// One of `cmds` that runs a command (not a `- task:` call): a string, or go-task's map
    /// (`cmd:` with `silent:`, `ignore_error:`, `platforms:`, `for:`, `if:`, `set:`, `shopt:`),
    /// or `defer: CMD`. What kiln doesn't run yet — a deferred call, `vars:` — is refused here,
    /// where it is written, with what to do instead.
    func command(_ node: YAMLNode, file: String, variables: [String: TemplateValue]) -> (
        Located<String>, CommandOptions
    )? {
        guard let entries = node.mapping else {
            guard let text = scalar(node, file: file, what: "a command") else { return nil }
            return (Located(value: text, location: location(node, file)), CommandOptions())
        }
        var settings = CommandOptions()
        var text: Located<String>?
        for (key, value) in entries {
            let name = key.string ?? ""
            switch name {
            case "cmd":
                if let command = scalar(value, file: file, what: "'cmd'") {
                    text = Located(value: command, location: location(value, file))
                }
            case "silent": settings.isSilent = bool(value, file: file, what: "'silent'") ?? false
            case "ignore_error": settings.ignoresError = bool(value, file: file, what: "'ignore_error'") ?? false
            case "platforms": settings.platforms = platforms(value, file: file)
            case "timeout": settings.timeout = timeout(value, file: file)
            case "defer":
                // go-task's `- defer: CMD` (a string); a deferred call `- defer: {task: …}` is
                // read by deferredCallReference.
                guard let deferred = value.string else {
                    fail(
                        .wrongType,
                        "'defer' takes a command or {task: NAME, …}, not \(describe(value))",
                        at: location(value, file)
                    )
                    return nil
                }
                settings.isDeferred = true
                text = Located(value: deferred, location: location(value, file))
            case "if":
                if let condition = scalar(value, file: file, what: "'if'") {
                    settings.condition = Located(value: condition, location: location(value, file))
                }
            case "for":
                guard let loop = commandLoop(value, file: file, variables: variables) else { return nil }
                settings.loop = loop
            case "set": settings.shellOptions.posix = shellOptionNames(value, file: file, what: "'set'")
            case "shopt": settings.shellOptions.bash = shellOptionNames(value, file: file, what: "'shopt'")
            case "vars":
                failOrDefer(
                    .unsupported,
                    "'vars:' on a command isn't supported yet; move it to the task, or into the command's text",
                    at: location(key, file)
                )
                return nil
            default:
                unknownKey(
                    name,
                    at: location(key, file),
                    allowed: [
                        "cmd", "silent", "ignore_error", "platforms", "task", "defer", "for", "vars", "set", "shopt",
                        "if", "timeout",
                    ],
                    in: "a command"
                )
                return nil
            }
        }
        if settings.isDeferred {
            // go-task keeps only `silent:` and `timeout:` beside `defer:` and drops the rest
            // without a word.
            for (key, _) in entries {
                guard let name = key.string, name != "defer", name != "silent", name != "timeout" else { continue }
                failOrDefer(
                    .unsupported,
                    "go-task ignores '\(name):' beside 'defer:' (only 'silent:' and 'timeout:' apply); remove it, or put the test in the deferred command",
                    at: location(key, file)
                )
                return nil
            }
        }
        guard let text else {
            fail(.wrongType, "a command written as a map needs 'cmd:'", at: location(node, file))
            return nil
        }
        return (text, settings)
    }

    /// A `{task: NAME, vars: {…}, for: …, silent: …}` of `deps` or `cmds`: the tasks it names (one
    /// per item of its `for:`), each with its variables rendered in the naming task's scope, as
    /// go-task renders them before the call.
    func taskReferences(
        _ node: YAMLNode,
        file: String,
        variables: [String: TemplateValue],
        isCall: Bool,
        isDeferred: Bool = false,
        files: (CommandLoop.Items) -> [TemplateValue]
    ) -> [TaskReference] {
        guard let entries = node.mapping else { return [] }
        let what = isDeferred ? "a deferred call" : isCall ? "a '- task:' call" : "a dependency"
        // go-task's deferred call takes these (`if:` is refused by deferredCallReference); it
        // doesn't read a call's other keys there.
        if isDeferred,
            let other = entries.first(where: { !["task", "vars", "silent", "if"].contains($0.key.string ?? "") })
        {
            unknownKey(
                other.key.string ?? "",
                at: location(other.key, file),
                allowed: ["task", "vars", "silent", "if"],
                in: what
            )
            return []
        }
        var nameNode: YAMLNode?
        var variablesNode: YAMLNode?
        var loop: CommandLoop?
        var condition: Located<String>?
        var excludedHere: SourceLocation?
        var ignoresFailure = false
        var callTimeout: GoDuration?
        for (key, value) in entries {
            let name = key.string ?? ""
            switch name {
            case "task": nameNode = value
            case "vars":
                guard value.mapping != nil || value.isNull else {
                    fail(.wrongType, "'vars' of \(what) must be a map of variables", at: location(value, file))
                    return []
                }
                variablesNode = value.isNull ? nil : value
            case "silent": _ = bool(value, file: file, what: "'silent'")
            case "timeout":
                guard let duration = timeout(value, file: file) else { return [] }
                callTimeout = duration
            case "for":
                guard let items = commandLoop(value, file: file, variables: variables) else { return [] }
                loop = items
            // Refused when a run plans the task: the rest of the Taskfile works.
            case "if" where isCall:
                guard let text = scalar(value, file: file, what: "'if'") else { return [] }
                condition = Located(value: text, location: location(value, file))
            case "ignore_error" where isCall:
                ignoresFailure = bool(value, file: file, what: "'ignore_error'") ?? false
            case "defer" where isCall:
                failOrDefer(
                    .unsupported,
                    "'\(name):' on a '- task:' call isn't supported yet; put it on the called task's commands",
                    at: location(key, file)
                )
                return []
            case "platforms" where isCall:
                // go-task doesn't apply a call's `platforms:` (only a command's). Where they leave
                // this machine out, resolveTask checks that the called task doesn't run here either.
                if !TaskOptions.allows(platforms(value, file: file)) { excludedHere = location(key, file) }
            default:
                let allowed: Set<String> =
                    isCall
                    ? ["task", "vars", "silent", "for", "ignore_error", "platforms", "defer", "if", "timeout"]
                    : ["task", "vars", "silent", "for", "timeout"]
                unknownKey(name, at: location(key, file), allowed: allowed, in: what)
                return []
            }
        }
        guard let nameNode, let written = scalar(nameNode, file: file, what: "'task'") else { return [] }
        let nameText = Located(value: written, location: location(nameNode, file))
        var items: [TemplateValue?] = [nil]
        if let loop { items = loop.staticItems(variables: layered(variables)) ?? files(loop.items) }
        return items.compactMap { item in
            var scope = variables
            if let item, let loop { scope[loop.name] = item }
            // `if:` — per item, in the caller's scope; a call whose test says no isn't made. A
            // shell test runs when the call is reached.
            var test: Located<String>?
            if let condition {
                checkTemplate(condition, known: KnownVariables(variables: scope, each: false))
                guard let rendered = renderNow(condition, variables: scope, lenient: true) else { return nil }
                switch TaskOptions.constantCondition(rendered) {
                case false?: return nil
                case true?: break
                case nil: test = Located(value: rendered, location: condition.location)
                }
            }
            checkTemplate(nameText, known: KnownVariables(variables: scope, each: false))
            let name = Located(value: renderNow(nameText, variables: scope) ?? written, location: nameText.location)
            let called = variablesNode.map { callVariables($0, file: file, scope: scope) }
            return TaskReference(
                name: name,
                variables: called,
                excludedHere: excludedHere,
                ignoresFailure: ignoresFailure,
                timeout: callTimeout,
                test: test
            )
        }
    }

    /// `- defer: {task: NAME, vars: {…}, silent: …}` (with `timeout:` beside `defer:`): the task
    /// it calls when the task ends; `nil` after a mistake (reported).
    func deferredCallReference(_ node: YAMLNode, deferred: YAMLNode, file: String, variables: [String: TemplateValue])
        -> TaskReference?
    {
        var callTimeout: GoDuration?
        for (key, value) in node.mapping ?? [] {
            switch key.string ?? "" {
            case "defer", "silent": continue
            case "timeout": callTimeout = timeout(value, file: file)
            default:
                failOrDefer(
                    .unsupported,
                    "go-task ignores '\(key.string ?? ""):' beside 'defer:' (only 'silent:' and 'timeout:' apply); remove it, or put it in the deferred call",
                    at: location(key, file)
                )
                return nil
            }
        }
        // go-task 3.54 reads an `if:` in a deferred call and makes the call all the same.
        if let condition = deferred.mapping?.first(where: { $0.key.string == "if" }) {
            failOrDefer(
                .unsupported,
                "go-task ignores 'if:' in a deferred call and makes the call all the same; remove it, or put the test on the called task's commands",
                at: location(condition.key, file)
            )
            return nil
        }
        // go-task renders a deferred call's `vars:` when it makes it, with the failed command's
        // EXIT_CODE; kiln renders them when the Taskfile loads.
        func mentionsExitCode(_ node: YAMLNode) -> Bool {
            if let text = node.string { return text.containsText("EXIT_CODE") }
            if let items = node.sequence { return items.contains(where: mentionsExitCode) }
            return (node.mapping ?? []).contains { mentionsExitCode($0.key) || mentionsExitCode($0.value) }
        }
        for entry in ["vars"] {
            guard let part = deferred[entry], mentionsExitCode(part) else { continue }
            failOrDefer(
                .unsupported,
                "{{.EXIT_CODE}} in a deferred call's '\(entry):' isn't supported yet (kiln makes the call's variables when it loads the Taskfile); a deferred command can print it: '- defer: echo {{.EXIT_CODE}}'",
                at: location(part, file)
            )
            return nil
        }
        guard
            var reference = taskReferences(
                deferred,
                file: file,
                variables: variables,
                isCall: true,
                isDeferred: true,
                files: { _ in [] }
            ).first
        else { return nil }
        reference.timeout = callTimeout
        return reference
    }

    /// A call's `vars:`, each rendered in the caller's `scope` alone (go-task's ReplaceVars: one
    /// doesn't see another).
    func callVariables(_ node: YAMLNode, file: String, scope: [String: TemplateValue]) -> [String: TemplateValue] {
        guard let entries = mapping(node, file: file, what: "'vars'") else { return [:] }
        var result: [String: TemplateValue] = [:]
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "a variable name") else { continue }
            var sink = scope
            decodeVariable(name, value, file: file, into: &sink, directory: root)
            result[name] = sink[name] ?? .null
        }
        return result
    }

    /// `set: [e, pipefail]` / `shopt: [globstar]`: option names; one that could be more than a name
    /// (`x; rm -rf /`) is an error, not text for the shell.
    func shellOptionNames(_ node: YAMLNode, file: String, what: String) -> [String] {
        strings(node, file: file, what: what).compactMap { name in
            guard ShellOptions.isValidName(name.value) else {
                failOrDefer(
                    .invalidValue,
                    "'\(name.value)' in \(what) is not an option name (letters, digits and _)",
                    at: name.location
                )
                return nil
            }
            return name.value
        }
    }

    /// `dotenv: [PATH, …]`: each path a template, relative to `base`; a file that doesn't exist
    /// is skipped (and its appearing later makes the Taskfile cache stale). The first file to set
    /// a name wins.
    func readDotEnvironment(_ node: YAMLNode, file: String, base: String, variables: [String: TemplateValue]) -> [(
        name: String, value: String
    )] {
        var result: [(name: String, value: String)] = []
        for path in strings(node, file: file, what: "'dotenv'") {
            checkTemplate(path, known: KnownVariables(variables: variables, each: false, task: false))
            guard let rendered = renderNow(path, variables: variables, lenient: true) else { continue }
            let absolutePath = absolute(rendered, base: base)
            guard Files.exists(absolutePath) else {
                missingOptional.append(absolutePath)
                continue
            }
            let text: String
            do {
                text = try readFile(absolutePath)
            } catch {
                fail(.unreadableFile, "can't read the dotenv file \(absolutePath): \(error)", at: path.location)
                continue
            }
            if !files.contains(absolutePath) { files.append(absolutePath) }
            for entry in DotEnvironment.parse(text, environment: context.environment)
            where !result.contains(where: { $0.name == entry.name }) {
                result.append(entry)
            }
        }
        return result
    }

    /// `requires: {vars: [NAME, {name: NAME, enum: [A, B]}, {name: NAME, enum: {ref: .LIST}}]}`.
    /// Each name counts as read (an environment variable may set it).
    func requiredVariables(_ node: YAMLNode, file: String, variables: [String: TemplateValue]) -> [TaskOptions
        .RequiredVariable]
    {
        guard let entries = mapping(node, file: file, what: "'requires'") else { return [] }
        var result: [TaskOptions.RequiredVariable] = []
        for (key, value) in entries {
            guard key.string == "vars" else {
                unknownKey(key.string ?? "", at: location(key, file), allowed: ["vars"], in: "'requires'")
                continue
            }
            for item in list(value, file: file, what: "'requires: vars'") {
                var required: TaskOptions.RequiredVariable
                if let name = item.string {
                    required = TaskOptions.RequiredVariable(name: name, allowed: nil, location: location(item, file))
                } else if let fields = item.mapping, let name = item["name"]?.string {
                    required = TaskOptions.RequiredVariable(name: name, allowed: nil, location: location(item, file))
                    for (fieldKey, fieldValue) in fields where fieldKey.string != "name" {
                        guard fieldKey.string == "enum" else {
                            unknownKey(
                                fieldKey.string ?? "",
                                at: location(fieldKey, file),
                                allowed: ["name", "enum"],
                                in: "a required variable"
                            )
                            continue
                        }
                        if let reference = fieldValue["ref"]?.string {
                            let located = Located(value: "{{" + reference + "}}", location: location(fieldValue, file))
                            checkTemplate(located, known: KnownVariables(variables: variables, each: false))
                            let resolved = try? TaskfileTemplates.library.template(located.value).value(
                                .map(layered(variables))
                            )
                            required.allowed =
                                resolved.map { value in
                                    if case .list(let items) = value { return items.map(\.printed) }
                                    return [value.printed]
                                } ?? []
                        } else {
                            required.allowed = strings(fieldValue, file: file, what: "'enum'").map(\.value)
                        }
                    }
                } else {
                    fail(
                        .wrongType,
                        "each of 'requires: vars' must be a name or {name: NAME, enum: [...]}",
                        at: location(item, file)
                    )
                    continue
                }
                noteReference(required.name, known: KnownVariables(variables: variables, each: false))
                result.append(required)
            }
        }
        return result
    }

    /// `for:` on a command: a list, `sources`, `generates`, `{var: NAME, split: SEP, as: NAME}` or
    /// `{matrix: {KEY: [values]}}` (each row a list, or `{ref: .VAR}` naming a list variable).
    func commandLoop(_ node: YAMLNode, file: String, variables: [String: TemplateValue]) -> CommandLoop? {
        if let items = node.sequence {
            return CommandLoop(items: .list(items.compactMap { scalar($0, file: file, what: "an item of 'for'") }))
        }
        if let word = node.string {
            switch word {
            case "sources": return CommandLoop(items: .sources)
            case "generates": return CommandLoop(items: .generates)
            default:
                fail(
                    .invalidValue,
                    "'for: \(word)': expected sources, generates, a list, {var: NAME} or {matrix: …}",
                    at: location(node, file)
                )
                return nil
            }
        }
        guard let entries = mapping(node, file: file, what: "'for'") else { return nil }
        var variable: String?
        var split: String?
        var name = "ITEM"
        var matrix: [(key: String, values: [String])]?
        for (key, value) in entries {
            switch key.string ?? "" {
            case "var": variable = scalar(value, file: file, what: "'var'")
            case "split": split = scalar(value, file: file, what: "'split'")
            case "as": name = scalar(value, file: file, what: "'as'") ?? name
            case "matrix":
                guard let rows = mapping(value, file: file, what: "'matrix'") else { return nil }
                matrix = rows.compactMap { row in
                    guard let key = row.0.string else { return nil }
                    if let reference = row.1["ref"]?.string {
                        return (
                            key, matrixReference(reference, at: location(row.1, file), variables: variables, row: key)
                        )
                    }
                    return (key, strings(row.1, file: file, what: "'matrix: \(key)'").map(\.value))
                }
            default:
                unknownKey(
                    key.string ?? "",
                    at: location(key, file),
                    allowed: ["var", "split", "as", "matrix"],
                    in: "'for'"
                )
                return nil
            }
        }
        if let matrix { return CommandLoop(items: .matrix(matrix), name: name) }
        guard let variable else {
            fail(.wrongType, "'for' needs a list, sources, generates, 'var:' or 'matrix:'", at: location(node, file))
            return nil
        }
        return CommandLoop(items: .variable(variable, split: split), name: name)
    }

    /// A matrix row's `{ref: .VAR}`: the items of the list it names (go-task refuses anything
    /// else, and so does kiln: when a run plans the task).
    func matrixReference(_ reference: String, at place: SourceLocation, variables: [String: TemplateValue], row: String)
        -> [String]
    {
        let located = Located(value: "{{" + reference + "}}", location: place)
        checkTemplate(located, known: KnownVariables(variables: variables, each: false))
        let value = try? TaskfileTemplates.library.template(located.value).value(.map(layered(variables)))
        guard case .list(let items)? = value else {
            failOrDefer(.wrongType, "'matrix: \(row)' refers to \(reference), which isn't a list", at: place)
            return []
        }
        return items.map { item in
            if case .string(let text) = item { return text }
            return item.printed
        }
    }

    /// go-task's `timeout:` — a duration as Go writes one (`500ms`, `5m`, `1h30m`), above zero.
    func timeout(_ node: YAMLNode, file: String) -> GoDuration? {
        guard let text = scalar(node, file: file, what: "'timeout'") else { return nil }
        guard let duration = GoDuration(text) else {
            fail(
                .invalidValue,
                "'timeout' must be a duration as Go writes one (500ms, 30s, 5m, 1h30m), not '\(text)'",
                at: location(node, file)
            )
            return nil
        }
        guard duration.seconds > 0 else {
            fail(.invalidValue, "'timeout' must be greater than zero", at: location(node, file))
            return nil
        }
        return duration
    }

    /// `platforms: [linux, darwin/arm64]`: each entry an OS, an architecture or `OS/ARCH` that
    /// go-task knows; a misspelled one is an error, not a platform that never matches.
    func platforms(_ node: YAMLNode, file: String) -> [String] {
        strings(node, file: file, what: "'platforms'").compactMap { entry in
            let parts = entry.value.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            let valid =
                parts.count == 2
                ? TaskOptions.knownSystems.contains(parts[0]) && TaskOptions.knownArchitectures.contains(parts[1])
                : parts.count == 1
                    && (TaskOptions.knownSystems.contains(parts[0])
                        || TaskOptions.knownArchitectures.contains(parts[0]))
            guard valid else {
                fail(
                    .invalidValue,
                    "'\(entry.value)' in 'platforms' is not an OS, an architecture or OS/ARCH that go-task knows (linux, darwin, windows, amd64, arm64, …)",
                    at: entry.location
                )
                return nil
            }
            return entry.value
        }
    }

    /// `vars:` in go-task's forms: a value (typed as YAML types it; strings rendered as
    /// templates, in order, each seeing those before it), `{map: …}`, `{value: …}` and
    /// `{ref: EXPRESSION}` (another variable's value, not printed: a list stays a list).
    func decodeVariables(
        _ node: YAMLNode,
        file: String,
        into variables: inout [String: TemplateValue],
        directory: String,
        overrides: [(name: String, value: String)] = []
    ) {
        guard let entries = mapping(node, file: file, what: "'vars'") else { return }
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "a variable name") else { continue }
            // `kiln run TASK NAME=value` takes the main file's variable's place.
            if let override = overrides.last(where: { $0.name == name }) {
                variables[name] = .string(override.value)
                continue
            }
            decodeVariable(name, value, file: file, into: &variables, directory: directory)
        }
    }

    /// One variable of `vars:` (see ``decodeVariables(_:file:into:directory:overrides:)``),
    /// seeing `variables`, set in them.
    func decodeVariable(
        _ name: String,
        _ value: YAMLNode,
        file: String,
        into variables: inout [String: TemplateValue],
        directory: String
    ) {
        var valueNode = value
        if var fields = value.mapping {
            // `secret: true` beside the value: hidden in what kiln prints (see SecretMask).
            if let index = fields.firstIndex(where: { $0.key.string == "secret" }) {
                if bool(fields[index].value, file: file, what: "'secret'") == true { secretNames.insert(name) }
                fields.remove(at: index)
            }
            guard fields.count == 1, let kind = fields[0].key.string else {
                fail(
                    .wrongType,
                    "variable '\(name)' must be a value, or a map with one of sh, ref, map, value (and secret)",
                    at: location(value, file)
                )
                return
            }
            switch kind {
            case "map", "value":
                valueNode = fields[0].value
                if kind == "value", valueNode.mapping != nil {
                    fail(
                        .wrongType,
                        "variable '\(name)': a map goes under 'map:', not 'value:'",
                        at: location(valueNode, file)
                    )
                    return
                }
            case "ref":
                guard let expression = scalar(fields[0].value, file: file, what: "'ref'") else { return }
                let located = Located(value: "{{" + expression + "}}", location: location(fields[0].value, file))
                guard
                    checkTemplate(located, known: KnownVariables(variables: variables, each: false, task: false)) != nil
                else {
                    variables[name] = .null
                    return
                }
                do {
                    variables[name] = try TaskfileTemplates.library.template(located.value).value(
                        .map(layered(variables))
                    )
                } catch {
                    fail(
                        .invalidValue,
                        "variable '\(name)': 'ref: \(expression)': \(error.message)",
                        at: located.location
                    )
                    variables[name] = .null
                }
                return
            case "sh":
                variables[name] = dynamicValue(
                    of: fields[0].value,
                    name: name,
                    file: file,
                    variables: variables,
                    directory: directory
                )
                return
            default:
                fail(
                    .wrongType,
                    "'\(kind)' is not a valid variable type; use sh, ref, map or value, or a plain value",
                    at: location(fields[0].key, file)
                )
                return
            }
        }
        // go-task drops a map's null entries, at any depth (a list keeps its nulls).
        let typed = TaskfileTemplates.value(of: valueNode).droppingNullEntries
        variables[name] = renderValue(typed, node: valueNode, file: file, name: name, variables: variables)
    }

    /// A dynamic variable's value: its command (a template) run by the shell in `directory`, with
    /// the environment kiln runs in plus the variables (the environment's own values win, as in
    /// go-task). A command that fails is an error at the variable.
    func dynamicValue(
        of node: YAMLNode,
        name: String,
        file: String,
        variables: [String: TemplateValue],
        directory: String
    ) -> TemplateValue {
        guard let text = scalar(node, file: file, what: "'sh'") else { return .null }
        let located = Located(value: text, location: location(node, file))
        checkTemplate(located, known: KnownVariables(variables: variables, each: false, task: false))
        guard let command = renderNow(located, variables: variables, lenient: true) else { return .null }
        isVolatile = true
        // A task's own, outside the tasks this load is for: not run (see TaskfileContext.dynamicScope).
        if !runsDynamicVariables {
            skippedDynamicVariables = true
            return .string("")
        }
        var environment = context.environment
        for (key, value) in variables where environment[key] == nil {
            switch value {
            case .string, .int, .float, .bool: environment[key] = value.printed
            default: break
            }
        }
        switch dynamicVariables.value(of: command, directory: directory, environment: environment) {
        case .success(let output): return .string(output)
        case .failure(let failure):
            failOrDefer(
                .invalidValue,
                "variable '\(name)': its command '\(command)' failed: \(failure)",
                at: located.location
            )
            return .null
        }
    }

    /// `value` with the templates in its strings rendered with `variables` (inside lists and
    /// maps too, as go-task does).
    func renderValue(
        _ value: TemplateValue,
        node: YAMLNode,
        file: String,
        name: String,
        variables: [String: TemplateValue]
    ) -> TemplateValue {
        switch value {
        case .string(let text) where TextTemplate.hasActions(text):
            let located = Located(value: text, location: location(node, file))
            guard checkTemplate(located, known: KnownVariables(variables: variables, each: false, task: false)) != nil
            else {
                return .string("")
            }
            // Sized before it is rendered: variables that double each other reach gigabytes in
            // thirty steps.
            var size = text.utf8.count
            if let template = try? TaskfileTemplates.library.template(text) {
                for reference in template.variableReferences {
                    size += variables[reference.name]?.printed.utf8.count ?? 0
                }
            }
            guard size <= TaskfileLoader.maximumValueSize else {
                fail(
                    .invalidValue,
                    "variable '\(name)' would be \(size) bytes once its templates are filled in, over kiln's limit of \(TaskfileLoader.maximumValueSize)",
                    at: located.location
                )
                return .string("")
            }
            return .string(renderNow(located, variables: variables, lenient: true) ?? "")
        case .list(let items):
            let nodes = node.sequence ?? []
            return .list(
                items.enumerated().map { index, item in
                    renderValue(
                        item,
                        node: index < nodes.count ? nodes[index] : node,
                        file: file,
                        name: name,
                        variables: variables
                    )
                }
            )
        case .map(let entries):
            var result: [String: TemplateValue] = [:]
            let nodes = Dictionary(
                (node.mapping ?? []).compactMap { entry in entry.key.string.map { ($0, entry.value) } },
                uniquingKeysWith: { first, _ in first }
            )
            for (key, item) in entries {
                result[key] = renderValue(item, node: nodes[key] ?? node, file: file, name: name, variables: variables)
            }
            return .map(result)
        default:
            return value
        }
    }

    /// A file's `env:` as variables (go-task reads them before `vars:`): each value rendered with
    /// what came before, printing nothing for a variable not set yet (it may come from `vars:`,
    /// which the commands' environment sees).
    func decodeEnvironmentVariables(_ node: YAMLNode, file: String, into variables: inout [String: TemplateValue]) {
        guard let entries = node.mapping else { return }
        for (key, value) in entries {
            guard let name = key.string, value.scalar != nil else { continue }
            let typed = TaskfileTemplates.value(of: value)
            guard case .string(let text) = typed, TextTemplate.hasActions(text) else {
                variables[name] = typed
                continue
            }
            guard let template = try? TaskfileTemplates.library.template(text) else { continue }
            for reference in template.variableReferences {
                noteReference(reference.name, known: KnownVariables(variables: variables, each: false, task: false))
            }
            if let rendered = try? template.render(.map(layered(variables)), missing: .printNothing) {
                variables[name] = .string(rendered)
            }
        }
    }

    /// `variables` over the environment layer.
    func layered(_ variables: [String: TemplateValue]) -> [String: TemplateValue] {
        environmentLayer.isEmpty ? variables : environmentLayer.merging(variables) { _, own in own }
    }

    /// `env:` for the commands: each value rendered with `variables`. The environment kiln runs in
    /// wins (go-task's rule): a variable it sets keeps its value, and the model depends on it.
    func decodeEnvironment(
        _ node: YAMLNode,
        file: String,
        variables: [String: TemplateValue],
        into environment: inout [String: String]
    ) {
        guard let entries = mapping(node, file: file, what: "'env'") else { return }
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "an environment variable name") else { continue }
            guard value.scalar != nil else {
                fail(
                    .wrongType,
                    "environment variable '\(name)' must be a string, not \(describe(value))",
                    at: location(value, file)
                )
                continue
            }
            require("env:" + name)
            let typed = TaskfileTemplates.value(of: value)
            guard case .string(let text) = typed else {
                environment[name] = context.environment[name] ?? (typed == .null ? "" : typed.printed)
                continue
            }
            let located = Located(value: text, location: location(value, file))
            checkTemplate(located, known: KnownVariables(variables: variables, each: false, task: false))
            let rendered = renderNow(located, variables: variables, lenient: true) ?? text
            environment[name] = context.environment[name] ?? rendered
        }
    }

    /// A variable an included file defines under the name of one of the main file's, with another
    /// value, is refused. go-task merges every file's `vars:` into one table where the included
    /// file's value wins — for the main file's tasks too, and even `X: '{{.X | default "d"}}'`
    /// loses the main file's `X` — while kiln gives each file's tasks their own file's value:
    /// the two would run different commands, silently.
    func checkSharedVariableNames(_ node: YAMLNode, file: String, isMain: Bool) {
        guard let entries = node.mapping else { return }
        if isMain {
            for (key, value) in entries {
                guard let name = key.string else { continue }
                mainVariables[name] = (TaskfileTemplates.value(of: value), location(key, file))
            }
            return
        }
        for (key, value) in entries {
            guard let name = key.string, let main = mainVariables[name],
                main.value != TaskfileTemplates.value(of: value)
            else {
                continue
            }
            errors.append(
                TaskfileError(
                    .unsupported,
                    "variable '\(name)' is also defined by the main Taskfile, with another value: go-task gives every task this file's value (an included file's vars override the main file's), kiln gives each file's tasks their own file's; rename one, or pass the value with the include's 'vars:'",
                    at: location(key, file),
                    notes: [("the main Taskfile's '\(name)'", main.location)]
                )
            )
        }
    }

    /// `output: {group: {begin: TEMPLATE, end: TEMPLATE, error_only: BOOL}}`.
    func outputGroup(_ node: YAMLNode, file: String) -> OutputGroup? {
        guard let entries = mapping(node, file: file, what: "'output'") else { return nil }
        var group = OutputGroup()
        for (key, value) in entries {
            guard key.string == "group" else {
                unknownKey(key.string ?? "", at: location(key, file), allowed: ["group"], in: "'output'")
                return nil
            }
            guard !value.isNull else { continue }
            guard let fields = mapping(value, file: file, what: "'output: group'") else { return nil }
            for (field, setting) in fields {
                switch field.string ?? "" {
                case "begin", "end":
                    guard let text = scalar(setting, file: file, what: "'\(field.string ?? "")'") else { return nil }
                    checkTemplate(
                        Located(value: text, location: location(setting, file)),
                        known: KnownVariables(variables: [:], each: false)
                    )
                    if field.string == "begin" { group.begin = text } else { group.end = text }
                case "error_only": group.showsOnlyFailures = bool(setting, file: file, what: "'error_only'") ?? false
                default:
                    unknownKey(
                        field.string ?? "",
                        at: location(field, file),
                        allowed: ["begin", "end", "error_only"],
                        in: "'output: group'"
                    )
                    return nil
                }
            }
        }
        return group
    }

    /// `remote: {cache: grpc://HOST:PORT, instance: NAME, read-only: true, timeout: 5s}`.
    func decodeRemote(_ node: YAMLNode, file: String) -> RemoteSettings? {
        guard let entries = mapping(node, file: file, what: "'remote'") else { return nil }
        var endpoint: RemoteEndpoint?
        var instance = ""
        var readOnly = false
        var timeout: Duration = .seconds(5)
        var urlNode: YAMLNode?
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "a key of 'remote'") else { continue }
            switch name {
            case "cache":
                urlNode = value
            case "instance":
                instance = scalar(value, file: file, what: "'instance'") ?? ""
            case "read-only":
                readOnly = bool(value, file: file, what: "'read-only'") ?? false
            case "timeout":
                guard let text = scalar(value, file: file, what: "'timeout'") else { continue }
                guard let duration = GoDuration(text), duration.seconds > 0 else {
                    fail(
                        .invalidValue,
                        "'timeout' must be a duration greater than zero as Go writes one (500ms, 5s), not '\(text)'",
                        at: location(value, file)
                    )
                    continue
                }
                timeout = .nanoseconds(Int64(duration.seconds * 1e9))
            default:
                unknownKey(
                    name,
                    at: location(key, file),
                    allowed: ["cache", "instance", "read-only", "timeout"],
                    in: "'remote'"
                )
            }
        }
        guard let urlNode else {
            fail(
                .invalidValue,
                "'remote' needs 'cache: grpc://HOST:PORT', the server's address",
                at: location(node, file)
            )
            return nil
        }
        if let text = scalar(urlNode, file: file, what: "'cache'") {
            endpoint = RemoteEndpoint(url: text, instance: instance)
            if endpoint == nil {
                fail(
                    .invalidValue,
                    "'cache' must be grpc://HOST:PORT (TLS and Unix sockets aren't supported yet), not '\(text)'",
                    at: location(urlNode, file)
                )
            }
        }
        return endpoint.map { RemoteSettings(endpoint: $0, readOnly: readOnly, timeout: timeout) }
    }

    func decodeResources(_ node: YAMLNode, file: String) {
        guard let entries = mapping(node, file: file, what: "'resources'") else { return }
        for (key, value) in entries {
            guard let name = scalar(key, file: file, what: "a resource name") else { continue }
            let widthYAMLNode = value["width"] ?? value
            guard let text = scalar(widthYAMLNode, file: file, what: "the width of resource '\(name)'") else {
                continue
            }
            guard let width = Int(text), width > 0 else {
                fail(
                    .invalidValue,
                    "the width of resource '\(name)' must be a positive integer, not '\(text)'",
                    at: location(widthYAMLNode, file)
                )
                continue
            }
            resources.append(ResourceDefinition(name: name, width: width, location: location(key, file)))
        }
    }

    // MARK: Cross-checks

    /// Resolves every task's `deps` and `- task:` calls to the tasks they name — in an included
    /// file, its own namespace first — decodes the instances the ones with `vars:` need (whose
    /// own references may need more), then cuts each task that calls others into its steps.
    func resolveReferences() {
        // Aliases answer like names, in `deps` and on the command line: none may be taken twice.
        var aliases: [String: String] = [:]
        for task in tasks {
            for alias in task.options.aliases {
                if taskIndex[alias] != nil || aliases[alias] != nil {
                    fail(
                        .duplicateTask,
                        "alias '\(alias)' of task '\(task.name)' is already the name or alias of '\(aliases[alias] ?? alias)'",
                        at: task.location
                    )
                }
                aliases[alias] = task.name
            }
        }
        aliasMap = aliases
        var pending = Array(tasks.indices)
        var targetRequests = wildcardTargets()
        while true {
            while !pending.isEmpty || !targetRequests.isEmpty {
                var requests = targetRequests
                targetRequests = [:]
                for index in pending { resolveTask(at: index, requests: &requests) }
                let before = tasks.count
                decodeInstances(requests)
                pending = Array(before..<tasks.count)
            }
            // The tasks this load is for whose own dynamic variables were skipped: decoded again,
            // running them (their references may name more).
            let again = lazyTasksNeeded()
            guard !again.isEmpty else { break }
            pending = decodeEvaluating(again)
        }
        for (index, found) in mistakes { tasks[index] = tasks[index].addingDeferredErrors(found) }
        forwardRepeatedTasks()
        splitConditions()
        splitSteps()
        splitDeferrals()
    }

    /// A file included under several namespaces (`common:` by the main file and by each platform's
    /// file) defines the same task under several names. Where two of them would do exactly the
    /// same — same commands, variables, directory, outputs, and dependencies that are themselves
    /// the same — the later one forwards to the first: it keeps its name and description, and
    /// depends on the first instead of running the same commands (which would write the same
    /// outputs twice). Tasks whose include differs in anything (`vars:`, `dir:`) stay apart.
    func forwardRepeatedTasks() {
        var fileUses: [String: Int] = [:]
        for context in contexts { fileUses[context.file, default: 0] += 1 }
        guard fileUses.values.contains(where: { $0 > 1 }) else { return }
        // Repeated until nothing changes: a task's dependencies count as the same once they forward.
        var forwardsTo: [String: String] = [:]
        var changed = true
        while changed {
            changed = false
            var first: [RepeatedTaskKey: String] = [:]
            for task in tasks where forwardsTo[task.name] == nil {
                guard let origin = origins[task.name] ?? task.partOf.flatMap({ origins[$0] }),
                    fileUses[contexts[origin.context].file, default: 0] > 1
                else { continue }
                let key = RepeatedTaskKey(
                    task,
                    localName: origin.localName,
                    steps: references[task.name]?.steps,
                    forwardsTo: forwardsTo
                )
                if let earlier = first[key] {
                    forwardsTo[task.name] = earlier
                    changed = true
                } else {
                    first[key] = task.name
                }
            }
        }
        guard !forwardsTo.isEmpty else { return }
        for index in tasks.indices {
            guard let target = forwardsTo[tasks[index].name] else { continue }
            let task = tasks[index]
            references[task.name] = nil
            tasks[index] = TaskDefinition(
                name: task.name,
                location: task.location,
                summary: task.summary,
                dependencies: [Located(value: target, location: task.location)],
                commands: [],
                sources: [],
                generates: [],
                variables: task.variables,
                environment: [:],
                directory: task.directory,
                resources: [],
                each: .none,
                batchSize: nil,
                kind: Located(value: "shell", location: task.location),
                pluginConfiguration: nil,
                allowsOutsideRoot: false,
                file: task.file,
                options: task.options.forwarding
            )
        }
    }

    /// The task a `deps` item or a `- task:` call written in a file under `namespace` names, as
    /// go-task merges included files into their includers: from the innermost include out, each
    /// level puts its name in front (`b` in `a:`'s file is `a:b`) — or, instead, takes off a
    /// leading `:`, so `:u` written two includes deep is `a:u`, one level up. A `:` still left at
    /// the top names the main file's task, as go-task's guide says (go-task itself finds no task
    /// `:u` there). A flattened include is no level. Only what the file says is followed: a name
    /// its namespace lacks is never looked up in the main file instead.
    func calledName(_ written: String, namespace: String) -> String {
        var name = Substring(written)
        for level in (namespaceLevels[namespace] ?? []).reversed() {
            if name.hasPrefix(":") { name = name.dropFirst() } else { name = Substring(level + ":" + name) }
        }
        return String(name.hasPrefix(":") ? name.dropFirst() : name)
    }

    /// Resolves the `deps` and calls of the task at `index` (see ``resolveReferences()``); the
    /// instances they need and nobody asked for yet are added to `requests`.
    func resolveTask(at index: Int, requests: inout [Int: [(localName: String, instance: InstanceRequest)]]) {
        let aliases = aliasMap
        let name = tasks[index].name
        let namespace = namespaces[name] ?? ""
        // A mistake in a name the task gives: reported when a run plans the task.
        func refuse(_ code: TaskfileError.Code, _ message: String, at location: SourceLocation) {
            mistakes[index, default: []].append(
                TaskOptions.DeferredError(code: code.description, message: message, location: location)
            )
        }
        func resolve(
            _ written: Located<String>,
            variables: [String: TemplateValue]?,
            what: String,
            site: Int,
            excludedHere: SourceLocation? = nil,
            ignoresFailure: Bool = false,
            timeout: GoDuration? = nil
        ) -> Located<String>? {
            let target = calledName(written.value, namespace: namespace)
            var variables = variables
            var concreteName: String?
            var found = taskIndex[target] != nil && origins[target] != nil ? target : aliases[target]
            if found == nil, let (task, matches) = wildcardMatch(target) {
                // `start:*` named as `start:web`: an instance with `MATCH` set, under the name written.
                found = task
                concreteName = target
                variables = (variables ?? [:]).merging(["MATCH": .list(matches.map(TemplateValue.string))]) {
                    _,
                    match in match
                }
            }
            guard let found else {
                var message =
                    "unknown task '\(written.value)' in the \(what) of '\(tasks[index].options.partOf ?? name)'"
                if target != written.value { message += " ('\(target)', as go-task reads it there)" }
                // The same name in an outer file is reached with a `:` for each level up.
                let levels = namespaceLevels[namespace]?.count ?? 0
                let outer = (1...max(1, levels)).lazy.map { String(repeating: ":", count: $0) + written.value }
                    .map { (written: $0, name: self.calledName($0, namespace: namespace)) }
                    .first { $0.name != target && self.origins[$0.name] != nil }
                if let outer {
                    message += "; did you mean '\(outer.written)' ('\(outer.name)')?"
                } else if let close = suggestion(for: target, among: origins.keys) {
                    message += "; did you mean '\(close)'?"
                }
                refuse(.unknownTask, message, at: written.location)
                return nil
            }
            // A call whose `platforms:` leave this machine out: go-task calls the task anyway.
            // Where the task's own `platforms:` leave it out too, both skip it; otherwise kiln
            // would have to pick between the Taskfile's words and go-task's deeds.
            if let excludedHere, let called = taskIndex[found].map({ tasks[$0] }),
                TaskOptions.allows(called.options.platforms)
            {
                refuse(
                    .unsupported,
                    "this call's 'platforms:' leave this machine out, but go-task ignores 'platforms:' on a '- task:' call and runs '\(found)' here all the same; put 'platforms:' on task '\(found)', or remove them from the call",
                    at: excludedHere
                )
                return nil
            }
            if runsOnce.contains(found) {
                let given = variables.map { TaskInstanceName.canonical(.map($0)) } ?? ""
                if let first = onceCalls[found], first.variables != given {
                    refuse(
                        .unsupported,
                        "task '\(found)' has 'run: once' and is called with other variables at \(first.location); go-task runs it once, with the variables of whichever caller comes first, and kiln doesn't pick one: give every call the same 'vars:', or remove 'run: once' (kiln then runs it once per set of variables)",
                        at: written.location
                    )
                    return nil
                }
                onceCalls[found] = (given, written.location, name)
            }
            // What the call asks of the called task's jobs, which kiln applies to a task whose
            // commands are one job: `ignore_error:` to anything but `each:`, `timeout:` to
            // commands without calls. A deferred call's failure changes nothing (go-task's rule),
            // as if it said `ignore_error`.
            let deferred = what == "deferred calls"
            if ignoresFailure || timeout != nil || deferred, let called = taskIndex[found].map({ tasks[$0] }) {
                let key = deferred ? "defer" : ignoresFailure ? "ignore_error" : "timeout"
                let kept =
                    deferred
                    ? "defer a call to a task that calls it"
                    : ignoresFailure
                        ? "put 'ignore_error: true' on its commands" : "put 'timeout:' on its commands"
                let unsupported =
                    called.each != .none
                    ? "'each:'"
                    : timeout == nil
                        ? nil
                        : called.kind.value != "shell"
                            ? "a plugin's jobs"
                            : references[found]?.steps != nil ? "'- task:' calls" : nil
                if let unsupported {
                    refuse(
                        .unsupported,
                        "'\(key):' on a call to task '\(found)', which has \(unsupported), isn't supported yet; \(kept)",
                        at: written.location
                    )
                    return nil
                }
            }
            // `run: always`: a task of its own for each place that names it. A call with
            // `ignore_error:` or `timeout:` gets one too: the same task needed elsewhere fails
            // the run there, or has no such bound. A deferred call too: it runs when the task
            // ends, whoever else needs the task.
            let always = runsAlways.contains(found) || deferred
            let bounded = ignoresFailure || timeout != nil
            guard let variables = variables ?? (always || bounded ? [:] : nil) else {
                return Located(value: found, location: written.location)
            }
            func named(_ variables: [String: TemplateValue]) -> String {
                var instance: String
                if let concreteName {
                    var called = variables
                    called["MATCH"] = nil
                    instance = called.isEmpty ? concreteName : TaskInstanceName.make(concreteName, variables: called)
                } else {
                    instance = variables.isEmpty ? found : TaskInstanceName.make(found, variables: variables)
                }
                if always || bounded {
                    let notes = (ignoresFailure ? ", failure ignored" : "") + (timeout.map { ", timeout \($0)" } ?? "")
                    let kind = what == "deps" ? "dep" : what == "deferred calls" ? "deferred call" : "call"
                    instance += " [\(kind) \(site + 1) of \(name)\(notes)]"
                }
                return instance
            }
            let instance = named(variables)
            let shown = shownInstanceName(instance, variables: variables, naming: named)
            if instances.insert(instance).inserted {
                guard instances.count <= TaskfileLoader.maximumInstances else {
                    if instances.count == TaskfileLoader.maximumInstances + 1 {
                        fail(
                            .invalidValue,
                            "more than \(TaskfileLoader.maximumInstances) tasks called with different variables or with 'run: always' (a task calling itself?)",
                            at: written.location
                        )
                    }
                    return nil
                }
                if let origin = origins[found] {
                    requests[origin.context, default: []].append(
                        (
                            origin.localName,
                            InstanceRequest(
                                name: shown,
                                variables: variables,
                                ignoresFailure: ignoresFailure || deferred,
                                timeout: timeout
                            )
                        )
                    )
                }
            }
            return Located(value: shown, location: written.location)
        }
        let called = references[name]
        tasks[index].dependencies = tasks[index].dependencies.enumerated().compactMap { position, dependency in
            let reference = called?.dependencyCalls[position]
            return resolve(
                dependency,
                variables: reference?.variables,
                what: "deps",
                site: position,
                timeout: reference?.timeout
            )
        }
        if let steps = called?.steps {
            var calls = 0
            // Into a local first: `resolve` reads `references` (the called task's steps).
            let resolved: [TaskStep] = steps.compactMap { step in
                guard case .call(let reference) = step else { return step }
                calls += 1
                return resolve(
                    reference.name,
                    variables: reference.variables,
                    what: "calls",
                    site: calls - 1,
                    excludedHere: reference.excludedHere,
                    // A task's own `ignore_error: true` covers its calls too (go-task's rule).
                    ignoresFailure: reference.ignoresFailure || tasks[index].options.ignoresError,
                    timeout: reference.timeout
                ).map { .call(TaskReference(name: $0, variables: nil, test: reference.test)) }
            }
            references[name]?.steps = resolved
        }
        if let deferred = called?.deferredCalls, !deferred.isEmpty {
            let resolved = deferred.enumerated().compactMap { site, reference in
                reference.runsCommand
                    ? reference
                    : resolve(
                        reference.name,
                        variables: reference.variables,
                        what: "deferred calls",
                        site: site,
                        timeout: reference.timeout
                    )
                    .map { TaskReference(name: $0, variables: nil) }
            }
            // All of them or none: a call that names no task is a mistake of the task.
            references[name]?.deferredCalls = resolved.count == deferred.count ? resolved : []
        }
    }

    /// go-task's wildcard names: the first task (in the order the files define them) one of
    /// whose names or aliases, with each `*` standing for any text, is `name` — and the texts the
    /// `*`s stand for (`MATCH`), each as long as the rest allows (as go-task's `(.*)`).
    func wildcardMatch(_ name: String) -> (task: String, matches: [String])? {
        guard hasWildcardNames else { return nil }
        for task in tasks where origins[task.name] != nil {
            for pattern in [task.name] + task.options.aliases where pattern.contains("*") {
                if let matches = WildcardName.match(pattern, name) { return (task.name, matches) }
            }
        }
        return nil
    }

    /// Whether any task is named with a `*`.
    var hasWildcardNames: Bool {
        origins.keys.contains { $0.contains("*") } || aliasMap.keys.contains { $0.contains("*") }
    }

    /// The instances that the names this load is for (``TaskfileContext/dynamicScope``) need:
    /// those no task or alias has, that a wildcard name matches (`kiln run start:web`).
    func wildcardTargets() -> [Int: [(localName: String, instance: InstanceRequest)]] {
        guard case .tasks(let names) = context.dynamicScope, hasWildcardNames else { return [:] }
        var requests: [Int: [(localName: String, instance: InstanceRequest)]] = [:]
        for name in names where taskIndex[name] == nil && aliasMap[name] == nil {
            guard let (task, matches) = wildcardMatch(name), let origin = origins[task], instances.insert(name).inserted
            else { continue }
            let request = InstanceRequest(name: name, variables: ["MATCH": .list(matches.map(TemplateValue.string))])
            requests[origin.context, default: []].append((origin.localName, request))
        }
        return requests
    }

    /// The tasks the load is for (``TaskfileContext/dynamicScope``), and what they depend on and
    /// call, whose own dynamic variables weren't run.
    func lazyTasksNeeded() -> [String] {
        guard !lazyTasks.isEmpty else { return [] }
        var roots: [String]
        switch context.dynamicScope {
        case .all, .none: return []
        case .tasks(let names): roots = names.isEmpty ? ["default"] : names
        case .hook(let name): roots = (hooks[name] ?? []).map(\.value)
        }
        roots = roots.map { aliasMap[$0] ?? $0 }
        var seen = Set<String>()
        var needed: [String] = []
        while let name = roots.popLast() {
            guard seen.insert(name).inserted, let index = taskIndex[name] else { continue }
            if lazyTasks.contains(name) { needed.append(name) }
            roots += tasks[index].dependencies.map(\.value)
            for case .call(let reference) in references[name]?.steps ?? [] { roots.append(reference.name.value) }
            roots += (references[name]?.deferredCalls ?? []).map(\.name.value)
        }
        // The same task of a file included twice is run once (forwardRepeatedTasks), which needs
        // its copies' values: their dynamic variables are the same commands, run once.
        func place(_ name: String) -> String? {
            guard let origin = instanceOrigins[name]?.origin ?? origins[name] else { return nil }
            let called = instanceOrigins[name].map { TaskInstanceName.canonical(.map($0.request.variables)) } ?? ""
            return contexts[origin.context].file + "\u{0}" + origin.localName + "\u{0}" + called
        }
        let places = Set(needed.compactMap(place))
        if !places.isEmpty {
            for name in lazyTasks where !seen.contains(name) {
                if let place = place(name), places.contains(place) { needed.append(name) }
            }
        }
        return needed
    }

    /// Decodes `names` again, in place, running their dynamic variables; returns their indices.
    func decodeEvaluating(_ names: [String]) -> [Int] {
        var byContext: [Int: [(localName: String, name: String, instance: InstanceRequest?)]] = [:]
        for name in names {
            if let made = instanceOrigins[name] {
                byContext[made.origin.context, default: []].append((made.origin.localName, name, made.request))
            } else if let origin = origins[name] {
                byContext[origin.context, default: []].append((origin.localName, name, nil))
            }
            lazyTasks.remove(name)
        }
        var indices: [Int] = []
        forEachTaskNode(byContext, localName: \.localName) { contextIndex, key, value, entry in
            guard let old = taskIndex.removeValue(forKey: entry.name) else { return }
            let count = tasks.count
            decodeTask(
                name: entry.localName,
                key: key,
                body: value,
                context: contextIndex,
                instance: entry.instance,
                evaluating: true
            )
            if tasks.count > count {
                // The task itself is the first appended (the pieces made of its deferred commands
                // are already in place).
                tasks[old] = tasks.remove(at: count)
            }
            taskIndex[entry.name] = old
            mistakes[old] = nil
            onceCalls = onceCalls.filter { $0.value.caller != entry.name }
            indices.append(old)
        }
        return indices
    }

    /// Decodes each requested instance from its file's text, by the file's context.
    func decodeInstances(_ requests: [Int: [(localName: String, instance: InstanceRequest)]]) {
        forEachTaskNode(requests, localName: \.localName) { contextIndex, key, value, request in
            instanceOrigins[request.instance.name] = (
                TaskOrigin(context: contextIndex, localName: request.localName), request.instance
            )
            decodeTask(
                name: request.localName,
                key: key,
                body: value,
                context: contextIndex,
                instance: request.instance
            )
        }
    }

    /// Streams the tasks of each context's file (in context order) and calls `body` with the
    /// key and body of each task an entry names, once per entry: how a task is decoded again.
    func forEachTaskNode<Entry>(
        _ wanted: [Int: [Entry]],
        localName: (Entry) -> String,
        _ body: (_ context: Int, _ key: YAMLNode, _ value: YAMLNode, _ entry: Entry) -> Void
    ) {
        for (contextIndex, entries) in wanted.sorted(by: { $0.key < $1.key }) {
            guard let text = texts[contexts[contextIndex].file] else { continue }
            let byName = Dictionary(grouping: entries, by: localName)
            // The file parsed before: it has no syntax error now. (The parser keeps the callback
            // only while it parses.)
            withoutActuallyEscaping(body) { body in
                _ = try? YAMLNode.parse(
                    text,
                    mode: .streaming("tasks") { key, value in
                        guard let name = key.string, let found = byName[name] else { return }
                        for entry in found { body(contextIndex, key, value, entry) }
                    }
                )
            }
        }
    }

    /// An instance's name as kiln shows it: the secrets among its variables' values masked
    /// (``SecretMask``), numbered when two instances would then look alike. The name is its
    /// identity too (the build state's key): a secret never reaches `.kiln/` through it.
    /// `naming` makes the name from the variables: from masked ones, so that no part of a
    /// secret shows (a long value is shortened) and none is hashed into it.
    func shownInstanceName(
        _ name: String,
        variables: [String: TemplateValue],
        naming: ([String: TemplateValue]) -> String
    ) -> String {
        guard !secretNames.isEmpty else { return name }
        if let known = maskedInstanceNames[name] { return known }
        // The tasks decoded so far (all of the files' tasks: instances come after them), and the
        // call's own values of secret names.
        if knownSecrets == nil { knownSecrets = secretMask() }
        let own = variables.filter { secretNames.contains($0.key) }.map(\.value.printed)
        let mask = own.isEmpty ? knownSecrets ?? SecretMask() : SecretMask(values: (knownSecrets?.values ?? []) + own)
        var changed = false
        let maskedVariables = variables.mapValues { value -> TemplateValue in
            let text = value.printed
            let hidden = mask.masking(text)
            guard hidden != text else { return value }
            changed = true
            return .string(hidden)
        }
        guard changed else { return name }
        let masked = naming(maskedVariables)
        var candidate = masked
        var number = 2
        while !shownMaskedNames.insert(candidate).inserted {
            candidate = "\(masked) #\(number)"
            number += 1
        }
        maskedInstanceNames[name] = candidate
        return candidate
    }

    /// The values of the secret variables, as the tasks see them (a name written `secret: true`
    /// anywhere is secret in every task).
    func secretMask() -> SecretMask {
        guard !secretNames.isEmpty else { return SecretMask() }
        return SecretMask(values: tasks.flatMap { task in secretNames.compactMap { task.variables[$0]?.printed } })
    }

    /// Makes each task whose `if:` is a shell test a call of its body with that test (see
    /// ``TaskDefinition/splitForCondition(bodyName:)``): the body takes the task's steps and
    /// deferred calls, which are cut next.
    func splitConditions() {
        for index in tasks.indices {
            guard let test = tasks[index].options.taskTest else { continue }
            let task = tasks[index]
            let bodyName = task.name + " [if]"
            if let existing = taskIndex[bodyName] {
                fail(
                    .duplicateTask,
                    "task '\(bodyName)' is defined twice: kiln names the body of task '\(task.name)' so",
                    at: tasks[existing].location
                )
                continue
            }
            let (body, wrapper) = task.splitForCondition(bodyName: bodyName)
            tasks[index] = wrapper
            taskIndex[bodyName] = tasks.count
            tasks.append(body)
            references[bodyName] = references[task.name]
            references[task.name] = TaskReferences(
                dependencyCalls: [:],
                steps: [
                    .call(
                        TaskReference(
                            name: Located(value: bodyName, location: test.location),
                            variables: nil,
                            test: test
                        )
                    )
                ]
            )
        }
    }

    /// Cuts each task whose `cmds` call other tasks into steps, one per call: step k runs the
    /// commands after the k-th call, once the step before it and the called task are done; the
    /// called task starts only once the step before the call has run (see BuildRun). The last
    /// step keeps the task's name, so what depends on the task waits for all of it.
    func splitSteps() {
        for index in tasks.indices {
            let task = tasks[index]
            guard let steps = references[task.name]?.steps else { continue }
            // (the call that starts the step, its shell test, the range of commands it runs)
            var pieces: [(call: Located<String>?, test: Located<String>?, commands: Range<Int>)] = [(nil, nil, 0..<0)]
            for step in steps {
                switch step {
                case .command(let position):
                    let last = pieces[pieces.count - 1]
                    pieces[pieces.count - 1].commands = last.commands.lowerBound..<(position + 1)
                case .call(let reference):
                    let next = pieces[pieces.count - 1].commands.upperBound
                    pieces.append((reference.name, reference.test, next..<next))
                }
            }
            // Declared files or `status:`: the first step decides for the whole task, as go-task
            // decides it at its start (TaskOptions.guardedWork).
            let decidedWhole = !task.sources.isEmpty || !task.generates.isEmpty || !task.options.statusChecks.isEmpty
            // Nothing before the first call: the first call waits only for the task's deps.
            if pieces[0].commands.isEmpty, task.options.preconditions.isEmpty, !decidedWhole { pieces.removeFirst() }
            var work: [String] = []
            for piece in pieces.dropFirst() {
                let test = piece.test.map { " if " + $0.value } ?? ""
                work.append("\u{0}task " + (piece.call?.value ?? "") + test)
                work += task.commands[piece.commands].map(\.value)
            }
            let guarding = decidedWhole ? (first: TaskDefinition.pieceName(task.name, 1), work: work) : nil
            var previous: Located<String>?
            for (position, piece) in pieces.enumerated() {
                let isLast = position == pieces.count - 1
                let name = isLast ? task.name : TaskDefinition.pieceName(task.name, position + 1)
                var dependencies = previous.map { [$0] } ?? task.dependencies
                if let call = piece.call { dependencies.append(call) }
                let step = task.step(
                    named: name,
                    commands: piece.commands,
                    dependencies: dependencies,
                    calls: piece.call.map { [$0] } ?? [],
                    isFirst: position == 0,
                    isLast: isLast,
                    guarding: guarding,
                    callTest: piece.test
                )
                if isLast {
                    tasks[index] = step
                } else {
                    if let existing = taskIndex[name] {
                        fail(
                            .duplicateTask,
                            "task '\(name)' is defined twice: kiln names the steps of task '\(task.name)' so",
                            at: tasks[existing].location
                        )
                        continue
                    }
                    taskIndex[name] = tasks.count
                    tasks.append(step)
                }
                previous = Located(value: name, location: task.location)
            }
        }
    }

    /// Cuts each task with deferred calls in two: its body, `T #1`, and its end, `T`, which
    /// waits for the body and the deferred calls it reached (``TaskDefinition/splitForDeferredCalls(_:)``).
    func splitDeferrals() {
        let names = references.compactMap { $0.value.deferredCalls.isEmpty ? nil : $0.key }.sorted()
        for name in names {
            guard let index = taskIndex[name], let called = references[name]?.deferredCalls else { continue }
            let task = tasks[index]
            // After the steps between calls, if it has some (splitSteps): `T #1`, `T #2`, …
            let number = TaskDefinition.pieces(of: task.name) { taskIndex[$0] }.count + 1
            let (body, end) = task.splitForDeferredCalls(
                called.map(\.name),
                bodyName: TaskDefinition.pieceName(task.name, number)
            )
            tasks[index] = end
            taskIndex[body.name] = tasks.count
            tasks.append(body)
        }
    }

    func checkResources() {
        let defined = Set(resources.map(\.name))
        for task in tasks {
            for claim in task.resources {
                let family = claim.value.split(separator: ":", maxSplits: 1).first.map(String.init) ?? claim.value
                if claim.value.hasPrefix("net:"), claim.value.count > 4 { continue }
                // `remote`: the remote executor's, or what the job holds without it (docs/remote.md).
                if claim.value == "cpu" || claim.value == "disk" || claim.value == RemoteSettings.resource
                    || defined.contains(claim.value)
                {
                    continue
                }
                var message = "task '\(task.name)' claims resource '\(claim.value)', which no one defined; "
                message +=
                    family == "net"
                    ? "write net:HOST" : "define it under 'resources:' or use cpu, disk, net:HOST or remote"
                fail(.undefinedResource, message, at: claim.location)
            }
        }
    }

    /// Reports each dependency cycle once, with a note at every dependency on it. Depth first
    /// with an explicit stack: a chain of a million tasks needs no million stack frames.
    func checkCycles() {
        var state = [UInt8](repeating: 0, count: tasks.count)  // 1 = on the path, 2 = done
        // The path: each task on it, where it was named, and how many of its dependencies are seen.
        var path: [(index: Int, location: SourceLocation, next: Int)] = []
        for start in tasks.indices where state[start] == 0 {
            state[start] = 1
            path.append((start, tasks[start].location, 0))
            while let top = path.last {
                let dependencies = tasks[top.index].dependencies
                guard top.next < dependencies.count else {
                    state[top.index] = 2
                    path.removeLast()
                    continue
                }
                path[path.count - 1].next += 1
                let dependency = dependencies[top.next]
                guard let index = taskIndex[dependency.value] else { continue }
                switch state[index] {
                case 0:
                    state[index] = 1
                    path.append((index, dependency.location, 0))
                case 1:
                    let first = path.firstIndex { $0.index == index } ?? 0
                    let cycle = path[first...].map { tasks[$0.index].name } + [tasks[index].name]
                    let notes =
                        path[first...].dropFirst().map {
                            ("'\(tasks[$0.index].name)' is a dependency here", Optional($0.location))
                        }
                        + [("'\(tasks[index].name)' is a dependency here", Optional(dependency.location))]
                    errors.append(
                        TaskfileError(
                            .dependencyCycle,
                            "dependency cycle: \(cycle.joined(separator: " → "))",
                            at: path[first].location,
                            notes: notes
                        )
                    )
                default:
                    break
                }
            }
        }
    }

    /// Two tasks may not declare the same output (a plain `generates:` path, templates rendered):
    /// which one wrote it would depend on timing, as ninja's "multiple rules generate X" says.
    /// Outputs that name an `each:` job's file are compared per job when the task runs.
    func checkOutputs() {
        var owners: [String: (task: String, location: SourceLocation)] = [:]
        // The pieces that follow a guard declare its outputs too (their commands may loop over
        // them): the guard speaks for them.
        for task in tasks where task.guardedBy == nil {
            var variables: [String: TemplateValue]?
            for output in task.generates where !GlobList.isExclusion(output.value) {
                var text = output.value
                if TextTemplate.hasActions(text) {
                    guard let template = try? TaskfileTemplates.library.template(text) else { continue }
                    let names = template.variableReferences.map(\.name)
                    if names.contains(where: TaskfileLoader.eachVariables.contains) { continue }
                    if variables == nil { variables = task.templateVariables }
                    guard let rendered = try? template.render(.map(variables ?? [:])) else { continue }
                    text = rendered
                }
                guard GlobList.isPlainPath(text) else { continue }
                let path = Path.absolute(text, base: task.directory)
                if let owner = owners[path], owner.task != task.name {
                    errors.append(
                        TaskfileError(
                            .duplicateOutput,
                            "tasks '\(owner.task)' and '\(task.name)' both declare the output \(Path.relative(path, to: root)); only one task may write a file",
                            at: output.location,
                            notes: [("'\(owner.task)' declares it here", owner.location)]
                        )
                    )
                } else {
                    owners[path] = (task.name, output.location)
                }
            }
        }
    }

    // MARK: Templates

    /// Parses `text` as a template (once: the library keeps it), reporting a syntax error, an
    /// unknown function or a wrong argument count at its place; `nil` after an error. (A variable
    /// printed as it is that nothing defines is the planner's to report: the command line may
    /// define it.)
    @discardableResult
    func checkTemplate(_ text: Located<String>, known: KnownVariables) -> TextTemplate? {
        // Most strings have no template at all.
        guard TextTemplate.hasActions(text.value) else { return nil }
        let template: TextTemplate
        do {
            template = try TaskfileTemplates.library.template(text.value)
        } catch {
            // In a task's values: reported when a run plans it (go-task parses it when it runs it).
            failOrDefer(.invalidTemplate, "template: \(error.message)", at: locate(offset: error.offset, in: text))
            return nil
        }
        for reference in template.variableReferences { noteReference(reference.name, known: known) }
        return template
    }

    /// `text` rendered now, with `variables` (what a `dir:`, a `sources:` pattern, a variable's
    /// value or an `env:` value becomes); `nil` after reporting why it can't be. A value
    /// (`lenient`) prints nothing for a variable that isn't set, as go-task does; a path doesn't,
    /// and one that isn't set is reported as the planner reports it in a command (`task` is
    /// the task whose path it is).
    func renderNow(
        _ text: Located<String>,
        variables: [String: TemplateValue],
        lenient: Bool = false,
        task: String? = nil
    )
        -> String?
    {
        guard TextTemplate.hasActions(text.value) else { return text.value }
        guard let template = try? TaskfileTemplates.library.template(text.value) else { return nil }
        let scope = layered(variables)
        do {
            return try template.render(.map(scope), missing: lenient ? .printNothing : .fail)
        } catch {
            if let unset = template.printedVariableReferences.first(where: { scope[$0.name] == nil }) {
                failOrDefer(
                    .undefinedVariable,
                    TaskfileError.undefinedVariableMessage(unset.name, task: task, known: scope.keys),
                    at: locate(offset: TaskfileTemplates.actionStart(before: unset.offset, in: text.value), in: text)
                )
            } else {
                failOrDefer(.invalidTemplate, "template: \(error.message)", at: locate(offset: error.offset, in: text))
            }
            return nil
        }
    }

    /// `options` with the mistakes deferred so far.
    func withDeferredErrors(_ options: TaskOptions) -> TaskOptions {
        var options = options
        options.deferredErrors = deferred ?? []
        return options
    }

    /// Reports a mistake in a value: while a task or a file's variables are being read, it waits
    /// for a run that plans the task (``TaskOptions/deferredErrors``); otherwise it is an error now.
    func failOrDefer(_ code: TaskfileError.Code, _ message: String, at location: SourceLocation?) {
        if deferred != nil {
            deferred?.append(TaskOptions.DeferredError(code: code.description, message: message, location: location))
        } else {
            fail(code, message, at: location)
        }
    }

    /// Where byte `offset` of the template `text` is in its file (the file's text is in memory
    /// while loading).
    func locate(offset: Int, in text: Located<String>) -> SourceLocation {
        TaskfileTemplates.locate(offset: offset, in: text.value, writtenAt: text.location) { file in
            if lineIndex[file] == nil, let fileText = texts[file] { lineIndex[file] = TaskfileLocator(text: fileText) }
            return lineIndex[file]
        }
    }

    func checkTemplates(in value: ConfigurationValue, known: KnownVariables) {
        switch value.kind {
        case .scalar(let text): checkTemplate(Located(value: text, location: value.location), known: known)
        case .list(let items): for item in items { checkTemplates(in: item, known: known) }
        case .map(let entries): for entry in entries { checkTemplates(in: entry.value, known: known) }
        case .null: break
        }
    }

    // MARK: YAMLNode helpers

    func location(_ node: YAMLNode, _ file: String) -> SourceLocation {
        SourceLocation(file: file, line: Int(node.mark.line), column: Int(node.mark.column))
    }

    func mapping(_ node: YAMLNode, file: String, what: String) -> [(YAMLNode, YAMLNode)]? {
        guard let entries = node.mapping else {
            fail(.wrongType, "\(what) must be a map, not \(describe(node))", at: location(node, file))
            return nil
        }
        var seen = Set<String>()
        var unique: [(YAMLNode, YAMLNode)] = []
        unique.reserveCapacity(entries.count)
        for entry in entries {
            if let key = entry.key.string, !seen.insert(key).inserted {
                fail(.syntax, "duplicate key '\(key)' in \(what)", at: location(entry.key, file))
                continue
            }
            unique.append((entry.key, entry.value))
        }
        return unique
    }

    func scalar(_ node: YAMLNode, file: String, what: String) -> String? {
        guard let text = node.string else {
            fail(.wrongType, "\(what) must be a string, not \(describe(node))", at: location(node, file))
            return nil
        }
        return text
    }

    func bool(_ node: YAMLNode, file: String, what: String) -> Bool? {
        guard let text = scalar(node, file: file, what: what) else { return nil }
        guard let value = TaskfileLoader.boolean(text) else {
            fail(.wrongType, "\(what) must be true or false, not '\(text)'", at: location(node, file))
            return nil
        }
        return value
    }

    func list(_ node: YAMLNode, file: String, what: String) -> [YAMLNode] {
        if node.scalar != nil { return [node] }
        guard let items = node.sequence else {
            fail(.wrongType, "\(what) must be a list, not \(describe(node))", at: location(node, file))
            return []
        }
        return Array(items)
    }

    func strings(_ node: YAMLNode, file: String, what: String) -> [Located<String>] {
        list(node, file: file, what: what).compactMap { item in
            scalar(item, file: file, what: "each item of \(what)").map {
                Located(value: $0, location: location(item, file))
            }
        }
    }

    /// A `sources:` or `generates:` list as go-task reads it: patterns, and `{exclude: PATTERN}`
    /// items that remove what they match. An exclusion is kept as `!PATTERN` (``GlobList``'s
    /// form); a pattern written with a leading `!` is refused, since go-task would read it as a
    /// file name starting with `!` and silently match nothing.
    func globs(_ node: YAMLNode, file: String, what: String) -> [Located<String>] {
        list(node, file: file, what: what).compactMap { item in
            if case .mapping(let entries, _) = item {
                guard entries.count == 1, entries[0].key.string == "exclude", let pattern = entries[0].value.string
                else {
                    fail(
                        .wrongType,
                        "each item of \(what) must be a pattern or {exclude: PATTERN}",
                        at: location(item, file)
                    )
                    return nil
                }
                return Located(value: "!" + pattern, location: location(entries[0].value, file))
            }
            guard let pattern = scalar(item, file: file, what: "each item of \(what)") else { return nil }
            if pattern.hasPrefix("!") {
                fail(
                    .invalidValue,
                    "'\(pattern)' in \(what) is a file name starting with '!', not an exclusion; to exclude files write '- exclude: \(pattern.dropFirst())'",
                    at: location(item, file)
                )
                return nil
            }
            if pattern.contains("$") || pattern.hasPrefix("~") {
                fail(
                    .invalidValue,
                    "'\(pattern)' in \(what): go-task expands '$VARIABLE' and '~' here and kiln does not; use a template variable ({{.NAME}}) or a path relative to the task's directory",
                    at: location(item, file)
                )
                return nil
            }
            return Located(value: pattern, location: location(item, file))
        }
    }

    func describe(_ node: YAMLNode) -> String {
        switch node {
        case .scalar(let scalar): "'\(scalar.string)'"
        case .mapping: "a map"
        case .sequence: "a list"
        }
    }

    func unknownKey(_ name: String, at location: SourceLocation, allowed: Set<String>, in what: String) {
        var message = "unknown key '\(name)' in \(what)"
        if let close = suggestion(for: name, among: allowed) {
            message += "; did you mean '\(close)'?"
        } else {
            message += "; expected one of: \(allowed.sorted().joined(separator: ", "))"
        }
        // In a task: reported when a run plans it.
        failOrDefer(.unknownKey, message, at: location)
    }

    func configurationValue(_ node: YAMLNode, file: String) -> ConfigurationValue {
        let here = location(node, file)
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain, ["null", "~", ""].contains(scalar.string) {
                return ConfigurationValue(.null, at: here)
            }
            return ConfigurationValue(.scalar(scalar.string), at: here)
        case .sequence(let items, _):
            return ConfigurationValue(.list(items.map { configurationValue($0, file: file) }), at: here)
        case .mapping(let entries, _):
            return ConfigurationValue(
                .map(
                    entries.map {
                        (
                            key: $0.key.string ?? "", keyLocation: location($0.key, file),
                            value: configurationValue($0.value, file: file)
                        )
                    }
                ),
                at: here
            )
        }
    }

    func absolute(_ path: String, base: String) -> String {
        Path.absolute(path, base: base)
    }
}

/// A file to load, and how its includer loads it.
private struct PendingInclude {
    var path: String
    var namespace: String
    var directory: String
    var inherited: [String: TemplateValue]
    var chain: [String]
    var includedAt: SourceLocation?
    var settings: FileSettings
}

/// A Taskfile's settings that are its tasks' defaults: its top-level keys, and those of the
/// include that loaded it.
private struct FileSettings {
    /// `method: none`.
    var runsEveryTime = false
    /// `method: timestamp`: its tasks' templates see `{{.TIMESTAMP}}`, not `{{.CHECKSUM}}`.
    var usesTimestamps = false
    /// `run:` for the file's tasks that don't say.
    var runPolicy = RunPolicy.whenChanged
    /// `set:` and `shopt:` of the file and those including it.
    var shellOptions = ShellOptions()

    enum RunPolicy {
        /// Once per run and set of variables (kiln's default).
        case whenChanged
        /// Once per run, whatever the variables.
        case once
        /// Again for each task that depends on it or calls it.
        case always
    }
    /// The include says `internal: true` (or one that included it did).
    var isInternal = false
    /// The include's `aliases:`: other namespaces (`ns:`) its tasks answer in.
    var namespaceAliases: [String] = []
    /// `use_gitignore: true` of the file: where it is written (see decodeTask).
    var usesGitignore: SourceLocation?
    /// The include's `excludes:`, and what an include above it excluded of this file: tasks of
    /// the file not loaded.
    var excludes: [Exclusion] = []

    /// One of `excludes:`, as the file it applies to names its tasks.
    enum Exclusion {
        /// The task of this name (`x`, `deep:x` for a task of a file this one includes as `deep`).
        case task(String)
        /// Every task whose name starts so (`deep:`); all of them when empty.
        case namespace(String)

        func leavesOut(_ name: String) -> Bool {
            switch self {
            case .task(let task): name == task
            case .namespace(let prefix): name.hasPrefix(prefix)
            }
        }
    }
    /// Mistakes in the values its tasks see (a failed dynamic variable of the file or of an
    /// includer): each of its tasks reports them when planned.
    var deferredErrors: [TaskOptions.DeferredError] = []
}

/// The variables a template may use at one place, without building a set per task.
fileprivate struct KnownVariables {
    var variables: [String: TemplateValue]
    var each: Bool
    var task = true

    func contains(_ name: String) -> Bool {
        variables[name] != nil || TaskfileLoader.builtInVariables.contains(name) || (task && name == "TASK")
            || (each && TaskfileLoader.eachVariables.contains(name))
    }

    /// Every name, for suggestions.
    var names: [String] {
        var result = Array(variables.keys) + TaskfileLoader.builtInVariables
        if each { result += TaskfileLoader.eachVariables }
        return result
    }
}

/// What a file's tasks are decoded with: kept, so a task can be decoded again as an instance.
private struct FileContext {
    var file: String
    var namespace: String
    var directory: String
    var variables: [String: TemplateValue]
    var environment: [String: String]
    var settings: FileSettings
}

/// Where a task was decoded: its file's context and its name in that file.
private struct TaskOrigin {
    var context: Int
    var localName: String
}

/// A task named with `task:` in `deps` or `cmds`: its name as written (rendered) and the
/// variables the call gives it (`nil` without `vars:`).
private struct TaskReference {
    var name: Located<String>
    var variables: [String: TemplateValue]?
    /// Where a call's `platforms:` leave this machine out.
    var excludedHere: SourceLocation?
    /// `ignore_error: true` on a call.
    var ignoresFailure = false
    /// `timeout:` on a call or a dependency.
    var timeout: GoDuration?
    /// A deferred command written before a `- task:` call, run as a task of its own made of it
    /// (named already: nothing to resolve).
    var runsCommand = false
    /// A call's `if:` that is a shell test, rendered in the caller's scope: run when the call is
    /// reached (``TaskOptions/callTest``).
    var test: Located<String>?
}

/// One of a task's `cmds`, when some are `- task:` calls: a command (its index among the task's
/// commands) or a call.
private enum TaskStep {
    case command(Int)
    case call(TaskReference)
}

/// A task's dependencies with variables or a timeout (by their index in `deps`) and its steps
/// when it calls tasks, until they are resolved to instances.
private struct TaskReferences {
    var dependencyCalls: [Int: TaskReference]
    var steps: [TaskStep]?
    /// `defer: {task: …}`, in the order written.
    var deferredCalls: [TaskReference] = []
}

/// A task to decode again, under `name`, with a call's `variables`.
private struct InstanceRequest {
    var name: String
    var variables: [String: TemplateValue]
    /// Made for a call with `ignore_error: true` (see ``TaskOptions/failureIgnored``).
    var ignoresFailure = false
    /// Made for a call or a dependency with `timeout:` (see ``TaskOptions/timeout``).
    var timeout: GoDuration?
}

/// go-task's wildcard task names (`start:*`, `*-wildcard-*`).
enum WildcardName {
    /// The texts the `*`s of `pattern` stand for in `name`, or `nil` when it doesn't match: each
    /// `*` takes as much as the rest of the pattern leaves (go-task's greedy `(.*)`).
    static func match(_ pattern: String, _ name: String) -> [String]? {
        let pieces = pattern.split(separator: "*", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
        let text = Array(name.unicodeScalars)
        let count = text.count
        guard pieces.count > 1, text.starts(with: pieces[0]) else { return nil }
        func occurs(_ piece: Int, at position: Int) -> Bool {
            let literal = pieces[piece]
            return position + literal.count <= count && text[position..<position + literal.count].elementsEqual(literal)
        }
        // finishes[k][i]: pieces k… can match text[i…] to its end (each after a `*`). Filled from
        // the last piece back, so the search below never backtracks: linear in pieces × length.
        var finishes = [[Bool]](repeating: [Bool](repeating: false, count: count + 2), count: pieces.count + 1)
        finishes[pieces.count][count] = true
        for piece in stride(from: pieces.count - 1, through: 1, by: -1) {
            for position in stride(from: count, through: 0, by: -1) {
                finishes[piece][position] =
                    finishes[piece][position + 1]
                    || occurs(piece, at: position) && finishes[piece + 1][position + pieces[piece].count]
            }
        }
        var start = pieces[0].count
        guard finishes[1][start] else { return nil }
        // Each `*` takes the longest text after which the rest still matches (go-task's greedy `(.*)`).
        var captures: [String] = []
        for piece in 1..<pieces.count {
            var end = count - pieces[piece].count
            while !(occurs(piece, at: end) && finishes[piece + 1][end + pieces[piece].count]) { end -= 1 }
            captures.append(String(String.UnicodeScalarView(text[start..<end])))
            start = end + pieces[piece].count
        }
        return captures
    }
}

/// How an instance of a task is named: the task's name and the call's variables, `build (GOOS=linux)`.
/// Two different sets of variables never share a name: a value that prints ambiguously (a list,
/// a map, a long text) adds a digest of them all.
enum TaskInstanceName {
    static func make(_ task: String, variables: [String: TemplateValue]) -> String {
        var exact = true
        let shown = variables.keys.sorted().map { name -> String in
            let value = variables[name] ?? .null
            var text: String
            switch value {
            case .string(let string): text = string
            case .int, .bool, .float: text = value.printed
            default:
                exact = false
                text = value.printed
            }
            if text.count > 40 || text.contains(where: { $0.isNewline || $0 == "," || $0 == ")" }) {
                exact = false
                text = String(text.prefix(40).map { $0.isNewline ? " " : $0 }) + (text.count > 40 ? "…" : "")
            }
            return "\(name)=\(text)"
        }
        var name = "\(task) (\(shown.joined(separator: ", ")))"
        if !exact {
            let digest = ContentHash.of(
                variables.keys.sorted().map { "\($0)\u{0}\(canonical(variables[$0] ?? .null))" }.joined(
                    separator: "\u{1}"
                )
            )
            name += " #" + String(digest.high, radix: 16)
        }
        return name
    }

    /// A text that tells apart any two values (types included), maps in key order.
    static func canonical(_ value: TemplateValue) -> String {
        switch value {
        case .string(let text): "s\(text.utf8.count):\(text)"
        case .list(let items): "l\(items.count)[" + items.map(canonical).joined(separator: ",") + "]"
        case .map(let entries):
            "m\(entries.count){"
                + entries.keys.sorted().map { "\($0.utf8.count):\($0)=\(canonical(entries[$0] ?? .null))" }.joined(
                    separator: ","
                ) + "}"
        default: "\(value)"
        }
    }
}

/// What makes two tasks of a file included twice the same task: everything but the names, and
/// the variables their templates don't read (the including file's own).
private struct RepeatedTaskKey: Hashable {
    let file: String
    let localName: String
    let location: SourceLocation
    let variables: [String: TemplateValue]
    let environment: [String: String]
    let directory: String
    let commands: [Located<String>]
    let sources: [Located<String>]
    let generates: [Located<String>]
    let renderedSources: [String]
    let resources: [Located<String>]
    let shape: [String]
    let configuration: String?
    let options: TaskOptions
    let dependencies: [String]
    let calls: [String]

    init(_ task: TaskDefinition, localName: String, steps: [TaskStep]?, forwardsTo: [String: String]) {
        file = task.file
        self.localName = localName
        location = task.location
        variables = Self.variablesRead(by: task)
        environment = task.environment
        directory = task.directory
        commands = task.commands
        sources = task.sources
        generates = task.generates
        renderedSources = task.renderedSources
        resources = task.resources
        shape = [
            task.each.rawValue, "\(task.batchSize ?? 0)", task.kind.value, "\(task.allowsOutsideRoot)",
            task.depfile ?? "",
            "\(task.keepsDepfile)",
        ]
        configuration = task.pluginConfiguration?.description
        var options = task.options
        options.aliases = []
        options.partOf = nil
        self.options = options
        dependencies = task.dependencies.map { forwardsTo[$0.value] ?? $0.value }
        // The steps' commands are among `commands`; their calls count here.
        calls = (steps ?? []).map { step in
            switch step {
            case .command(let index): "\(index)"
            case .call(let reference):
                "task:" + (forwardsTo[reference.name.value] ?? reference.name.value)
                    + (reference.test.map { " if " + $0.value } ?? "")
            }
        }
    }

    /// The variables what the task runs may read: those its templates name (all of them when one
    /// uses dot whole, and for a plugin's task, which sees them all), its loops and its
    /// requirements. `dir:`, `sources:` and `env:` are compared rendered.
    static func variablesRead(by task: TaskDefinition) -> [String: TemplateValue] {
        guard task.pluginConfiguration == nil else { return task.variables }
        var templates =
            task.commands.map(\.value) + task.generates.map(\.value) + task.options.preconditions.map(\.test.value)
        if let depfile = task.depfile { templates.append(depfile) }
        if let label = task.options.label { templates.append(label) }
        var names = Set(task.options.requiredVariables.map(\.name))
        for settings in task.options.commandOptions {
            if case .variable(let name, _) = settings.loop?.items { names.insert(name) }
        }
        for text in templates where TextTemplate.hasActions(text) {
            guard let read = (try? TaskfileTemplates.library.template(text))?.dataNames else { return task.variables }
            names.formUnion(read)
        }
        var read = task.variables.filter { names.contains($0.key) }
        // `{{.TASK}}` prints the task's own name: such tasks differ.
        if names.contains("TASK") || names.contains("ALIAS") { read["\u{0}name"] = .string(task.name) }
        return read
    }
}
