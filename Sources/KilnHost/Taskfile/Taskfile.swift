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
    /// Every task, in the order written (includes after the file that includes them).
    public var tasks: [TaskDefinition]
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

    /// The task called `name`.
    public func task(named name: String) -> TaskDefinition? {
        tasks.first { $0.name == name }
    }
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

    /// The fixed fields. Immutable, so sharing it between copies is safe.
    private final class Storage: Sendable {
        let name: String
        let location: SourceLocation
        let summary: String?
        let commands: [Located<String>]
        let sources: [Located<String>]
        let generates: [Located<String>]
        let variables: [String: String]
        let environment: [String: String]
        let directory: String
        let resources: [Located<String>]
        let each: Each
        let batchSize: Int?
        let kind: Located<String>
        let pluginConfiguration: ConfigurationValue?
        let allowsOutsideRoot: Bool
        let depfile: String?
        let keepsDepfile: Bool
        let file: String

        init(
            name: String,
            location: SourceLocation,
            summary: String?,
            commands: [Located<String>],
            sources: [Located<String>],
            generates: [Located<String>],
            variables: [String: String],
            environment: [String: String],
            directory: String,
            resources: [Located<String>],
            each: Each,
            batchSize: Int?,
            kind: Located<String>,
            pluginConfiguration: ConfigurationValue?,
            allowsOutsideRoot: Bool,
            depfile: String?,
            keepsDepfile: Bool,
            file: String
        ) {
            self.name = name
            self.location = location
            self.summary = summary
            self.commands = commands
            self.sources = sources
            self.generates = generates
            self.variables = variables
            self.environment = environment
            self.directory = directory
            self.resources = resources
            self.each = each
            self.batchSize = batchSize
            self.kind = kind
            self.pluginConfiguration = pluginConfiguration
            self.allowsOutsideRoot = allowsOutsideRoot
            self.depfile = depfile
            self.keepsDepfile = keepsDepfile
            self.file = file
        }
    }

    private let storage: Storage

    /// `deps:`, resolved to full task names.
    public var dependencies: [Located<String>]

    /// The full name, with include namespace.
    public var name: String { storage.name }
    /// Where the task's key is.
    public var location: SourceLocation { storage.location }
    /// `desc:`.
    public var summary: String? { storage.summary }
    /// `cmds:` of a shell task, before templating.
    public var commands: [Located<String>] { storage.commands }
    /// `sources:` glob patterns, relative to the task's directory, before templating.
    public var sources: [Located<String>] { storage.sources }
    /// `sources:` with templates rendered: the patterns a changed file is matched against.
    public var renderedSources: [String] { renderedSources(variables: nil) }

    /// `sources:` rendered with `variables` (``templateVariables`` when `nil`, made only if a
    /// pattern has a template).
    func renderedSources(variables: [String: String]?) -> [String] {
        guard sources.contains(where: { $0.value.utf8.contains(UInt8(ascii: "{")) }) else { return sources.map(\.value) }
        let variables = variables ?? templateVariables
        return sources.map { Template.render($0.value, variables: variables) }
    }
    /// `generates:` paths or patterns, relative to the task's directory, before templating.
    public var generates: [Located<String>] { storage.generates }
    /// Variables visible to the task's templates: the file's `vars`, then the task's own. Tasks
    /// without `vars:` share their file's dictionary. ``templateVariables`` adds `TASK`.
    public var variables: [String: String] { storage.variables }
    /// Environment variables the task's commands get, beside the host's.
    public var environment: [String: String] { storage.environment }
    /// `dir:`, absolute, after templating.
    public var directory: String { storage.directory }
    /// `resources:` claims as written (built-ins `cpu`, `disk`, `net:<host>`, or user-defined).
    public var resources: [Located<String>] { storage.resources }
    /// `each:`.
    public var each: Each { storage.each }
    /// `batch:` — how many jobs of an `each:` task exist at once.
    public var batchSize: Int? { storage.batchSize }
    /// `plugin:` — the task kind, `shell` when the task has `cmds`.
    public var kind: Located<String> { storage.kind }
    /// `with:` — a plugin task's configuration; `nil` for shell tasks, whose configuration is
    /// made from ``commands`` when asked for (it would double the memory of a large Taskfile).
    public var pluginConfiguration: ConfigurationValue? { storage.pluginConfiguration }
    /// `allow-outside-root: true` lets the task write outside the project root.
    public var allowsOutsideRoot: Bool { storage.allowsOutsideRoot }
    /// `depfile:` — a Makefile-syntax file the command writes (`cc -MD -MF FILE`) naming the
    /// files it read; they become the job's inputs next time. Before templating.
    public var depfile: String? { storage.depfile }
    /// `keep-depfile: true` leaves the depfile in place after reading it (like make), so the
    /// files it names are known from the files alone — remote-cache keys include them.
    public var keepsDepfile: Bool { storage.keepsDepfile }
    /// The file the task was defined in.
    public var file: String { storage.file }

    /// Creates a task.
    public init(
        name: String,
        location: SourceLocation,
        summary: String?,
        dependencies: [Located<String>],
        commands: [Located<String>],
        sources: [Located<String>],
        generates: [Located<String>],
        variables: [String: String],
        environment: [String: String],
        directory: String,
        resources: [Located<String>],
        each: Each,
        batchSize: Int?,
        kind: Located<String>,
        pluginConfiguration: ConfigurationValue?,
        allowsOutsideRoot: Bool,
        depfile: String? = nil,
        keepsDepfile: Bool = false,
        file: String
    ) {
        self.dependencies = dependencies
        storage = Storage(
            name: name,
            location: location,
            summary: summary,
            commands: commands,
            sources: sources,
            generates: generates,
            variables: variables,
            environment: environment,
            directory: directory,
            resources: resources,
            each: each,
            batchSize: batchSize,
            kind: kind,
            pluginConfiguration: pluginConfiguration,
            allowsOutsideRoot: allowsOutsideRoot,
            depfile: depfile,
            keepsDepfile: keepsDepfile,
            file: file
        )
    }

    /// The variables of the job for `source` of an `each: sources` task: ``templateVariables``
    /// plus `source`, `source_dir`, `source_base`, `source_stem` and `output` (the first
    /// `generates` entry, rendered).
    public func templateVariables(forSource source: String) -> [String: String] {
        var result = templateVariables
        setSourceVariables(&result, source: source)
        return result
    }

    /// Sets the per-source variables of `source` in `variables` (``templateVariables`` or an
    /// earlier source's): changing five entries in place, not copying the dictionary.
    func setSourceVariables(_ variables: inout [String: String], source: String) {
        variables["source"] = source
        variables["source_dir"] = Path.directory(of: source)
        variables["source_base"] = Path.lastComponent(source)
        variables["source_stem"] = Path.stem(source)
        variables["output"] = generates.first.map { Template.render($0.value, variables: variables) } ?? ""
    }

    /// Two of `sources` whose jobs would write the same plain `generates:` path: a message naming
    /// both jobs and the path; `nil` when every job's outputs are its own.
    func outputClash(among sources: [String]) -> String? {
        let literal = generates.map(\.value).filter(GlobList.isPlainPath)
        guard !literal.isEmpty, sources.count > 1 else { return nil }
        var variables = templateVariables
        // By a 64-bit hash of the path (a few bytes a file, not the path), then confirmed.
        var owners: [Int: Int] = [:]
        owners.reserveCapacity(sources.count)
        for (position, source) in sources.enumerated() {
            setSourceVariables(&variables, source: source)
            for output in literal {
                let path = Path.normalize(Template.render(output, variables: variables))
                if let other = owners.updateValue(position, forKey: path.hashValue) {
                    var earlier = variables
                    setSourceVariables(&earlier, source: sources[other])
                    if literal.contains(where: { Path.normalize(Template.render($0, variables: earlier)) == path }) {
                        return "jobs '\(name) \(sources[other])' and '\(name) \(source)' both declare the output \(path); only one job may write a file (name outputs after {{.source}}, not only {{.source_stem}})"
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
    /// `each: sources` task.
    func jobRequest(source: String?) -> JobRequest {
        let variables = source.map(templateVariables(forSource:)) ?? templateVariables
        return JobRequest(
            taskName: name, label: source.map { "\(name) \($0)" } ?? name,
            inputs: source.map { [$0] } ?? renderedSources(variables: variables),
            outputs: generates.map { Template.render($0.value, variables: variables) },
            resources: resources.map(\.value), variables: variables, directory: directory, environment: environment
        )
    }

    /// A task with no commands and no plugin: it only gathers its dependencies. It makes no job
    /// (nothing runs, nothing is counted); it is done when they are.
    public var isGroup: Bool {
        commands.isEmpty && pluginConfiguration == nil && each == .none && kind.value == "shell"
    }

    /// The variables for rendering this task's templates: ``variables`` plus `TASK`.
    public var templateVariables: [String: String] {
        var result = variables
        result["TASK"] = name
        result["staged_files"] = Self.hookFiles
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
            return safe ? String(path) : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
        }.joined(separator: " ")
    }()

    /// The configuration handed to the task's kind: `with:` for plugin tasks, a map holding `cmds`
    /// for shell tasks.
    public var configuration: ConfigurationValue {
        if let pluginConfiguration { return pluginConfiguration }
        let commandValues = commands.map { ConfigurationValue(.scalar($0.value), at: $0.location) }
        return ConfigurationValue(
            .map([(key: "cmds", keyLocation: location, value: ConfigurationValue(.list(commandValues), at: location))]),
            at: location
        )
    }
}
