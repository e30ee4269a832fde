import KilnJobs
import KilnPaths
import KilnPluginAPI

/// One kiln invocation against a project, from start to end: it takes the project's lock, scans
/// the last run's snapshot, loads the Taskfile and plans, opens the build state, runs (or, for a
/// dry run, `kiln status` and `kiln explain`, runs the same scheduler with jobs that run nothing),
/// saves the snapshot and closes the state. The command line parses its arguments, makes one call,
/// prints what comes back and exits; nothing here exits the process.
///
/// Threading: ``run(_:)`` and ``inspect(_:)`` block the calling thread until the session is over;
/// the closures of a ``Request`` are called from any thread.
public enum BuildSession {
    /// What a session is asked to do, and the seams it needs from the layers above.
    ///
    /// Threading: a value type; its closures must be thread-safe.
    public struct Request: Sendable {
        /// `--taskfile`, or `nil` to find one from `currentDirectory`.
        public var taskfile: String?
        /// Where kiln was started.
        public var currentDirectory: String
        /// Where plugins may be loaded from.
        public var plugins: PluginOptions
        /// The tasks to run (empty: `default`).
        public var targets: [String]
        /// Runs the commands (the process monitor).
        public var runner: any CommandRunner
        /// Hashing through git for a project root (`nil`: read every file).
        public var tracked: @Sendable (String) -> (any TrackedContent)?
        /// The process ends right after the session (the command line): the session's large
        /// objects — the Taskfile model, the plan, the run's jobs — are kept until it does, and the
        /// kernel frees them at once, as ninja leaves its graph. Freeing a 10,000-task graph one
        /// object at a time takes tens of milliseconds.
        public var exitsAfterwards = false
        /// For `--affected`: the files changed in git under a root, or `nil` to run everything
        /// (outside a repository). `nil` here: not an affected run.
        public var changedFiles: (@Sendable (String) throws(Failure) -> [String]?)?
        /// The environment, `NAME=value` arguments and arguments after `--` the Taskfile's
        /// variables may read.
        public var context: TaskfileContext = .process
        /// A request with no `--affected` and no phase marks.
        public init(
            taskfile: String?,
            currentDirectory: String,
            plugins: PluginOptions,
            targets: [String],
            runner: any CommandRunner,
            tracked: @escaping @Sendable (String) -> (any TrackedContent)?
        ) {
            self.taskfile = taskfile
            self.currentDirectory = currentDirectory
            self.plugins = plugins
            self.targets = targets
            self.runner = runner
            self.tracked = tracked
        }
    }

    /// How a real run goes.
    ///
    /// Threading: a value type; its closures are called from the session's thread.
    public struct RunSettings: Sendable {
        /// Keep-going, batch sizes.
        public var options = RunOptions()
        /// The `cpu` queue's width (`-j`), or `nil` for the cores.
        public var cpuWidth: Int?
        /// `--wait`: wait for another run on the project (at most `waitLimit` seconds).
        public var wait = false
        /// With `wait`, the longest wait.
        public var waitLimit: Double?
        /// Said when another run holds the project and this one waits (its holder's description).
        public var waiting: @Sendable (String) -> Void = { _ in }
        /// Whether the snapshot may answer for jobs without a job of the run each: a snapshot
        /// that says nothing changed ends the session before the Taskfile is loaded, and after a
        /// small change only the part of the plan it touches runs
        /// (``ChangedPart/of(_:order:dependencyPositions:watches:after:)``). Not when every job's
        /// events, reasons or a trace are wanted.
        public var allowsSnapshotShortcuts = true
        /// The observers of the run, given its queues.
        public var observers: @Sendable (ResourceQueues) -> any RunObserver
        /// Called once the run exists, before it starts: where Ctrl-C is wired to it.
        public var started: @Sendable (BuildRun) -> Void = { _ in }
        /// `--force`: every planned job runs, up to date or not.
        public var forcesEveryJob = false
        /// Whether something is known to have changed since the snapshot (the launcher's look
        /// found a changed path): the Taskfile model is then loaded while another thread scans
        /// the snapshot, as the run will need it. Without it the scan goes first, so that a no-op
        /// never loads the Taskfile.
        public var changeSeenBefore = false
        /// What the launcher's look at the snapshot found, when it found a change: the scan takes
        /// it instead of looking at every path again, while the snapshot is the one it looked at
        /// (``UpToDateSnapshot/Handover``).
        package var launcherLook: UpToDateSnapshot.Handover?
        /// The remote cache a run uses, given the Taskfile's `remote:` section (`nil` without
        /// one): the command line and the environment may name another or change its settings.
        public var remote: @Sendable (_ taskfile: RemoteSettings?) -> RemoteSettings? = { $0 }
        /// Asks a task's `prompt:` question (task name, question) before anything runs; `false`
        /// ends the session (nothing runs). The command line answers from `--yes` or the terminal.
        public var confirm: @Sendable (_ task: String, _ question: String) -> Bool = { _, _ in false }
        /// Told, once the run knows, whether a task it was given says `watch: true` — from the
        /// plan, which it is given too (before the run starts), or from the snapshot of a no-op
        /// (no plan): the command line then watches.
        public var watchRequested: @Sendable (_ watches: Bool, _ plan: BuildPlan?) -> Void = { _, _ in }

