import KilnJobs
import KilnPaths
import KilnPluginAPI

/// The host's half of **the one recipe** for a job's remote key: which jobs a remote cache may
/// answer, and what each is as a ``RemoteActionSpec`` (the remote library makes the protocol's
/// messages from it). A run's look-ups and `kiln explain --remote-keys` both ask here.
///
/// A job can be looked up (or run remotely) when it is a shell task's job that:
/// - declares `sources:` (what it reads is known) and is not `method: none`, has no `status:`
///   and no `preconditions:` (those read what no key covers);
/// - declares its outputs as plain paths (`generates:` without wildcards), all inside the project;
/// - runs in the project, reads only files in it, is not `interactive:`, has no `defer:` and no
///   `- task:` calls, and keeps its depfile if it has one.
///
/// Its spec: the commands as they run here (``CommandShell/arguments(for:)``, several joined into
/// one `/bin/sh -e -c` script), the environment the task declares (with ``defaultPath`` when it
/// sets no `PATH`), its directory relative to the project root, its `generates:` paths, and as
/// inputs the files its sources match and its dependencies' outputs (a dependency that declares
/// none stands for its own dependencies'); a depfile's headers join them through
/// ``RemotePlan/full(depfileText:)``.
///
/// Threading: stateless; any thread (it reads the files the patterns match).
public enum RemoteRecipe {
    /// What the job `request` of the task at `position` of `plan` is to the cache, or why it
    /// can't be looked up.
    public static func plan(at position: Int, request: JobRequest, in plan: BuildPlan) -> Result<RemotePlan, Refusal> {
        let task = plan.tasks[position]
        let definition = task.definition
        let root = plan.taskfile.root
        if let refusal = refusal(of: task) { return .failure(refusal) }
        if request.renderFailure != nil { return .failure(Refusal("a template of its own can't be rendered")) }
        guard let prepared = try? task.prepared() else {
            return .failure(Refusal("its kind refuses its configuration"))
        }
        let job: KilnJobs.Job
        do {
            job = try prepared.makeJob(
                request,
                context: TaskContext(output: TaskOutput(), projectRoot: root, environment: [:])
            )
        } catch {
            return .failure(Refusal("its commands can't be rendered"))
        }
        guard let commands = job as? CommandJob else {
            return .failure(Refusal("it is a plugin's job (\(task.kindName))"))
        }
        guard let arguments = arguments(of: commands.steps) else {
            return .failure(Refusal("it has 'defer:' commands"))
        }
        guard let directory = inside(request.directory, root) else {
            return .failure(Refusal("it runs outside the project"))
        }
        var outputs: [String] = []
        for output in request.outputs {
            guard GlobList.isPlainPath(output) else {
                return .failure(Refusal("its 'generates:' has a pattern (\(output)); only plain paths can be fetched"))
            }
            let absolute = Path.join(request.directory, output)
            guard inside(absolute, root) != nil else {
                return .failure(Refusal("its output \(output) is outside the project"))
            }
            outputs.append(Path.relative(absolute, to: request.directory))
        }
        var inputs = Set<String>()
        for file in Glob.files(matching: request.inputs, in: request.directory, keepingMissingLiterals: false) {
            guard let path = inside(Path.join(request.directory, file), root) else {
                return .failure(Refusal("its source \(file) is outside the project"))
            }
            inputs.insert(path)
        }
        for file in dependencyOutputs(at: position, in: plan) {
            guard let path = inside(file, root) else {
                return .failure(Refusal("a dependency's output \(file) is outside the project"))
            }
            inputs.insert(path)
        }
        var depfile: String?
        if let written = definition.renderedDepfile(variables: request.variables) {
            guard definition.keepsDepfile else {
                return .failure(Refusal("its depfile isn't kept ('keep-depfile: true' lets the cache see the headers)"))
            }
            let absolute = Path.join(request.directory, written)
            guard inside(absolute, root) != nil else { return .failure(Refusal("its depfile is outside the project")) }
            depfile = Path.relative(absolute, to: request.directory)
        }
        // A worker's commands need a PATH (a compiler finds its linker on it): the task's, or
        // one that is the same on every machine, so keys don't depend on whose PATH it was.
        var environment = request.environment
        if environment["PATH"] == nil { environment["PATH"] = Self.defaultPath }
        let spec = RemoteActionSpec(
            root: root,
            arguments: arguments,
            environment: environment,
            workingDirectory: directory,
            outputFiles: outputs,
            inputs: inputs.sorted()
        )
        return .success(
            RemotePlan(
                spec: spec,
                depfile: depfile,
                outputs: Set(request.outputs.map { Path.join(request.directory, $0) })
            )
        )
    }

    /// A job the cache may answer: its spec before its depfile is read.
    ///
    /// A job with a depfile (a C compile: `-MD -MF`) reads headers that only its last depfile
    /// names, so it has two keys. The **discovery** action is the job with its declared inputs, and
    /// a result that is just the depfile; the **full** action adds the headers that depfile names,
    /// with their content now, and has the outputs and the depfile. A look-up asks for the
    /// discovery result, reads the depfile from it and asks for the full one: a hit needs every
    /// header to have the content the run that stored it read. (ccache's manifests do the same.)
    ///
    /// Threading: a value type.
    public struct RemotePlan: Sendable {
        /// The job with its declared inputs (and, without a depfile, what the cache is asked for).
        public var spec: RemoteActionSpec
        /// The depfile, relative to the working directory.
        public var depfile: String?
        /// The job's own outputs, absolute: a depfile naming one doesn't make it an input.
        var outputs: Set<String>

