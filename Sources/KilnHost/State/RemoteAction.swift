import KilnPaths
import KilnPluginAPI

/// The keys a remote action cache (REAPI: SHA-256 only) would use for a job, computed from the job
/// and the files alone — no build state — and kept apart from Kiln's own XXH3 signatures.
///
/// The **action digest** is the SHA-256 of a canonical description of the job: its kind and
/// version, the command after templating (or the plugin's configuration), its directory relative
/// to the project root, the environment it declares, each input's path with the digest of its
/// content (declared inputs, and those a kept depfile names), the output digest of each dependency, and the paths it declares as outputs. Every
/// field is length-prefixed, so no two jobs describe alike. An **output digest** is the SHA-256 of
/// an output file; a task's output digest hashes its jobs' output paths and digests, in order.
///
/// Threading: a value type; use one per thread (it caches file digests).
public struct RemoteActionKeys {
    private let root: String
    private var fileDigests: [String: RemoteDigest?] = [:]
    /// Output digests of the tasks seen so far, by task name.
    private var taskOutputs: [String: RemoteDigest] = [:]

    /// Creates keys for the project at `root`.
    public init(root: String) {
        self.root = root
    }

    /// What a job's keys came to.
    ///
    /// Threading: a value type.
    public struct Keys: Sendable {
        /// The action digest.
        public var action: RemoteDigest
        /// Each declared output, with its content's digest (`nil`: it doesn't exist now).
        public var outputs: [(path: String, digest: RemoteDigest?)]
    }

    /// The keys of the job `request` of `task`; dependencies' output digests come from the tasks
    /// passed to ``finishTask(_:jobs:)`` before.
    public mutating func keys(for task: BuildPlan.Task, request: JobRequest) -> Keys {
        var text = "kiln-action 1\n"
        func field(_ name: String, _ value: String) { text += "\(name) \(value.utf8.count):\(value)\n" }
        field("kind", task.prepared.kindName)
        field("version", task.prepared.kindVersion)
        field("command", task.prepared.summary(for: request))
        if let configuration = task.definition.pluginConfiguration { field("configuration", configuration.description) }
        field("directory", relative(request.directory))
        for (name, value) in request.environment.sorted(by: { $0.key < $1.key }) { field("env", name + "=" + value) }
        var inputs = expand(request.inputs, in: request.directory)
        // A kept depfile names the files the command read last time (a C file's headers).
        if task.definition.keepsDepfile, let depfile = task.definition.renderedDepfile(variables: request.variables) {
            let path = Path.join(request.directory, depfile)
            if let text = try? Files.readText(path) {
                let outputs = Set(request.outputs)
                inputs = Array(Set(inputs).union(Depfile.prerequisites(text).filter { !outputs.contains($0) })).sorted()
            }
        }
        for input in inputs {
            field("input", input)
            field("digest", digest(of: Path.join(request.directory, input))?.description ?? "absent")
        }
        for name in task.definition.dependencies.map(\.value).sorted() {
            field("dependency", name)
            field("digest", taskOutputs[name]?.description ?? "none")
        }
        let outputs = expand(request.outputs, in: request.directory)
        for output in outputs { field("output", output) }
        return Keys(
            action: RemoteDigest.of(text),
            outputs: outputs.map { ($0, digest(of: Path.join(request.directory, $0))) }
        )
    }

    /// Records a task's output digest from its jobs' keys, for its dependents.
    public mutating func finishTask(_ name: String, jobs: [Keys]) {
        var text = ""
        for job in jobs {
            for (path, digest) in job.outputs { text += "\(path.utf8.count):\(path) \(digest?.description ?? "absent")\n" }
        }
        taskOutputs[name] = RemoteDigest.of(text)
    }

    /// Records a group task's output digest: its dependencies', in order.
    public mutating func finishTask(_ name: String, groupOf dependencies: [String]) {
        var text = ""
        for dependency in dependencies { text += "\(dependency.utf8.count):\(dependency) \(taskOutputs[dependency]?.description ?? "none")\n" }
        taskOutputs[name] = RemoteDigest.of(text)
    }

    private mutating func digest(of absolute: String) -> RemoteDigest? {
        if let known = fileDigests[absolute] { return known }
        let found = try? SHA256.digest(ofFile: absolute)
        fileDigests[absolute] = found
        return found
    }

    private func relative(_ absolute: String) -> String {
        Path.relative(absolute, to: root)
    }

    private func expand(_ patterns: [String], in directory: String) -> [String] {
        Glob.files(matching: patterns, in: directory, keepingMissingLiterals: true)
    }
}
