import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why a job runs (or doesn't) — what `--explain` prints.
///
/// Threading: a value type.
public enum RunReason: Sendable, Equatable, CustomStringConvertible {
    /// Nothing changed: the job is skipped.
    case upToDate
    /// The state has no record of it.
    case noRecord
    /// The command, its kind, its directory or its declared environment changed.
    case definitionChanged
    /// An input file appeared, disappeared or changed.
    case inputChanged(String)
    /// A dependency's outputs changed (or it ran without declaring outputs).
    case dependencyChanged(String)
    /// A declared output is missing.
    case outputMissing(String)
    /// A declared output no longer has the content the job left.
    case outputModified(String)
    /// The task declares neither `sources` nor `generates`, so it always runs.
    case alwaysRuns

    /// For people.
    public var description: String {
        switch self {
        case .upToDate: "up to date"
        case .noRecord: "no record of an earlier run"
        case .definitionChanged: "its command, kind, directory or environment changed"
        case .inputChanged(let path): "input \(path) changed"
        case .dependencyChanged(let name): "dependency \(name) changed"
        case .outputMissing(let path): "output \(path) is missing"
        case .outputModified(let path): "output \(path) was modified"
        case .alwaysRuns: "it declares no sources or generates, so it always runs"
        }
    }
}

/// The incremental side of a run: job signatures, the up-to-date check, and what finished jobs
/// leave behind.
///
/// A job's **signature** hashes its resolved definition (kind and version, the command after
/// templating or the plugin's configuration, its directory relative to the project root, the
/// environment it declares), the content of each input, and the output signatures of its
/// dependencies. It is computed from the job and the files alone — no database — so it can key a
/// remote cache later. A job is **up to date** when its signature equals the recorded one and every
/// declared output still exists with the recorded content. A job that reran and left outputs
/// byte-identical to before gives its dependents the same output signature, so they don't rerun
/// (early cutoff).
///
/// Threading: every member from any thread; tables are guarded by their mutexes.
public final class IncrementalState: Sendable {
    private let state: BuildState?
    private let hasher: FileHasher
    private let root: String
    /// The records loaded when the run began. Read without a lock: a job's record is only
    /// replaced after that job's own check, and each job is checked once per run.
    private let initialRecords: [String: JobRecord]
    /// Output signatures of jobs and tasks finished (or found up to date) in this run.
    private let published = Mutex<[String: ContentHash]>([:])

    /// Creates the incremental state of a run.
    ///
    /// - Parameters:
    ///   - state: The project's build state (records are loaded from it and saved to it), or `nil`
    ///     to remember nothing.
    ///   - root: The project root; directories in signatures are relative to it.
    public init(state: BuildState?, root: String) {
        self.state = state
        self.root = root
        initialRecords = state?.loadJobs() ?? [:]
        hasher = FileHasher(known: state?.loadFiles() ?? [:], root: root)
    }

    /// What the check of one job found.
    ///
    /// Threading: a value type.
    public struct Check: Sendable {
        /// The job's signature.
        public var signature: ContentHash
        /// Why it runs, or `.upToDate`.
        public var reason: RunReason
        /// What the signature was made of, for the record.
        public var parts: Parts
    }

    /// Computes a job's signature and decides whether it must run.
    ///
    /// - Parameters:
    ///   - key: The job's key (its label).
    ///   - task: Its task.
    ///   - request: The job's request (inputs, outputs, directory, environment).
    ///   - dependencies: The names of the tasks it depends on, whose output signatures are published.
    public func check(key: String, task: BuildPlan.Task, request: JobRequest, dependencies: [String]) -> Check {
        var hasher = ContentHasher()
        hasher.combine(task.prepared.kindName)
        hasher.combine(task.prepared.kindVersion)
        hasher.combine(task.prepared.summary(for: request))
        if let configuration = task.definition.pluginConfiguration { hasher.combine(configuration.description) }
        hasher.combine(relative(request.directory))
        for (name, value) in request.environment.sorted(by: { $0.key < $1.key }) {
            hasher.combine(name)
            hasher.combine(value)
        }
        let definition = hasher.finalize()

        var inputHashes: [String: ContentHash] = [:]
        // Declared inputs, and those the job's depfile named last time (headers a compile read).
        let recorded = initialRecords[key]
        var inputs = expand(request.inputs, in: request.directory)
        for path in (recorded?.discovered.keys).map(Array.init) ?? [] where !inputs.contains(path) { inputs.append(path) }
        for input in inputs {
            // A missing or unreadable input counts as the zero hash: it changes when the file appears.
            let found = (try? self.hasher.hash(projectPath(input, in: request.directory))) ?? nil
            inputHashes[input] = found?.hash ?? ContentHash(high: 0, low: 0)
        }
        var dependencyHashes: [String: ContentHash] = [:]
        for name in dependencies {
            dependencyHashes[name] = published.withLock { $0[name] } ?? ContentHash(high: 0, low: 0)
        }
        let parts = Parts(definition: definition, inputs: inputHashes, dependencies: dependencyHashes)
        let signature = Self.signature(of: parts)
        let check = { (reason: RunReason) in Check(signature: signature, reason: reason, parts: parts) }

        if task.definition.sources.isEmpty, task.definition.generates.isEmpty, !task.definition.commands.isEmpty {
            return check(.alwaysRuns)
        }
        guard let record = recorded else { return check(.noRecord) }
        if record.signature != signature {
            if record.definition != definition { return check(.definitionChanged) }
            for (path, hash) in inputHashes.sorted(by: { $0.key < $1.key }) where record.inputs[path] != hash {
                return check(.inputChanged(path))
            }
            for path in record.inputs.keys.sorted() where inputHashes[path] == nil { return check(.inputChanged(path)) }
            for (name, hash) in dependencyHashes.sorted(by: { $0.key < $1.key }) where record.dependencies[name] != hash {
                return check(.dependencyChanged(name))
            }
            return check(.definitionChanged)
        }
        for output in expand(request.outputs, in: request.directory) where record.outputs[output] == nil {
            return check(.outputMissing(output))
        }
        for (output, recorded) in record.outputs.sorted(by: { $0.key < $1.key }) {
            guard let current = (try? self.hasher.hash(projectPath(output, in: request.directory))) ?? nil else {
                return check(.outputMissing(output))
            }
            if current.hash != recorded { return check(.outputModified(output)) }
        }
        return check(.upToDate)
    }

    /// The signature of a job: its definition, its inputs' hashes and its dependencies' output
    /// signatures, each in path or name order.
    static func signature(of parts: Parts) -> ContentHash {
        var hasher = ContentHasher()
        hasher.combine(parts.definition)
        for (path, hash) in parts.inputs.sorted(by: { $0.key < $1.key }) {
            hasher.combine(path)
            hasher.combine(hash)
        }
        for (name, hash) in parts.dependencies.sorted(by: { $0.key < $1.key }) {
            hasher.combine(name)
            hasher.combine(hash)
        }
        return hasher.finalize()
    }

    /// Records a job that just succeeded: hashes its outputs, reads its depfile (if the task has
    /// one: the files it names become inputs, and the depfile is removed), commits its record, and
    /// publishes its output signature under `key` (and under `task`, for a plain task).
    public func succeeded(key: String, task: String?, check: Check, request: JobRequest, depfile: String? = nil) {
        var outputs: [String: ContentHash] = [:]
        for output in expand(request.outputs, in: request.directory) {
            if let found = (try? hasher.hash(projectPath(output, in: request.directory))) ?? nil { outputs[output] = found.hash }
        }
        var parts = check.parts
        var discovered: [String: ContentHash] = [:]
        if let depfile {
            let path = Path.join(request.directory, depfile)
            if let text = try? Files.readText(path) {
                let declared = Set(outputs.keys)
                for input in Depfile.prerequisites(text) where !declared.contains(input) {
                    let found = (try? hasher.hash(projectPath(input, in: request.directory))) ?? nil
                    discovered[input] = found?.hash ?? ContentHash(high: 0, low: 0)
                }
                _ = unlink(path)
            }
            // What the next check will hash: the declared inputs and these.
            for (path, hash) in discovered where parts.inputs[path] == nil { parts.inputs[path] = hash }
        }
        let record = JobRecord(
            signature: Self.signature(of: parts), outputs: outputs, finishedAt: FileHasher.realTime(),
            definition: parts.definition, inputs: parts.inputs, dependencies: parts.dependencies, discovered: discovered
        )
        state?.save(record, for: key)
        state?.save(changedFiles: hasher.takeChangedRecords())
        publish(outputSignature(of: record), under: key, task: task)
    }

    /// Publishes the output signature of a job found up to date.
    public func upToDate(key: String, task: String?) {
        guard let record = initialRecords[key] else { return }
        publish(outputSignature(of: record), under: key, task: task)
    }

    /// Forgets a job that failed, so the next run tries it again.
    public func failed(key: String) {
        state?.remove(key: key)
    }

    /// Publishes the output signature of a whole `each:` task: its jobs', in order.
    public func publishEachTask(_ task: String, jobKeys: [String]) {
        var hasher = ContentHasher()
        published.withLock { table in
            for key in jobKeys {
                hasher.combine(key)
                hasher.combine(table[key] ?? ContentHash(high: 0, low: 0))
            }
        }
        let signature = hasher.finalize()
        published.withLock { $0[task] = signature }
    }

    /// Saves the file hashes learned during the run.
    public func saveFiles() {
        state?.save(changedFiles: hasher.takeChangedRecords())
    }

    /// The parts of a signature, kept in the record so `explain` can name what changed.
    ///
    /// Threading: a value type.
    public struct Parts: Sendable {
        var definition: ContentHash
        var inputs: [String: ContentHash]
        var dependencies: [String: ContentHash]
    }

    // MARK: Helpers

    /// A job's output signature: its outputs' hashes, or — when it declares none — its signature.
    private func outputSignature(of record: JobRecord) -> ContentHash {
        record.outputs.isEmpty ? record.signature : record.outputSignature
    }

    private func publish(_ signature: ContentHash, under key: String, task: String?) {
        published.withLock { table in
            table[key] = signature
            if let task, task != key { table[task] = signature }
        }
    }

    /// `path` (relative to `directory`) relative to the project root when it is inside it.
    private func projectPath(_ path: String, in directory: String) -> String {
        relative(Path.join(directory, path))
    }

    /// An absolute path relative to the project root (`.` for the root); paths outside stay absolute.
    private func relative(_ absolute: String) -> String {
        absolute == root ? "." : absolute.hasPrefix(root + "/") ? String(absolute.dropFirst(root.count + 1)) : absolute
    }

    /// Paths and glob patterns → the files they name, relative to `directory`, sorted.
    private func expand(_ patterns: [String], in directory: String) -> [String] {
        if patterns.count == 1, !Glob.isMagic(patterns[0]) { return patterns }
        var files: [String] = []
        for pattern in patterns {
            if Glob.isMagic(pattern) {
                files += Glob.files(matching: pattern, in: directory)
            } else {
                files.append(pattern)
            }
        }
        return Array(Set(files)).sorted()
    }
}
