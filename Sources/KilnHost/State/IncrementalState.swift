import KilnPaths
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
    /// The task declares neither `sources` nor `generates` (or says `method: none`), so it always runs.
    case alwaysRuns
    /// `--force`: it would be up to date, and runs anyway.
    case forced
    /// A dependency runs first, so this job's verdict waits for what it leaves (a dry run or
    /// `kiln status` can't know; a real run checks again then).
    case dependencyRuns(String)
    /// A run would fail it before it starts (two of an `each:` task's jobs would write one file,
    /// or a template of its own can't be rendered).
    case refused(String)
    /// One of its `status:` commands failed.
    case statusFailed(String)

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
        case .alwaysRuns: "it declares no sources or generates (or 'method: none'), so it always runs"
        case .forced: "--force"
        case .dependencyRuns(let name): "dependency \(name) runs first"
        case .refused(let reason): "a run would fail it: \(reason)"
        case .statusFailed(let command): "its status command '\(command)' failed"
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
    /// The records loaded when the run began, by key — or `nil` when records are read one at a
    /// time as jobs are checked (a snapshot says few jobs need a check). Read without a lock: a
    /// job's record is only replaced after that job's own check, and each job is checked once.
    private let initialRecords: [String: JobRecord]?
    /// Output signatures of jobs and tasks finished (or found up to date) in this run.
    private let published: HostMutex<PublishedSignatures>
    /// The last complete run's snapshot and which of its jobs watch a changed path.
    private let previous: UpToDateSnapshot.Scan?
    /// Index of each snapshot job, by key.
    private let previousJobs: [String: Int]
    /// What this run's verdicts rest on, for the next snapshot.
    private let recorder: SnapshotRecorder
    /// A dry run's: jobs don't run, records aren't written, and a job whose dependency would run
    /// gets ``RunReason/dependencyRuns(_:)`` (what that dependency leaves can't be known).
    private let dryRun: Bool
    /// `--force`: every job runs, whatever its verdict would be (and is recorded as usual).
    private let forcing: Bool
    /// In a dry run, the tasks that would run (some job of theirs would).
    private let wouldRun = HostMutex<Set<String>>([])
    /// What checks and records noticed, each once, in the order noticed.
    private let warnings = HostMutex<(seen: Set<RunWarning>, list: [RunWarning])>(([], []))

    /// Creates the incremental state of a run.
    ///
    /// - Parameters:
    ///   - state: The project's build state (records are loaded from it and saved to it), or `nil`
    ///     to remember nothing.
    ///   - root: The project root; directories in signatures are relative to it.
    ///   - previous: The scan of the last run's snapshot: a job it has, that watches no changed
    ///     path and whose dependencies publish what they published then, is up to date without a
    ///     check.
    ///   - tracked: The git index's content ids of clean tracked files (inputs hashed through git,
    ///     not read), or `nil` outside git.
    ///   - dryRun: For `--dry-run`, `kiln status` and `kiln explain`: the run's scheduler reaches
    ///     the same verdicts, but nothing is recorded (see ``willRun(_:)``).
    ///   - plannedTasks: How many tasks the run's plan has: each publishes a signature by its
    ///     name, and the table is made that large at once (see ``PublishedSignatures/init(expecting:)``).
    public init(
        state: BuildState?,
        root: String,
        previous: UpToDateSnapshot.Scan? = nil,
        tracked: (any TrackedContent)? = nil,
        dryRun: Bool = false,
        forcing: Bool = false,
        plannedTasks: Int = 0
    ) {
        published = HostMutex(PublishedSignatures(expecting: plannedTasks))
        self.state = state
        self.dryRun = dryRun
        self.forcing = forcing
        self.root = root
        self.previous = previous
        previousJobs = previous?.jobPositions ?? [:]
        // What jobs watched goes to .kiln/ as they settle (memory flat at any size); a dry run
        // writes no snapshot.
        recorder = SnapshotRecorder(
            scan: previous,
            spillDirectory: state == nil || dryRun ? nil : KilnDirectory(root: root).path
        )
        // With a snapshot, read records and file hashes one at a time as jobs need them: when few
        // jobs need a check that is much less work than reading them all, and when most do, they
        // mostly run, and a row read per job costs nothing beside running it but keeps memory flat.
        if previous != nil, let state {
            initialRecords = nil
            hasher = FileHasher(root: root, lookup: { state.loadFile(path: $0) }, tracked: tracked)
        } else {
            initialRecords = state?.loadJobs() ?? [:]
            // Read back one at a time once the table has let go of saved records (a big `each:`
            // task's); a path it never had isn't looked for.
            hasher = FileHasher(
                known: state?.loadFiles() ?? [:],
                root: root,
                readBack: state.map { state -> @Sendable (String) -> HashedFile? in { state.loadFile(path: $0) } },
                tracked: tracked
            )
        }
    }

    /// What the check of one job found.
    ///
    /// Threading: a value type.
    public struct Check: Sendable {
        /// The job's signature (zero for a job the snapshot found up to date).
        public var signature: ContentHash
        /// Why it runs, or `.upToDate`.
        public var reason: RunReason
        /// What the signature was made of, for the record.
        public var parts: Parts
        /// For an up-to-date job, the output signature it publishes.
        var outputSignature: ContentHash?
        /// The paths the verdict rests on; `nil` when one changed while it was read.
        var watched: [WatchedPath]?
        /// Where in ``watched`` the looks at the outputs begin, when the check looked at them (a
        /// record whose signature matched). They are the outputs before the job ran: if it runs,
        /// its record rests on the outputs it wrote, looked at again then, and these are dropped.
        var outputLooksFrom: Int?
        /// Found up to date on the snapshot's word, not by a check: its job there.
        var snapshotJob: Int?
        /// Its verdict rests on `status:` commands, which read what no signature covers: the
        /// snapshot never vouches for it.
        var hasStatus = false
        /// One of its `sources:` patterns matched no file, and a warning said so: the snapshot
        /// never vouches for it, so every run checks it and says so again until the pattern or
        /// the files change.
        var matchedNothing = false
        /// Whether the snapshot the run writes leaves the job for the next run to check: its
        /// verdict rests on what no signature covers (it always runs, or has `status:`), or a
        /// warning that the next run must give again (``matchedNothing``).
        var checkedEveryRun: Bool { reason == .alwaysRuns || hasStatus || matchedNothing }
        /// A piece that follows a guard (``TaskOptions/guardedBy``): the guard's key. Its
        /// verdict is the guard's; it has no record of its own, and publishes the guard's output
        /// signature (so what depends on the task sees the same one whether it ran or not).
        var follows: JobKey?
        /// The task as its kind prepared it for this check, handed to the job that runs (see
        /// ``BuildPlan/Task/prepared()``); `nil` when the check didn't need it.
        var prepared: PreparedTask?

        /// The verdict of a job that doesn't run because its task was skipped with its caller:
        /// a call its caller's commands didn't reach, or made by a task found up to date. It
        /// is up to date, records nothing and publishes nothing.
        public static var skipped: Check {
            Check(
                signature: ContentHash(high: 0, low: 0),
                reason: .upToDate,
                parts: Parts(definition: ContentHash(high: 0, low: 0), inputs: [:], dependencies: [:]),
                watched: []
            )
        }

        /// The verdict of a piece that follows the guard `key`, which reached `reason`.
        public static func following(_ key: JobKey, reason: RunReason) -> Check {
            var check = skipped
            check.reason = reason
            check.follows = key
            return check
        }
    }

    /// The verdict the snapshot gives without a check: up to date when it has the job, none of
    /// the paths the job watches changed, and each dependency publishes the output signature it
    /// published then. `nil`: the job needs ``check(key:task:request:dependencies:)``.
    private func snapshotVerdict(key: String, dependencies: [String]) -> Check? {
        guard let previous, let position = previousJobs[key],
            previous.dirtyAtPosition.indices.contains(position), !previous.dirtyAtPosition[position],
            let signature = previous.snapshot.published[key]
        else { return nil }
        let unchanged = published.withLock { table in
            dependencies.allSatisfy { table[name: $0] == previous.snapshot.published[$0] }
        }
        guard unchanged else { return nil }
        return Check(
            signature: ContentHash(high: 0, low: 0),
            reason: .upToDate,
            parts: Parts(definition: ContentHash(high: 0, low: 0), inputs: [:], dependencies: [:]),
            outputSignature: signature,
            watched: nil,
            snapshotJob: position
        )
    }

    /// Whether the job `key` of `task` (`request`) must run, and why: **the one place a verdict is
    /// reached.** A real run's scheduler asks it once per job, once the job's dependencies have
    /// settled (published their output signatures); a dry run's asks it the same way.
    ///
    /// In order: in a dry run, a dependency that would run decides (``RunReason/dependencyRuns(_:)``);
    /// then the snapshot, when it vouches for the job; then a check of the job's signature and
    /// outputs against its record. Last, in a dry run, a job that would run has its
    /// `preconditions:` tested: one that fails makes it ``RunReason/refused(_:)``.
    ///
    /// Threading: any thread; each job is asked about once per run.
    ///
    /// - Parameter fresh: Whether to look at the files now even when the snapshot vouches for
    ///   them: for a job that the run may have changed the inputs of by the time it is checked
    ///   (a task called after commands that ran in this run).
    public func verdict(
        of task: BuildPlan.Task,
        key: JobKey,
        request: @autoclosure () -> JobRequest,
        fresh: Bool = false,
        prepared: PreparedTask? = nil
    )
        -> Check
    {
        var result = judge(task, key: key, request: request(), fresh: fresh, prepared: prepared)
        // A dry run says what a run would do: a job that would run stops at a precondition that
        // doesn't hold now (go-task's `--dry` checks them too).
        let preconditions = task.definition.options.preconditions
        if dryRun, !preconditions.isEmpty, result.reason != .upToDate,
            let failure = Self.failedPrecondition(preconditions, request: request())
        {
            result.reason = .refused(failure)
        }
        return result
    }

    /// The first of `preconditions` (rendered for the job) that doesn't hold now, said as the job
    /// would fail with it (``PreconditionFailure``).
    static func failedPrecondition(_ preconditions: [TaskOptions.Precondition], request: JobRequest) -> String? {
        // Tested before the directory is made (go-task's order): in one that isn't there they fail.
        guard Files.isDirectory(request.directory) else {
            return preconditions.first.map {
                PreconditionFailure.describe(
                    $0.message ?? request.display($0.test.value),
                    unrunnable: CommandJob.missing(request.directory)
                )
            }
        }
        for precondition in preconditions {
            if let command = failedStatusCheck([precondition.test], request: request) {
                return PreconditionFailure.describe(precondition.message ?? command, unrunnable: nil)
            }
        }
        return nil
    }

    /// ``verdict(of:key:request:fresh:)`` before a dry run's preconditions.
    private func judge(
        _ task: BuildPlan.Task,
        key: JobKey,
        request: @autoclosure () -> JobRequest,
        fresh: Bool,
        prepared: PreparedTask?
    ) -> Check {
        let dependencies = task.definition.dependencies.map(\.value)
        if dryRun, let running = wouldRun.withLock({ set in dependencies.first(where: set.contains) }) {
            return Check(
                signature: ContentHash(high: 0, low: 0),
                reason: .dependencyRuns(running),
                parts: Parts(definition: ContentHash(high: 0, low: 0), inputs: [:], dependencies: [:]),
                watched: nil
            )
        }
        if forcing {
            var result = check(key: key, task: task, request: request(), dependencies: dependencies, prepared: prepared)
            if result.reason == .upToDate { result.reason = .forced }
            return result
        }
        let statusChecks = task.definition.options.statusChecks
        if !fresh, statusChecks.isEmpty, let verdict = snapshotVerdict(key: key.stored, dependencies: dependencies) {
            return verdict
        }
        let made = request()
        var result = check(key: key, task: task, request: made, dependencies: dependencies, prepared: prepared)
        guard !statusChecks.isEmpty else { return result }
        // go-task's `status:`: up to date when every test succeeds — and, with sources or outputs,
        // when they say so too. A task with only `status:` is up to date on its tests alone.
        result.hasStatus = true
        guard result.reason == .upToDate || result.reason == .alwaysRuns, !task.definition.runsEveryTime else {
            return result
        }
        if let failed = Self.failedStatusCheck(statusChecks, request: made) {
            result.reason = .statusFailed(failed)
        } else {
            result.reason = .upToDate
            if result.outputSignature == nil, let record = record(key.stored) {
                result.outputSignature = outputSignature(of: record)
            }
        }
        return result
    }

    /// The first of `checks` (rendered for the job) that doesn't exit 0 when run by the shell
    /// (``CommandShell``) in the job's directory and environment; `nil` when all succeed. Their
    /// output is discarded, as go-task does.
    static func failedStatusCheck(_ checks: [Located<String>], request: JobRequest) -> String? {
        // A task whose directory isn't there yet has never run: not up to date.
        guard Files.isDirectory(request.directory) else { return checks.first.map { request.display($0.value) } }
        let environment = System.environment.merging(request.environment) { _, task in task }
        for check in checks {
            guard let command = try? request.render(check.value, at: check.location) else { return check.value }
            if case .failure = DynamicVariables.run(command, directory: request.directory, environment: environment) {
                return command
            }
        }
        return nil
    }

    /// Whether this is a dry run's state (see ``init(state:root:previous:tracked:dryRun:)``).
    public var isDryRun: Bool { dryRun }

    /// In a dry run, notes that the job `key` would run: its task's dependents can't be judged.
    ///
    /// Threading: any thread.
    public func willRun(_ key: JobKey) {
        wouldRun.withLock { _ = $0.insert(key.task) }
    }

    /// Computes a job's signature and decides whether it must run.
    ///
    /// - Parameters:
    ///   - key: The job's key.
    ///   - task: Its task.
    ///   - request: The job's request (inputs, outputs, directory, environment).
    ///   - dependencies: The names of the tasks it depends on, whose output signatures are published.
    private func check(
        key: JobKey,
        task: BuildPlan.Task,
        request: JobRequest,
        dependencies: [String],
        prepared given: PreparedTask?
    ) -> Check {
        // A job whose request couldn't be made fails: it is never up to date.
        if let failure = request.renderFailure {
            return Check(
                signature: ContentHash(high: 0, low: 0),
                reason: .refused(failure.description),
                parts: Parts(definition: ContentHash(high: 0, low: 0), inputs: [:], dependencies: [:]),
                watched: nil
            )
        }
        // A plain task's inputs are its `sources:` patterns: one matching nothing is a warning.
        let sources = task.definition.each == .sources ? nil : task.definition.sourcesInPlace
        var matchedNothing = false
        let unmatched: ((Int) -> Void)? = sources.map { sources in
            { [self] position in
                // A view of the task's lists: its positions start where the sources do.
                guard position < sources.count else { return }
                matchedNothing = true
                warn(
                    RunWarning(
                        "'\(request.inputs[position])' in 'sources' of task '\(task.definition.name)' matches no file, so no change there reruns it; check the pattern (see docs/taskfile.md#globs)",
                        at: sources[sources.startIndex + position].location
                    )
                )
            }
        }
        var hasher = ContentHasher()
        // A kind that refuses the configuration now fails the job when it is made (the signature
        // is never recorded as a success).
        let prepared = given ?? (try? task.prepared())
        hasher.combine(task.kindName)
        hasher.combine(prepared?.kindVersion ?? "")
        hasher.combine(prepared?.summary(for: request) ?? "")
        // A guard answers for its whole task: what the task's other pieces run counts too.
        for work in task.definition.guardedWork { hasher.combine(request.display(work)) }
        if let configuration = task.definition.pluginConfiguration { hasher.combine(configuration.description) }
        hasher.combine(relative(request.directory))
        for (name, value) in request.environment.sorted(by: { $0.key < $1.key }) {
            hasher.combine(name)
            hasher.combine(value)
        }
        let definition = hasher.finalize()

        var watched = Watched()
        var inputHashes: [String: FileDigest] = [:]
        // Declared inputs, and those the job's depfile named last time (headers a compile read).
        let recorded = record(key.stored)
        var inputs = expand(request.inputs, in: request.directory, watched: &watched, unmatched: unmatched)
        for path in (recorded?.discovered.keys).map(Array.init) ?? [] where !inputs.contains(path) {
            inputs.append(path)
        }
        for input in inputs {
            // Hashed the way the record's hash was (a blob id from git, or XXH3), so a file that was
            // committed or edited since isn't taken for a changed one. A missing or unreadable input
            // counts as the zero hash: it changes when the file appears.
            let algorithm = (recorded?.inputs[input] ?? recorded?.discovered[input])?.algorithm
            inputHashes[input] =
                watched.hash(projectPath(input, in: request.directory), as: algorithm, with: self.hasher)?.digest
                ?? .absent
        }
        // A plain path among the sources matches nothing when its file is absent (its hash says
        // so: no second look at the disk).
        if let unmatched {
            for (position, pattern) in request.inputs.enumerated()
            where GlobList.isPlainPath(pattern) && inputHashes[pattern] == .absent {
                unmatched(position)
            }
        }
        var dependencyHashes: [String: ContentHash] = [:]
        published.withLock { table in
            for name in dependencies { dependencyHashes[name] = table[name: name] ?? ContentHash(high: 0, low: 0) }
        }
        let parts = Parts(definition: definition, inputs: inputHashes, dependencies: dependencyHashes)
        let signature = Self.signature(of: parts)
        var outputLooksFrom: Int?
        let check = { (reason: RunReason) in
            var check = Check(signature: signature, reason: reason, parts: parts, watched: watched.paths)
            check.outputLooksFrom = outputLooksFrom
            check.matchedNothing = matchedNothing
            // For the job that runs (an up-to-date one makes none).
            if reason != .upToDate { check.prepared = prepared }
            return check
        }

        if Self.alwaysRuns(task) { return check(.alwaysRuns) }
        guard let record = recorded else { return check(.noRecord) }
        if record.signature != signature {
            if record.definition != definition { return check(.definitionChanged) }
            for (path, hash) in inputHashes.sorted(by: { $0.key < $1.key }) where record.inputs[path] != hash {
                return check(.inputChanged(path))
            }
            for path in record.inputs.keys.sorted() where inputHashes[path] == nil { return check(.inputChanged(path)) }
            for (name, hash) in dependencyHashes.sorted(by: { $0.key < $1.key }) where record.dependencies[name] != hash
            {
                return check(.dependencyChanged(name))
            }
            return check(.definitionChanged)
        }
        outputLooksFrom = watched.paths?.count
        for output in expand(request.outputs, in: request.directory, watched: &watched)
        where record.outputs[output] == nil {
            return check(.outputMissing(output))
        }
        for (output, recordedHash) in record.outputs.sorted(by: { $0.key < $1.key }) {
            guard let current = watched.hash(projectPath(output, in: request.directory), as: .xxh3, with: self.hasher)
            else {
                return check(.outputMissing(output))
            }
            if current.hash != recordedHash { return check(.outputModified(output)) }
        }
        var result = check(.upToDate)
        result.outputSignature = outputSignature(of: record)
        return result
    }

    /// Whether a task always runs: it does something (commands, or a plugin's job) but declares
    /// neither sources nor outputs, so nothing could tell that it is up to date.
    static func alwaysRuns(_ task: BuildPlan.Task) -> Bool {
        guard !task.definition.isGroup else { return false }
        // `method: none`, or nothing to compare: the task runs every time.
        return task.definition.runsEveryTime
            || task.definition.sourcesInPlace.isEmpty && task.definition.generatesInPlace.isEmpty
    }

    /// A job's record: from those loaded at the start, or read now.
    private func record(_ key: String) -> JobRecord? {
        if let initialRecords { return initialRecords[key] }
        return state?.loadJob(key: key)
    }

    /// The paths a verdict rests on, gathered as they are hashed and listed.
    struct Watched {
        /// `nil` once a file changed while it was read: the verdict can't be pinned to a state.
        var paths: [WatchedPath]? = []

        /// Hashes a file through the hasher (in `algorithm`, when the hash is compared with a
        /// recorded one) and notes what the hash rests on.
        mutating func hash(_ path: String, as algorithm: HashAlgorithm? = nil, with hasher: FileHasher) -> FileHasher
            .Found?
        {
            let found = (try? hasher.hash(path, as: algorithm)) ?? nil
            guard paths != nil else { return found }
            if let found {
                if let record = found.record {
                    paths!.append(WatchedPath(path: path, file: record))
                } else {
                    paths = nil
                }
            } else {
                paths!.append(WatchedPath(absent: path, seenAt: FileHasher.realTime()))
            }
            return found
        }

        mutating func add(_ directories: [VisitedDirectory], relativeTo relative: (String) -> String) {
            guard paths != nil else { return }
            for directory in directories {
                let path = relative(directory.path)
                if let stat = directory.stat {
                    paths!.append(
                        WatchedPath(
                            path: path,
                            kind: .directory,
                            stat: stat,
                            hash: directory.listing ?? WatchedPath.zeroHash,
                            seenAt: directory.seenAt
                        )
                    )
                } else {
                    paths!.append(WatchedPath(absent: path, seenAt: directory.seenAt))
                }
            }
        }
    }

    /// The signature of a job: its definition, its inputs' hashes and its dependencies' output
    /// signatures, each in path or name order.
    static func signature(of parts: Parts) -> ContentHash {
        var hasher = ContentHasher()
        hasher.combine(parts.definition)
        for (path, digest) in parts.inputs.sorted(by: { $0.key < $1.key }) {
            hasher.combine(path)
            hasher.combine(digest)
        }
        for (name, hash) in parts.dependencies.sorted(by: { $0.key < $1.key }) {
            hasher.combine(name)
            hasher.combine(hash)
        }
        return hasher.finalize()
    }

    /// Records a job that just succeeded: hashes its outputs, reads its depfile (if the task has
    /// one: the files it names become inputs, and the depfile is removed), commits its record, and
    /// publishes its output signature under `key` (a plain task's key is its task's name).
    ///
    /// With `definition` (the job's task), what the job left that may be a mistake is a warning:
    /// an output glob that matched nothing, a declared depfile it didn't write. `duration` (how
    /// long the job ran here, in nanoseconds) is remembered for that task, with the record.
    ///
    /// Without `settled`, all that is done on the calling thread, and the record is committed
    /// before this returns. With it, the caller never waits for another job's commit (see
    /// ``BuildState/record(making:handingOver:canWait:committed:)``, which `handingOver` and
    /// `canWait` are passed to): `settled` runs once the record is committed — the job may be
    /// reported finished then, and its dependents start.
    public func succeeded(
        key: JobKey,
        check: Check,
        request: JobRequest,
        depfile: String? = nil,
        keepDepfile: Bool = false,
        definition: TaskDefinition? = nil,
        duration: Int64? = nil,
        handingOver: Bool = false,
        canWait: Bool = false,
        then settled: (@Sendable () -> Void)? = nil
    ) {
        precondition(!dryRun, "a dry run records nothing")
        if let guardKey = check.follows {
            follow(guardKey, as: key)
            settled?()
            return
        }
        let make: @Sendable () -> BuildState.Write = { [self] in
            recordSuccess(
                key: key,
                check: check,
                request: request,
                depfile: depfile,
                keepDepfile: keepDepfile,
                definition: definition,
                duration: duration
            )
        }
        guard let state else {
            _ = make()
            settled?()
            return
        }
        if let settled {
            state.record(making: make, handingOver: handingOver, canWait: canWait, committed: settled)
        } else {
            state.save(make())
        }
    }

    /// The work of
    /// ``succeeded(key:check:request:depfile:keepDepfile:definition:duration:handingOver:canWait:then:)``
    /// but the commit: the outputs hashed, the depfile read, the snapshot's paths and the
    /// published signature noted; what is to be committed.
    private func recordSuccess(
        key: JobKey,
        check: Check,
        request: JobRequest,
        depfile: String?,
        keepDepfile: Bool,
        definition: TaskDefinition?,
        duration: Int64?
    ) -> BuildState.Write {
        // The check's looks at the outputs saw them before the job wrote them (missing, or
        // changed): they are looked at again below. Kept, a job would hold two states of one path
        // and the snapshot would leave it out, so the next run couldn't be a no-op.
        var watched = Watched(paths: check.watched.map { Array($0.prefix(check.outputLooksFrom ?? $0.count)) })
        var outputs: [String: ContentHash] = [:]
        let unmatchedOutput: ((Int) -> Void)? = definition.map { definition in
            { [self] position in
                // A literal output it didn't write failed the job already; a glob is a warning.
                guard position < definition.generates.count, GlobPattern.isMagic(request.outputs[position]) else {
                    return
                }
                warn(
                    RunWarning(
                        "'\(request.outputs[position])' in 'generates' of task '\(definition.name)' matched no file after '\(request.label)' ran",
                        at: definition.generates[position].location
                    )
                )
            }
        }
        // Outputs are read (XXH3): the job just wrote them, so the index can't vouch for them.
        for output in expand(request.outputs, in: request.directory, watched: &watched, unmatched: unmatchedOutput) {
            if let found = watched.hash(projectPath(output, in: request.directory), as: .xxh3, with: hasher) {
                outputs[output] = found.hash
            }
        }
        var parts = check.parts
        var discovered: [String: FileDigest] = [:]
        if let depfile {
            let path = Path.join(request.directory, depfile)
            if let text = try? Files.readText(path) {
                let declared = Set(outputs.keys)
                for input in Depfile.prerequisites(text) where !declared.contains(input) {
                    let found = watched.hash(projectPath(input, in: request.directory), with: hasher)
                    discovered[input] = found?.digest ?? .absent
                }
                if !keepDepfile { _ = unlink(path) }
            } else if let definition {
                warn(
                    RunWarning(
                        "task '\(definition.name)' declares the depfile '\(depfile)', which '\(request.label)' didn't write: the files it reads aren't known, so editing them (a header) reruns nothing; make the command write it (cc -MMD -MF \(depfile))",
                        at: definition.location
                    )
                )
            }
            // What the next check will hash: the declared inputs and these.
            for (path, hash) in discovered where parts.inputs[path] == nil { parts.inputs[path] = hash }
        }
        let record = JobRecord(
            signature: Self.signature(of: parts),
            outputs: outputs,
            finishedAt: FileHasher.realTime(),
            definition: parts.definition,
            inputs: parts.inputs,
            dependencies: parts.dependencies,
            discovered: discovered
        )
        // The snapshot and the published table keep the key's parts (an `each:` job's file is the
        // task's list's string), not its stored form: 64 bytes a job on the heap until the run ends.
        recorder.record(
            key: key,
            checkedEveryRun: check.checkedEveryRun,
            paths: watched.paths
        )
        publish(outputSignature(of: record), under: key)
        return BuildState.Write(
            record,
            for: key.stored,
            changedFiles: hasher.takeChangedRecords(),
            duration: definition.flatMap { definition in duration.map { (definition.name, $0) } }
        )
    }

    /// How many signatures by name the run's table holds without growing (for tests).
    var signatureCapacity: Int { published.withLock { $0.named.capacity } }

    /// Publishes the output signature of a job found up to date.
    public func upToDate(key: JobKey, check: Check) {
        if let guardKey = check.follows {
            follow(guardKey, as: key)
            return
        }
        if let position = check.snapshotJob {
            recorder.carry(key: key, index: position)
        } else {
            recorder.record(key: key, checkedEveryRun: check.checkedEveryRun, paths: check.watched)
        }
        guard let signature = check.outputSignature else { return }
        publish(signature, under: key)
    }

    /// Takes the tasks of `part` left out of the run (``ChangedPart/unchanged``) as up to date
    /// on the previous snapshot's word, before the run starts: each publishes what it published
    /// then, and keeps its job in the snapshot this run writes, as a job found up to date that
    /// way in the run would. The paths the previous snapshot watched for no job (the plugins'
    /// files) are kept too.
    ///
    /// Threading: any thread, before the run starts.
    ///
    /// - Parameter keptNames: The tasks the run takes.
    public func carryUnchanged(_ part: ChangedPart, keptNames: [String]) {
        guard let previous else { return }
        let snapshot = previous.snapshot
        published.withLock { table in
            if table.isEmpty,
                snapshot.published.count == part.unchanged.count + part.unchangedGroups.count
                    + keptNames.filter({ snapshot.published[$0] != nil }).count
            {
                // What they published then is the previous table, but for the kept tasks': a
                // copy shares its storage, and the few kept are taken out.
                table.carry(snapshot.published)
                for name in keptNames { table[name: name] = nil }
            } else {
                for name in part.unchanged + part.unchangedGroups { table[name: name] = snapshot.published[name] }
            }
        }
        recorder.carry(indices: part.snapshotJobs, unwatchedPaths: previous.unwatchedPaths)
    }

    /// Notes a warning, once however often it is noticed.
    func warn(_ warning: RunWarning) {
        warnings.withLock { warnings in
            if warnings.seen.insert(warning).inserted { warnings.list.append(warning) }
        }
    }

    /// The warnings noticed so far, in order; each is returned once.
    public func takeWarnings() -> [RunWarning] {
        warnings.withLock { warnings in
            defer { warnings.list = [] }
            return warnings.list
        }
    }

    /// Forgets a job that failed, so the next run tries it again.
    public func failed(key: JobKey) {
        guard !dryRun else { return }
        state?.remove(key: key.stored)
    }

    /// Notes the files an `each:` task listed (sorted), and the directories it read to list
    /// them: when one changes (a file appears or goes), the next run can't be a no-op on the
    /// snapshot's word.
    func listed(task: String, sources: [String], directories: [VisitedDirectory]) {
        published.withLock { $0.listed(task: task, sources: sources) }
        var watched = Watched()
        watched.add(directories, relativeTo: relative)
        recorder.recordListing(task: task, paths: watched.paths ?? [])
    }

    /// Notes files the whole run rests on (the plugins it loaded): when one changes, the next run
    /// can't be a no-op on the snapshot's word — it loads the plugins, whose versions are in the
    /// job signatures.
    public func watch(files: [String]) {
        var watched = Watched()
        for file in files { _ = watched.hash(relative(file), as: .xxh3, with: hasher) }
        guard let paths = watched.paths else {
            // Can't vouch: the list is incomplete.
            recorder.record(key: JobKey(task: "\u{0}files the run rests on"), checkedEveryRun: false, paths: nil)
            return
        }
        recorder.recordListing(task: "\u{0}files the run rests on", paths: paths)
    }

    /// Publishes the output signature of a group task (no commands): its dependencies', in order.
    /// In a dry run, a group one of whose dependencies would run would run too.
    public func publishGroup(_ task: String, dependencies: [String]) {
        if dryRun {
            let runs = wouldRun.withLock { set in
                guard dependencies.contains(where: set.contains) else { return false }
                set.insert(task)
                return true
            }
            if runs { return }
        }
        published.withLock { table in
            var hasher = ContentHasher()
            for name in dependencies {
                hasher.combine(name)
                hasher.combine(table[name: name] ?? ContentHash(high: 0, low: 0))
            }
            table[name: task] = hasher.finalize()
        }
    }

    /// Publishes the output signature of a whole `each:` task: its jobs' (one per file of
    /// `sources`), in order.
    public func publishEachTask(_ task: String, sources: [String]) {
        if dryRun, wouldRun.withLock({ $0.contains(task) }) { return }
        published.withLock { table in table[name: task] = table.eachTaskSignature(task, sources: sources) }
    }

    /// How this run's file hashes were obtained (`KILN_DEBUG=hashes`).
    public var hashingStatistics: FileHasher.Statistics { hasher.statistics }

    /// How many job records this run committed, in how many commits (`KILN_DEBUG=state`); zero
    /// without a state.
    public var commits: BuildState.Commits { state?.commits ?? BuildState.Commits() }

    /// Saves the file hashes learned during the run.
    public func saveFiles() {
        guard !dryRun else { return }
        state?.save(changedFiles: hasher.takeChangedRecords())
        // Saved, they can be read back should anything ask again.
        hasher.letGoOfSaved()
    }

    /// Writes the up-to-date snapshot of a run whose jobs have all finished: `jobs` of them
    /// succeeded or were up to date. Only when the run as a whole succeeded (`complete`) can the
    /// next run be a no-op on its word; otherwise it still spares the next run checking the jobs
    /// that settled. Without a Taskfile identity (no valid Taskfile cache: the Taskfile changed
    /// during the run) there is none.
    ///
    /// After a run that changed only a few fixed-width fields of the previous snapshot (one
    /// changed source among 10k tasks), it is written as a patch of that snapshot's file
    /// (``UpToDateSnapshot/Patch``); otherwise it is encoded from what the run recorded.
    public func saveSnapshot(
        taskfilePath: String,
        targets: [String],
        jobs: Int,
        complete: Bool,
        watches: Bool = false,
        context: TaskfileContext = .process
    ) {
        guard state != nil, !dryRun,
            let identity = TaskfileCache.identity(taskfilePath: taskfilePath, root: root, context: context)
        else { return }
        let table = published.withLock { $0 }
        if let base = previous?.base,
            let patch = recorder.patch(
                taskfileIdentity: identity,
                targets: targets,
                published: table,
                expectedJobs: jobs,
                complete: complete,
                watches: watches
            ),
            patch.write(root: root, over: base) != .notApplicable
        {
            return
        }
        var snapshot = recorder.snapshot(
            taskfileIdentity: identity,
            targets: targets,
            published: table,
            expectedJobs: jobs
        )
        snapshot.complete = snapshot.complete && complete
        snapshot.watches = watches
        snapshot.write(root: root)
    }

    /// The parts of a signature, kept in the record so `explain` can name what changed.
    ///
    /// Threading: a value type.
    public struct Parts: Sendable {
        var definition: ContentHash
        var inputs: [String: FileDigest]
        var dependencies: [String: ContentHash]
    }

    // MARK: Helpers

    /// A job's output signature: its outputs' hashes, or — when it declares none — its signature.
    private func outputSignature(of record: JobRecord) -> ContentHash {
        record.outputs.isEmpty ? record.signature : record.outputSignature
    }

    /// A piece that follows `guardKey` ran or was up to date with it: it publishes what the
    /// guard published (nothing, until the task's last piece records the guard), and the
    /// snapshot notes it with no path of its own — its verdict rests on the guard's.
    private func follow(_ guardKey: JobKey, as key: JobKey) {
        recorder.record(key: key, checkedEveryRun: false, paths: [])
        published.withLock { table in table[key] = table[guardKey] }
    }

    /// Publishes a job's output signature.
    private func publish(_ signature: ContentHash, under key: JobKey) {
        published.withLock { table in table[key] = signature }
    }

    /// `path` (relative to `directory`) relative to the project root when it is inside it.
    private func projectPath(_ path: String, in directory: String) -> String {
        relative(Path.join(directory, path))
    }

    /// An absolute path relative to the project root (`.` for the root); paths outside stay absolute.
    private func relative(_ absolute: String) -> String {
        Path.relative(absolute, to: root)
    }

    /// Paths and glob patterns → the files they name, relative to `directory`, sorted; the
    /// directories the globs read go into `watched`.
    private func expand(
        _ patterns: [String],
        in directory: String,
        watched: inout Watched,
        unmatched: ((Int) -> Void)? = nil
    ) -> [String] {
        // Plain paths need no walk (a missing one is noticed by its hash, in `check`).
        if patterns.allSatisfy(GlobList.isPlainPath) { return patterns }
        var visited: [VisitedDirectory] = []
        let files = Glob.files(
            matching: patterns,
            in: directory,
            visited: &visited,
            keepingMissingLiterals: true,
            unmatched: unmatched
        )
        watched.add(visited, relativeTo: relative)
        return files
    }
}