        /// Settings with these observers.
        public init(observers: @escaping @Sendable (ResourceQueues) -> any RunObserver) {
            self.observers = observers
        }
    }

    /// How a session ended.
    ///
    /// Threading: a value type.
    public enum Outcome: Sendable {
        /// The snapshot of the last complete run vouched for everything: `jobs` are up to date,
        /// and the Taskfile wasn't loaded.
        case upToDate(jobs: Int)
        /// The run finished.
        case ran(
            RunSummary,
            seconds: Double,
            warnings: [RunWarning],
            hashing: FileHasher.Statistics,
            commits: BuildState.Commits
        )
    }

    /// Why a session couldn't go on, with the exit status the command line documents.
    ///
    /// Threading: a value type.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, for people (located errors for a Taskfile).
        public var description: String
        /// 2 an invalid Taskfile, 3 another run holds the project, 4 the state can't be written.
        public var exitStatus: Int32

        /// A failure.
        public init(description: String, exitStatus: Int32) {
            self.description = description
            self.exitStatus = exitStatus
        }

        /// The Taskfile is missing or invalid (exit status 2).
        static func taskfile(_ errors: TaskfileErrors) -> Failure {
            Failure(description: errors.description, exitStatus: 2)
        }

        /// The lock couldn't be taken (3 when busy, 4 when `.kiln` can't be written).
        static func lock(_ error: BuildStateError) -> Failure {
            Failure(description: "kiln: \(error)", exitStatus: error.isBusy ? 3 : 4)
        }
    }

    /// A real run: every job whose verdict says it must run runs.
    ///
    /// - Throws: ``Failure`` when the Taskfile doesn't load, the project is busy, or `.kiln`
    ///   can't be written.
    ///
    /// `phase` is called, on this thread, as each phase ends (`KILN_DEBUG=phases`).
    public static func run(_ request: Request, _ settings: RunSettings, phase: (String) -> Void = { _ in })
        throws(Failure) -> Outcome
    {
        let located = Project.locateTaskfile(request.taskfile, currentDirectory: request.currentDirectory)
        // The last complete run's snapshot: when nothing it watches changed, this run is a no-op,
        // said without loading the Taskfile model or the build state.
        var lock: ProjectLock?
        // The session is over, however it ends: another run may go.
        defer { lock?.release() }
        var scan: UpToDateSnapshot.Scan?
        var tracked: (any TrackedContent)?
        // The model, loaded while the snapshot is scanned when a change is known
        // (`changeSeenBefore`).
        var loaded: Result<Project, Failure>?
        // The remote cache the command line or the environment names: connected while the
        // Taskfile loads, once something has changed.
        var early: EarlyConnection?
        if let located, request.changedFiles == nil {
            lock = try takeLock(root: located.root, settings)
            tracked = request.tracked(located.root)
            let scanning: @Sendable () -> UpToDateSnapshot.Scan? = { [tracked, handover = settings.launcherLook] in
                UpToDateSnapshot.scan(
                    root: located.root,
                    taskfilePath: located.path,
                    targets: request.targets,
                    tracked: tracked,
                    handover: handover,
                    context: request.context
                )
            }
            if settings.changeSeenBefore {
                // Something will run: the guardian is forked first, while the heap is small.
                ProcessMonitor.startGuardian()
                early = settings.remote(nil).map(EarlyConnection.init)
                // The scan on another thread, the load on this one: the model's hundred thousand
                // small allocations grow the main heap a few pages at a time with `brk`; a
                // thread's own arena would grow one page per `mprotect` (1,600 of them at 10k
                // tasks). The scan's are few and large.
                let background = Background(scanning)
                loaded = Result { () throws(Failure) in try loadProject(request) }
                scan = background.wait()
            } else {
                scan = scanning()
            }
            phase(
                loaded == nil
                    ? "snapshot" : scan?.handedOver == true ? "load (the launcher looked)" : "snapshot and load"
            )
            if let scan, scan.isNoOp, settings.allowsSnapshotShortcuts, !settings.forcesEveryJob {
                settings.watchRequested(scan.snapshot.watches, nil)
                return .upToDate(jobs: scan.snapshot.jobCount)
            }
        }
        // Something may run: the guardian is forked now, while the heap is small.
        ProcessMonitor.startGuardian()
        // Not when only jobs that always run are why: those the cache can answer (they declare
        // what they read) are up to date on the snapshot's word, so the run may ask it nothing.
        if early == nil, scan.map({ $0.changedPaths > 0 || !$0.snapshot.complete }) ?? true {
            early = settings.remote(nil).map(EarlyConnection.init)
        }
        // After a small change, only the part of the plan it touches is planned and runs: the
        // rest is up to date on the snapshot's word, without a job each. A run of the whole plan
        // asks the snapshot only for published signatures, positions and dirty flags as it runs:
        // its paths and jobs are read again when the next one is made (2.7 MB of a 10k-task
        // build's heap). They are let go of as soon as the plan is known to be whole, before
        // its tasks' definitions are decoded: held while they were, they made the heap's peak.
        let held = HeldScan(scan.take())
        let choosesPart = settings.allowsSnapshotShortcuts && !settings.forcesEveryJob && held.scan != nil
        if !choosesPart { held.releaseDetail() }
        let (project, plan, part) = try loadAndPlan(
            request,
            loaded: loaded,
            choose: choosesPart ? held.choose : nil
        )
        // `choose` lets go of it when it says the whole plan; this holds whether or not the planner
        // asked (a second release does nothing).
        if part == nil { held.releaseDetail() }
        scan = held.take()
        let planned = loaded == nil ? "load and plan" : "plan"
        phase(part.map { "\(planned) (changed part: \(plan.tasks.count) of \($0.kept.count) tasks)" } ?? planned)
        let watches = plan.targetsWatch
        settings.watchRequested(watches, plan)
        // go-task's `prompt:`: every question is answered before anything runs.
        for task in plan.tasks where task.definition.hasPrompts && !task.definition.isGroup {
            for question in task.definition.options.prompts where !settings.confirm(task.definition.name, question) {
                throw Failure(
                    description:
                        "kiln: task '\(task.definition.name)' asks \"\(question)\" and it wasn't answered yes, so nothing ran; pass --yes to answer yes",
                    exitStatus: 1
                )
            }
        }
        let root = project.taskfile.root
        if lock == nil { lock = try takeLock(root: root, settings) }
        let state = BuildState(root: root, lock: lock, warn: warn)
        let incremental = IncrementalState(
            state: state,
            root: root,
            previous: settings.forcesEveryJob ? nil : scan,
            tracked: tracked ?? request.tracked(root),
            forcing: settings.forcesEveryJob,
            plannedTasks: plan.tasks.count
        )
        phase("open state")
        // The run changes what the snapshot describes: it is written again as the run ends.
        UpToDateSnapshot.remove(root: root)
        incremental.watch(files: project.plugins.map(\.file))
        var options = settings.options
        options.incremental = incremental
        // Connected early (see EarlyConnection), or when a job is first looked up: a no-op never
        // loads the remote library.
        let remote = settings.remote(project.taskfile.remote)
        if let remote {
            options.remote = RemoteCacheSession(remote, early: early) { System.writeError($0 + "\n") }
        } else {
            early?.discard()
        }
        let queues = ResourceQueues(
            definitions: project.taskfile.resources,
            cpuWidth: settings.cpuWidth,
            defaultWidths: remote.map {
                [
                    $0.endpoint.queueName: RemoteSettings.requestsAtOnce,
                    RemoteSettings.resource: RemoteSettings.executionWidth,
                ]
            } ?? [:]
        )
        defer { options.remote?.close() }
        if let part {
            incremental.carryUnchanged(part, keptNames: plan.tasks.map(\.definition.name))
            options.upToDateBeforehand = part.unchanged
        }
        // The long poles first: by the durations the last runs recorded, or by depth.
        // (For the changed part, only its tasks' are read: every task's would cost more than the
        // run. Never timed, a task weighs the mean of those read.)
        let durations =
            plan.tasks.count <= 1
            ? [:]
            : part != nil && plan.tasks.count <= 64
                ? state.loadDurations(of: plan.tasks.map(\.definition.name))
                : state.loadDurations(expecting: plan.tasks.count)
        // `plan` ends here (a local lives to the end of its scope otherwise): reordered, its task
        // list and dependency lists would be held through the run for nothing (0.4 MB for 10k
        // tasks, more in a DAG).
        let ordered = (consume plan).startingLongestPathFirst(durations: durations)
        let run = BuildRun(plan: ordered, queues: queues, options: options, observer: settings.observers(queues))
        if request.exitsAfterwards {
            keepUntilExit([project, ordered, state, incremental, run, queues, scan as Any])
        }
        settings.started(run)
        System.markRunInProgress(true)
        run.start()
        let summary = run.wait()
        System.markRunInProgress(false)
        let warnings = incremental.takeWarnings()
        phase("run")
        incremental.saveFiles()
        // Even after a failure: the jobs that settled are in it (it is then incomplete, so the
        // next run is no no-op on its word, but checks only what changed and what didn't settle).
        incremental.saveSnapshot(
            taskfilePath: project.taskfile.path,
            targets: request.targets,
            jobs: summary.succeeded + summary.upToDate + summary.remoteHits,
            complete: summary.succeededOverall && request.changedFiles == nil,  // an affected run covers only some jobs
            watches: watches,
            context: request.context
        )
        state.close()
        phase("save and close")
        return .ran(
            summary,
            seconds: run.now,
            warnings: warnings,
            hashing: incremental.hashingStatistics,
            commits: incremental.commits
        )
    }

    /// Every job's verdict, as the run of the same request would reach it now — for
    /// `--dry-run`, `kiln status` and `kiln explain` — running nothing and saving nothing
    /// (``BuildPlan/verdicts(_:remoteKeys:)``). The lock is taken when it is free; when another
    /// run holds it, the state is read beside it, without the snapshot, and `note` says the
    /// answer may change as that run goes on.
    ///
    /// - Throws: ``Failure`` when the Taskfile doesn't load.
    /// With `onlyOutOfDate` (`--dry-run`), a snapshot that vouches for every job answers at once,
    /// with no verdict, as a run's would.
    ///
    /// `phase` is called, on this thread, as each phase ends.
    public static func inspect(
        _ request: Request,
        remoteKeys: Bool = false,
        onlyOutOfDate: Bool = false,
        note: (String) -> Void,
        phase: (String) -> Void = { _ in }
    ) throws(Failure) -> [JobVerdict] {
        let located = Project.locateTaskfile(request.taskfile, currentDirectory: request.currentDirectory)
        var lock: ProjectLock?
        defer { lock?.release() }
        if let located {
            lock = try? ProjectLock(root: located.root, wait: false)
            if lock == nil {
                note("kiln: note: another kiln run is using this project; this answer may change as it goes on")
            }
        }
        // The snapshot only when no run is changing things under it; never rewritten here.
        let tracked = located.flatMap { request.tracked($0.root) }
        var scan: UpToDateSnapshot.Scan?
        if lock != nil, let located {
            scan = UpToDateSnapshot.scan(
                root: located.root,
                taskfilePath: located.path,
                targets: request.targets,
                mayRewrite: false,
                tracked: tracked,
                context: request.context
            )
            phase("snapshot")
        }
        if onlyOutOfDate, request.changedFiles == nil, scan?.isNoOp == true { return [] }
        let (project, plan) = try loadAndPlan(request)
        phase("load and plan")
        let root = project.taskfile.root
        let state = BuildState(root: root, lock: lock, warn: warn)
        defer { state.close() }
        let incremental = IncrementalState(
            state: state,
            root: root,
            previous: scan,
            tracked: tracked ?? request.tracked(root),
            dryRun: true,
            plannedTasks: plan.tasks.count
        )
        if request.exitsAfterwards { keepUntilExit([project, plan, state, incremental, scan as Any]) }
        phase("open state")
        var client: (any RemoteClient)?
        if remoteKeys {
            switch RemoteLibrary.keysOnlyClient() {
            case .success(let made): client = made
            case .failure(let failure):
                throw Failure(description: "kiln: remote keys: \(failure.message)", exitStatus: 1)
            }
        }
        let verdicts = plan.verdicts(incremental, remoteKeys: client)
        phase("verdicts")
        return verdicts
    }

    /// Loads the project and plans the request's targets (`default` when none), cut down to what
    /// changed for an affected run.
    /// The plan a run of `request` would make now — the Taskfile loaded, its dynamic variables
    /// run — without running a job or taking the project's lock: what `kiln run --watch` watches.
    ///
    /// Threading: blocks the calling thread while the Taskfile loads.
    public static func plan(_ request: Request) throws(Failure) -> BuildPlan {
        try loadAndPlan(request).1
    }

    static func loadAndPlan(_ request: Request) throws(Failure) -> (Project, BuildPlan) {
        let (project, plan, _) = try loadAndPlan(request, choose: nil)
        return (project, plan)
    }

    /// The project of `request`: its Taskfile model (from the cache when it holds) and plugins.
    static func loadProject(_ request: Request) throws(Failure) -> Project {
        do {
            return try Project(
                taskfilePath: request.taskfile,
                currentDirectory: request.currentDirectory,
                runner: request.runner,
                plugins: request.plugins,
                context: request.context
            )
        } catch {
            throw .taskfile(error)
        }
    }

    /// A value worked out on a thread of its own while the session's thread does something
    /// else (the snapshot's scan, beside the model's load).
    ///
    /// Threading: made and waited for by one thread; the work runs on its own.
    final class Background<Value: Sendable>: Sendable {
        private let value = HostMutex<Value?>(nil)
        private let done = CountingSemaphore()

        init(_ work: @escaping @Sendable () -> Value) {
            System.startThread { [self] in
                let result = work()
                value.withLock { $0 = result }
                done.signal()
            }
        }

        /// The value, once worked out. Call it once.
        func wait() -> Value {
            done.wait()
            // Taken, not copied: the caller may let go of parts of it (``UpToDateSnapshot/Scan/releasingDetail()``).
            return value.withLock { $0.take()! }
        }
    }

    /// The scan of the last snapshot while a run's plan is made: the one reference to it, so
    /// that letting go of its detail (``UpToDateSnapshot/Scan/releasingDetail()``) frees it.
    ///
    /// Threading: used by one thread, the session's.
    final class HeldScan {
        private(set) var scan: UpToDateSnapshot.Scan?

        init(_ scan: UpToDateSnapshot.Scan?) { self.scan = scan }

        /// Lets go of the scan's paths and jobs (see ``UpToDateSnapshot/Scan/releasingDetail()``).
        func releaseDetail() { scan = scan?.releasingDetail() }

        /// The part of the plan a run after the scan takes: the part a change touches
        /// (``ChangedPart/of(_:order:dependencyPositions:watches:after:)``), or `nil` for the
        /// whole plan, whose run doesn't need the scan's detail: it is let go of at once.
        func choose(
            _ outline: TaskOutline,
            _ order: [Int],
            _ dependencyPositions: [[Int]],
            _ watches: Bool
        ) -> ChangedPart? {
            let part = scan.flatMap { scan in
                ChangedPart.of(
                    outline,
                    order: order,
                    dependencyPositions: dependencyPositions,
                    watches: watches,
                    after: scan
                )
            }
            if part == nil { releaseDetail() }
            return part
        }

        /// Takes the scan out: the holder is empty afterwards.
        func take() -> UpToDateSnapshot.Scan? { scan.take() }
    }

    /// ``loadAndPlan(_:)``, the planner leaving out what `choose` says the run doesn't take
    /// (``BuildPlanner/plan(targets:choose:)``); `loaded` is the project when it was loaded
    /// already (beside the snapshot's scan).
    static func loadAndPlan(
        _ request: Request,
        loaded: Result<Project, Failure>? = nil,
        choose: BuildPlanner.Choose?
    ) throws(Failure) -> (Project, BuildPlan, ChangedPart?) {
        let project = try (loaded ?? Result { () throws(Failure) in try loadProject(request) }).get()
        do {
            var (plan, part) = try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(
                targets: request.targets,
                choose: choose
            )
            if let changedFiles = request.changedFiles, let changed = try changedFiles(project.taskfile.root) {
                let selection = plan.affected(by: changed, discovered: discoveredInputs(for: plan))
                let files = selection.changedFiles.count
                let tasks = plan.tasks.count - selection.pieces.count
                warn(
                    "kiln: \(files) changed file\(files == 1 ? "" : "s") affect \(selection.shownTasks.count) of \(tasks) task\(tasks == 1 ? "" : "s")"
                )
                plan = plan.restricted(to: selection)
                part = nil
            }
            return (project, plan, part)
        } catch let error as TaskfileErrors {
            throw .taskfile(error)
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(description: "kiln: \(error)", exitStatus: 1)
        }
    }

    /// What depfiles named last time, from the build state (read without taking the project's
    /// lock); empty without a task that has a depfile, so the state isn't read for nothing.
    public static func discoveredInputs(for plan: BuildPlan) -> [JobKey: [String]] {
        let root = plan.taskfile.root
        guard plan.tasks.contains(where: { $0.definition.depfile != nil }),
            Files.exists(KilnDirectory(root: root).stateDatabase)
        else { return [:] }
        let state = BuildState(root: root, lock: nil, warn: warn)
        defer { state.close() }
        return state.discoveredInputs()
    }

    private static func takeLock(root: String, _ settings: RunSettings) throws(Failure) -> ProjectLock {
        do {
            return try ProjectLock(
                root: root,
                wait: settings.wait,
                waitLimit: settings.waitLimit,
                waiting: settings.waiting
            )
        } catch {
            throw .lock(error)
        }
    }

    /// What ``Request/exitsAfterwards`` keeps: never freed.
    private static let kept = HostMutex<[KeptObjects]>([])

    /// Objects kept for the rest of the process. `@unchecked Sendable`: never touched again.
    private final class KeptObjects: @unchecked Sendable {
        let objects: [Any]
        init(_ objects: [Any]) { self.objects = objects }
    }

    private static func keepUntilExit(_ objects: [Any]) {
        let box = KeptObjects(objects)
        kept.withLock { $0.append(box) }
    }

    /// The state's and the session's notes go to standard error.
    @Sendable private static func warn(_ message: String) {
        System.writeError(message + "\n")
    }
}
