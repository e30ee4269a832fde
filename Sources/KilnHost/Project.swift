import KilnPaths
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// A project: its Taskfile, loaded, and the task kinds available to it.
///
/// Threading: a value type; safe to pass between threads.
public struct Project: Sendable {
    /// Names looked for, in order, in the current directory and then each parent.
    public static let taskfileNames = TaskfileDiscovery.names

    /// The loaded Taskfile.
    public var taskfile: Taskfile
    /// The task kinds: the built-in `shell` kind, registered like any plugin's, and the kinds of
    /// the plugins loaded.
    public var registry: TaskKindRegistry
    /// The plugins loaded: those the Taskfile's `plugins:` names, and those found on the plugin
    /// path for kinds its tasks use.
    public var plugins: [LoadedPlugin]

    /// Finds and loads the project's Taskfile.
    ///
    /// - Parameters:
    ///   - taskfilePath: `--taskfile`, if given.
    ///   - currentDirectory: Where discovery starts.
    ///   - runner: Runs the shell kind's commands.
    /// - Throws: ``TaskfileErrors`` when there is no Taskfile or it is invalid.
    public init(
        taskfilePath: String?,
        currentDirectory: String,
        runner: any CommandRunner,
        plugins options: PluginOptions = PluginOptions(),
        context: TaskfileContext? = nil
    ) throws(TaskfileErrors) {
        let path: String
        if let found = Self.locateTaskfile(taskfilePath, currentDirectory: currentDirectory) {
            path = found.path
        } else {
            throw TaskfileErrors(errors: [
                TaskfileError(
                    .unreadableFile,
                    "no Taskfile.yml in \(currentDirectory) or any parent directory; create one or pass --taskfile PATH",
                    at: nil
                )
            ])
        }
        // The context's directory is where kiln was started ({{.USER_WORKING_DIR}}).
        var context = context ?? .process
        if context.workingDirectory.isEmpty { context.workingDirectory = currentDirectory }
        try self.init(taskfile: try TaskfileLoader(context: context).load(path: path), runner: runner, plugins: options)
    }

    /// The project of a Taskfile already loaded: registers the task kinds and loads the plugins.
    ///
    /// - Throws: ``TaskfileErrors`` when a plugin can't be loaded.
    public init(taskfile: Taskfile, runner: any CommandRunner, plugins options: PluginOptions = PluginOptions())
        throws(TaskfileErrors)
    {
        self.taskfile = taskfile
        registry = TaskKindRegistry()
        // The built-in kind goes through the same door as a plugin's.
        try? registry.register(
            ShellTaskKind(runner: runner),
            origin: "built-in"
        )
        plugins = try Self.loadPlugins(for: taskfile, into: registry, options: options)
    }

    /// Loads the plugins the Taskfile names, then, for each task kind its tasks use that no one
    /// registered yet, the plugin of that name on the plugin path. Plugins are loaded only when
    /// something needs them, so a Taskfile without plugin tasks pays nothing.
    ///
    /// - Throws: ``TaskfileErrors`` pointing at the `plugins:` entry or the task's `plugin:` key.
    static func loadPlugins(
        for taskfile: Taskfile,
        into registry: TaskKindRegistry,
        options: PluginOptions
    ) throws(TaskfileErrors) -> [LoadedPlugin] {
        // Each kind the tasks use, with the first task that uses it (read from the outline: no
        // definition is decoded but that task's, for a kind no one registered).
        let needed = taskfile.tasks.outline.kinds.filter { registry.kind(named: $0.name) == nil }
        guard !taskfile.plugins.isEmpty || !needed.isEmpty else { return [] }
        let loader = PluginLoader(options: options, registry: registry)
        var errors: [TaskfileError] = []
        for entry in taskfile.plugins {
            do {
                _ = try loader.load(entry.value)
            } catch {
                errors.append(TaskfileError(.pluginFailed, error.message, at: entry.location))
            }
        }
        for kind in needed where registry.kind(named: kind.name) == nil {
            guard loader.find(kind.name).file != nil else { continue }  // the planner says it is unknown
            do {
                _ = try loader.load(kind.name)
            } catch {
                errors.append(
                    TaskfileError(.pluginFailed, error.message, at: taskfile.tasks[kind.firstTask].kind.location)
                )
            }
        }
        if !errors.isEmpty { throw TaskfileErrors(sorting: errors, fileOrder: taskfile.files) }
        return loader.plugins
    }

    /// The main Taskfile — `taskfilePath` (`--taskfile`) made absolute, or the one discovery
    /// finds from `currentDirectory` — and the project root (its directory), without loading it.
    public static func locateTaskfile(_ taskfilePath: String?, currentDirectory: String) -> (
        path: String, root: String
    )? {
        let path: String
        if let taskfilePath {
            path = Path.absolute(taskfilePath, base: currentDirectory)
        } else if let found = discoverTaskfile(from: currentDirectory) {
            path = found
        } else {
            return nil
        }
        return (path, Path.directory(of: path))
    }

    /// The Taskfile in `directory` or its nearest parent that has one.
    public static func discoverTaskfile(from directory: String) -> String? {
        TaskfileDiscovery.discover(from: Path.normalize(directory))
    }

    /// Removes the declared outputs (`generates`) of the plan's tasks — for `each:` tasks, of the
    /// files their sources match now — and returns how many files were removed. Never follows a
    /// symbolic link out of the project root, and removes a path outside it only when its task
    /// allows it (`allow-outside-root`) and names it.
    public static func removeOutputs(_ plan: BuildPlan) -> Int {
        var removed = 0
        let root = plan.taskfile.root
        plan.forEachDeclaredOutput { definition, absolute in
            // Inside the root, links resolved: a glob that went through a link to a directory
            // elsewhere, or a linked parent, removes nothing there. Outside it only what a task
            // that allows it names.
            let lexicallyInside = Path.isInside(absolute, root: root)
            guard
                lexicallyInside
                    ? plan.boundary.contains(absolute, followingLastLink: false) : definition.allowsOutsideRoot
            else { return }
            if !Files.isDirectory(absolute), unlink(absolute) == 0 { removed += 1 }
        }
        return removed
    }
}