        /// The discovery action: the job's declared inputs, and the depfile as its one output.
        public var discovery: RemoteActionSpec? {
            guard let depfile else { return nil }
            var discovery = spec
            discovery.environment["KILN_REMOTE_DISCOVERY"] = "depfile"
            discovery.outputFiles = [depfile]
            return discovery
        }

        /// The depfile's text as it is on this machine now; `nil` without a depfile, or when the
        /// command hasn't written one (yet).
        public var depfileHere: String? {
            depfile.flatMap { try? Files.readText(Path.join(spec.workingPath, $0)) }
        }

        /// The full action, given the depfile's text: the headers it names as inputs (those that
        /// exist, inside the project), the depfile among the outputs. `nil` when it names a file
        /// outside the project.
        public func full(depfileText: String?) -> RemoteActionSpec? {
            guard let depfile else { return spec }
            var full = spec
            full.outputFiles.append(depfile)
            guard let depfileText else { return full }
            let directory = spec.workingPath
            var inputs = Set(spec.inputs)
            for file in Depfile.prerequisites(depfileText) {
                let absolute = Path.join(directory, file)
                guard !outputs.contains(absolute), Files.exists(absolute) else { continue }
                guard let path = RemoteRecipe.inside(absolute, spec.root) else { return nil }
                inputs.insert(path)
            }
            full.inputs = inputs.sorted()
            return full
        }
    }

    /// Why no job of `task` can be looked up, as its definition says (the rules that need no job
    /// request); `nil` when its jobs may be. A run makes look-up jobs only for tasks without one.
    public static func refusal(of task: BuildPlan.Task) -> Refusal? {
        let definition = task.definition
        if definition.sourcesInPlace.isEmpty { return Refusal("it declares no sources, so what it reads is unknown") }
        if definition.options.runsEveryTime { return Refusal("it says 'method: none'") }
        if !definition.options.statusChecks.isEmpty { return Refusal("its 'status:' commands decide when it runs") }
        if !definition.options.preconditions.isEmpty { return Refusal("it has 'preconditions:'") }
        if definition.options.isInteractive { return Refusal("it is interactive") }
        if definition.guardedBy != nil || !definition.guardedWork.isEmpty {
            return Refusal("it has '- task:' calls among its commands")
        }
        if task.kindName != ShellTaskKind.kindName {
            return Refusal("it is a plugin's job (\(task.kindName))")
        }
        return nil
    }

    /// The PATH a remote action's Command sets when its task's `env:` sets none (Bazel's strict
    /// action environment has the same idea).
    public static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// Why a job can't be looked up.
    ///
    /// Threading: a value type.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        /// For people: "it declares no sources, …".
        public var description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// The command line that runs `steps` as the job runs them (``arguments(ofCommands:)``);
    /// `nil` for steps a script can't express (`defer:`, preconditions, deferred calls).
    static func arguments(of steps: [CommandJob.Step]) -> [String]? {
        guard !steps.contains(where: { $0.deferred != nil || $0.deferredCall != nil || $0.precondition != nil }) else {
            return nil
        }
        return arguments(ofCommands: steps.map { ($0.command, $0.ignoresError, $0.condition) })
    }

    /// The command line that runs `commands` as a job runs them: one command as
    /// ``CommandShell/arguments(for:)`` starts it; several as a `/bin/sh -e` script that starts
    /// each so, in order, stopping at the first that fails — one with `ignoresError` can't stop
    /// it (`|| true`), one with a `condition` runs when that test passes (`if TEST; then …; fi`).
    public static func arguments(ofCommands commands: [(command: String, ignoresError: Bool, condition: String?)])
        -> [String]
    {
        if commands.count == 1, let only = commands.first, only.condition == nil, !only.ignoresError {
            return CommandShell.arguments(for: only.command)
        }
        let lines = commands.map { step in
            var line = CommandShell.arguments(for: step.command).map(Self.quoted).joined(separator: " ")
            if step.ignoresError { line += " || true" }
            if let test = step.condition {
                line =
                    "if " + CommandShell.arguments(for: test).map(Self.quoted).joined(separator: " ") + "; then " + line
                    + "; fi"
            }
            return line
        }
        return [CommandShell.posix, "-e", "-c", lines.joined(separator: "\n")]
    }

    /// `text` in single quotes, for the shell.
    private static func quoted(_ text: String) -> String {
        "'" + text.replacingText("'", with: "'\\''") + "'"
    }

    /// `absolute` relative to `root` when it is `root` or inside it ("" for the root itself).
    static func inside(_ absolute: String, _ root: String) -> String? {
        if absolute == root { return "" }
        guard absolute.hasPrefix(root + "/") else { return nil }
        let relative = Path.relative(absolute, to: root)
        return relative.hasPrefix("../") || relative == ".." ? nil : relative
    }

    /// The files the dependencies of the task at `position` declare as outputs, as they are now:
    /// a dependency that declares none stands for its own dependencies.
    private static func dependencyOutputs(at position: Int, in plan: BuildPlan) -> [String] {
        var files: [String] = []
        var seen = Set<Int>()
        var pending = plan.dependencyPositions[position]
        while let next = pending.popLast() {
            guard seen.insert(next).inserted else { continue }
            let dependency = plan.tasks[next].definition
            if dependency.generatesInPlace.isEmpty {
                pending += plan.dependencyPositions[next]
                continue
            }
            plan.forEachDeclaredOutput(of: dependency) { path in
                if Files.exists(path) { files.append(path) }
            }
        }
        return files
    }
}
