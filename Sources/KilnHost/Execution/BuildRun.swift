import KilnJobs
import KilnPaths
import KilnPluginAPI
import Synchronization

/// Settings of a run.
///
/// Threading: a value type; safe to pass between threads.
public struct RunOptions: Sendable {
    /// Keep running everything that doesn't depend on a failed job.
    public var keepGoing = false
    /// How many jobs of an `each:` task are created at a time (a task's `batch:` overrides it).
    public var batchSize = 256
    /// How many batches of one `each:` task exist at once: the next is created as one finishes.
    public var batchesInFlight = 2
    /// How many tasks' jobs exist at once: as jobs finish, their completion blocks create the
    /// next tasks' (in dependency order), so a 100k-task Taskfile never means 100k live jobs.
    /// `nil`: ``defaultLiveTaskWindow(cpuWidth:remote:)``.
    public var liveTaskWindow: Int?

    /// The live-task window when none is set: 16 tasks per `cpu` slot and at least 256 — enough
    /// to keep every slot fed and the longest paths among the created tasks — and at least 512
    /// with a remote, whose cache takes 256 look-ups at once. Each live task holds its job, its
    /// request and its variables: a warm 10k-task build at -j2 peaked at 40.5 MB of RSS with 512,
    /// 39.0 with 256 and 38.1 with 128. 256 built as fast as 512; 128 was slower than the build
    /// before in three rounds of four, with more system time.
    public static func defaultLiveTaskWindow(cpuWidth: Int, remote: Bool) -> Int {
        max(remote ? 512 : 256, 16 * cpuWidth)
    }
    /// The incremental state: jobs whose signature and outputs are unchanged are skipped. `nil`
    /// runs everything and remembers nothing.
    public var incremental: IncrementalState?
    /// The remote cache: jobs it can answer (``RemoteRecipe``) are looked up before they run, and
    /// their results stored after they ran and succeeded. `nil`: no remote.
    public var remote: RemoteCacheSession?
    /// Tasks left out of the plan as up to date on the snapshot's word
    /// (``ChangedPart/unchanged``, carried by ``IncrementalState/carryUnchanged(_:keptNames:)``): reported
    /// up to date as the run starts, and counted so.
    public var upToDateBeforehand: [String] = []

    /// Creates the defaults.
    public init() {}
}

/// What a run came to.
///
/// Threading: a value type; safe to pass between threads.
public struct RunSummary: Sendable {
    /// Jobs that ran and succeeded.
    public var succeeded = 0
    /// Jobs that ran and failed.
    public var failed = 0
    /// Jobs that ran and failed, of tasks called with `ignore_error: true`: reported, not
    /// failing the run.
    public var ignoredFailures = 0
    /// Jobs that didn't run (a dependency failed, the run stopped) or were stopped.
    public var cancelled = 0
    /// Jobs skipped because nothing they depend on changed.
    public var upToDate = 0
    /// Jobs the remote cache answered: their outputs were fetched, and they didn't run.
    public var remoteHits = 0
    /// Whether the run was interrupted (Ctrl-C, SIGTERM).
    public var interrupted = false
    /// The most jobs of `each:` tasks that existed at once.
    public var peakLiveEachJobs = 0
    /// The most tasks whose jobs existed at once (never more than the live-task window).
    public var peakLiveTasks = 0
    /// The most verdicts of tasks checked ahead of their jobs that were held at once (a batch:
    /// 64, or four a CPU slot when there are more than 16).
    public var peakPrechecked = 0

    /// An empty summary.
    public init() {}

    /// Whether everything succeeded.
    public var succeededOverall: Bool { failed == 0 && cancelled == 0 && !interrupted }
}

/// One run of a ``BuildPlan``: jobs on per-resource queues, `each:` tasks created in batches by
/// completion blocks, failures stopping their dependents.
///
/// Threading: ``start()``, ``wait()`` and ``interrupt()`` may be called from any thread.
/// `@unchecked Sendable`: mutable state is in `state`, guarded by its mutex.
public final class BuildRun: @unchecked Sendable {
    private let plan: BuildPlan
    private let queues: ResourceQueues
    private let options: RunOptions
    private let observer: any RunObserver
    /// For the trivial bookkeeping jobs of `each:` tasks (gates, batch barriers, done markers).
    private let control = JobQueue(name: "control", maxConcurrentJobCount: 64)
    /// For the up-to-date checks: hashing inputs is I/O, not a task's resource.
    private let checks = JobQueue(name: "checks")
    /// For the jobs that end a unit. Never cancelled: each must wait for its real job, so a run
    /// can't end (and kiln exit) while a command is still being stopped.
    private let unitEnds = JobQueue(name: "unit ends", maxConcurrentJobCount: 64)
    private let clockStart = MonotonicClock.nanoseconds()
    /// The host's environment, read once: what every job starts from.
    private let baseEnvironment = System.environment
    /// The tasks that wait to be called: checked against the files as they are when called, not
    /// the snapshot taken when the run started (the commands before the call may change them).
    private let calledTasks: Set<String>
    /// The clean-up tasks (``CallGating/cleanups``) by name: their plan positions. The bodies of
    /// tasks with deferred calls.
    private let cleanupPositions: [String: Int]
    private let deferralBodyPositions: Set<Int>

    /// What dependents created later need to know of a task.
    private enum TaskProgress {
        /// Its jobs exist; dependents wait for this job.
        case live(Job)
        /// It finished successfully: nothing to wait for.
        case succeeded
        /// It failed or didn't run: dependents are cancelled because of this job.
        case failed(Job)

        /// Whether it finished successfully.
        var hasSucceeded: Bool {
            if case .succeeded = self { return true }
            return false
        }
    }

    private struct State {
        var nextJobID = 0
        var pending = 0
        /// The next task of the plan to create, and how many created tasks are still live.
        var nextTask = 0
        var liveTasks = 0
        var creating = false
        /// Per task, by its position in the plan.
        var progress: [TaskProgress?] = []
        var summary = RunSummary()
        var stopping = false
        var liveEachJobs = 0
        var creatingDone = false
        var createAgain = false
        /// Verdicts of checks made ahead, in parallel, by plan position.
        var prechecked: [Int: IncrementalState.Check] = [:]
        /// Jobs not yet finished, by id: cancelled when the run stops.
        var live: [Int: Job] = [:]
        /// The gates of the tasks that wait to be called (``CallGating``), by plan position; and
        /// per gate, once decided, nothing more, else how many of its triggers are still to say.
        var gates: [Int: CallGateJob] = [:]
        var decidedGates = Set<Int>()
        var openTriggers: [Int: Int] = [:]
        /// The jobs of the bodies of tasks with deferred calls, by plan position: what their
        /// commands reached; the jobs of clean-up tasks, which a failure elsewhere doesn't stop.
        var bodyJobs: [Int: Job] = [:]
        /// The gates one of whose triggers said no because it was skipped (``GateVote/skip``),
        /// and the tasks skipped with their callers, by name: their jobs are up to date.
        var skipVotes = Set<Int>()
        var skipped = Set<String>()
        /// The verdicts of the guards (``TaskOptions/guardedWork``) reached so far, by name;
        /// and those that ran and succeeded, waiting for their task's last piece to record them.
        var guardVerdicts: [String: RunReason] = [:]
        var pendingGuards: [String: PendingGuard] = [:]
        /// (Kept, so that an identifier can't come back as another job's.)
        var spared: [ObjectIdentifier: Job] = [:]
    }
    private let state = HostMutex(State())

    /// A guard that ran and succeeded: what recording it needs, once its task's last piece has.
    private struct PendingGuard {
        var key: JobKey
        var check: IncrementalState.Check
        var request: JobRequest
        var definition: TaskDefinition
    }

    /// What one trigger of a gate says (``CallGating``).
    private enum GateVote {
        /// Call the task.
        case open
        /// The caller failed or didn't run: the task doesn't run.
        case no
        /// The caller's commands didn't reach the call, or the caller was up to date: the
        /// task isn't needed. When every trigger has said no and one of them said this, the
        /// task is skipped — its jobs are up to date — rather than cancelled.
        case skip
    }
    private let allDone = CountingSemaphore()
    /// How many tasks' jobs may exist at once (``RunOptions/liveTaskWindow``).
    private let liveTaskWindow: Int
    /// How many plain tasks `precheckSettledTasks` checks ahead of the creation cursor at once:
    /// 64, or four a CPU slot when there are more than 16. A verdict waits in `prechecked` until
    /// its task's job is created, holding what it was made of (inputs, watched paths, the
    /// prepared task). With 1,024 checked ahead, a 10k-task full build held verdicts of tasks
    /// about to run anyway, about 1.3 MB of its peak RSS (29.8 → 28.5 MB at 64).
    private let precheckBatch: Int

    /// Prepares a run.
    ///
    /// - Parameters:
    ///   - plan: What to run.
    ///   - queues: The resource queues.
    ///   - options: Keep-going, batch sizes.
    ///   - observer: Receives the run's events.
    public init(plan: BuildPlan, queues: ResourceQueues, options: RunOptions, observer: any RunObserver) {
        self.plan = plan
        self.queues = queues
        self.options = options
        liveTaskWindow =
            options.liveTaskWindow
            ?? RunOptions.defaultLiveTaskWindow(cpuWidth: queues.width(of: "cpu"), remote: options.remote != nil)
        precheckBatch = max(64, 4 * queues.width(of: "cpu"))
        self.observer = observer
        calledTasks =
            plan.gating.map { gating in
                Set(plan.tasks.indices.filter { gating.isGated[$0] }.map { plan.tasks[$0].definition.name })
            } ?? []
        cleanupPositions = Dictionary(
            uniqueKeysWithValues: (plan.gating?.cleanups ?? []).map { (plan.tasks[$0].definition.name, $0) }
        )
        deferralBodyPositions = Set((plan.gating?.deferralPieces ?? [:]).values.flatMap { $0 })
    }

    /// Seconds since the run was created.
    public var now: Double { Double(MonotonicClock.nanoseconds() - clockStart) / 1e9 }

    // MARK: Running

    /// Creates the jobs of the first tasks and adds them to their queues; the rest are created as
    /// those finish.
    public func start() {
        pendingAdd(1)  // held until every task has been created, so the run can't end early
        if !options.upToDateBeforehand.isEmpty {
            let settled = state.withLock { state -> [JobInfo] in
                let first = state.nextJobID
                state.nextJobID += options.upToDateBeforehand.count
                state.summary.upToDate += options.upToDateBeforehand.count
                return options.upToDateBeforehand.enumerated().map { offset, name in
                    JobInfo(id: first + offset, key: JobKey(task: name), summary: "", resources: [])
                }
            }
            observer.jobsUpToDate(settled, planned: true, at: now)
        }
        if let gating = plan.gating {
            var gates: [Int: CallGateJob] = [:]
            for position in plan.tasks.indices where gating.isGated[position] {
                gates[position] = CallGateJob(name: "\(plan.tasks[position].definition.name) (called)")
            }
            state.withLock { $0.gates = gates }
            for (_, gate) in gates { add(gate, to: control) }
        }
        createTasks()
    }

    /// Creates tasks in plan order while fewer than `liveTaskWindow` are live. One thread holds
    /// the creator's role at a time; a call that finds it taken asks the holder to look again.
    private func createTasks() {
        let claimed = state.withLock { state -> Bool in
            if state.creating {
                state.createAgain = true
                return false
            }
            state.creating = true
            return true
        }
        guard claimed else { return }
        while true {
            precheckSettledTasks()
            settlePrecheckedUpToDate()
            let next = state.withLock { state -> (Int, [TaskProgress])? in
                state.createAgain = false
                guard state.nextTask < plan.tasks.count, state.liveTasks < liveTaskWindow else { return nil }
                let position = state.nextTask
                state.nextTask += 1
                // A task waiting to be called doesn't hold a place in the window: its caller may
                // come later in the plan.
                if !isGated(position) {
                    state.liveTasks += 1
                    state.summary.peakLiveTasks = max(state.summary.peakLiveTasks, state.liveTasks)
                }
                if state.progress.isEmpty { state.progress = Array(repeating: nil, count: plan.tasks.count) }
                // A call with a shell test: the step waits for the call's own job instead of the
                // called task (see triggerCalls).
                let called =
                    plan.tasks[position].definition.callTest == nil ? [] : plan.gating?.calls[position] ?? []
                var dependencies = plan.dependencyPositions[position].compactMap {
                    called.contains($0) ? nil : state.progress[$0]
                }
                if let gate = state.gates[position] { dependencies.append(.live(gate)) }
                return (position, dependencies)
            }
            if let (position, waitsFor) = next {
                var dependencies = waitsFor
                let task = plan.tasks[position]
                if let gating = plan.gating, !gating.calls[position].isEmpty, gating.deferralPieces[position] == nil,
                    let call = triggerCalls(of: position, gating: gating)
                {
                    dependencies.append(.live(call))
                }
                let doneJob =
                    task.definition.each == .sources
                    ? startEachTask(task, position: position, after: dependencies)
                    : startPlainTask(task, position: position, after: dependencies)
                state.withLock { state in
                    if let doneJob {
                        // The task may already have finished (and recorded its outcome) meanwhile.
                        if state.progress[position] == nil { state.progress[position] = .live(doneJob) }
                    } else {
                        // Up to date, settled without a job.
                        state.progress[position] = .succeeded
                        if !isGated(position) { state.liveTasks -= 1 }
                    }
                }
                continue
            }
            let (again, allCreated) = state.withLock { state -> (Bool, Bool) in
                if state.createAgain {
                    state.createAgain = false
                    return (true, false)
                }
                state.creating = false
                let allCreated = state.nextTask == plan.tasks.count && !state.creatingDone
                if allCreated { state.creatingDone = true }
                return (false, allCreated)
            }
            if allCreated { pendingAdd(-1) }
            if !again { return }
        }
    }

    /// Settles, under one lock, the tasks at the creation cursor that a precheck found up to date
    /// (already published): no job, one report for all of them.
    private func settlePrecheckedUpToDate() {
        let settled = state.withLock { state -> [JobInfo] in
            var infos: [JobInfo] = []
            while state.nextTask < plan.tasks.count, let verdict = state.prechecked[state.nextTask],
                verdict.reason == .upToDate
            {
                let position = state.nextTask
                state.prechecked[position] = nil
                state.progress[position] = .succeeded
                state.nextTask += 1
                state.summary.upToDate += 1
                let name = plan.tasks[position].definition.name
                infos.append(JobInfo(id: state.nextJobID, key: JobKey(task: name), summary: "", resources: []))
                state.nextJobID += 1
            }
            return infos
        }
        if !settled.isEmpty { observer.jobsUpToDate(settled, planned: true, at: now) }
    }

    /// Checks, on every core at once, the next plain tasks whose dependencies have all succeeded
    /// and keeps the verdicts for `startPlainTask`. A no-op run is thousands of independent checks
    /// (mostly `stat` calls); doing them one by one would leave the other cores idle.
    private func precheckSettledTasks() {
        guard let incremental = options.incremental else { return }
        let batch = state.withLock { state -> [Int] in
            if state.progress.isEmpty { state.progress = Array(repeating: nil, count: plan.tasks.count) }
            var positions: [Int] = []
            var position = state.nextTask
            while position < plan.tasks.count, positions.count < precheckBatch, state.prechecked[position] == nil {
                let task = plan.tasks[position]
                // A task waiting to be called is checked only once called: the step before the
                // call may change its inputs.
                guard task.definition.each == .none, !task.definition.isGroup, !isGated(position) else { break }
                let settled = plan.dependencyPositions[position].allSatisfy { state.progress[$0]?.hasSucceeded == true }
                guard settled else { break }
                positions.append(position)
                position += 1
            }
            return positions
        }
        guard batch.count > 1 else { return }
        let verdicts = LockedValue<[Int: IncrementalState.Check]>([:])
        parallelLoop(iterations: batch.count) { index in
            let position = batch[index]
            let task = plan.tasks[position]
            let key = JobKey(task: task.definition.name)
            let verdict = verdict(
                of: task,
                key: key,
                request: task.definition.jobRequest(source: nil),
                incremental: incremental
            )
            // Published now, in parallel: dependents are checked only once this task is settled.
            if verdict.reason == .upToDate { incremental.upToDate(key: key, check: verdict) }
            verdicts.withLock { $0[position] = verdict }
        }
        let results = verdicts.value
        state.withLock { state in
            for (position, verdict) in results { state.prechecked[position] = verdict }
            state.summary.peakPrechecked = max(state.summary.peakPrechecked, state.prechecked.count)
        }
    }

    /// Called once per task when its last job is done.
    private func taskFinished(_ position: Int, doneJob: Job) {
        let failed = doneJob.isCancelled || doneJob.error != nil
        state.withLock { state in
            if !isGated(position) { state.liveTasks -= 1 }
            state.progress[position] = failed ? .failed(doneJob) : .succeeded
        }
        createTasks()
    }

    // MARK: Calls

    /// Whether the task at `position` waits to be called.
    private func isGated(_ position: Int) -> Bool { plan.gating?.isGated[position] ?? false }

    /// The task at `position` calls others: once its other dependencies (the step before the
    /// call) have succeeded — and its own gate has opened, when it is itself called — the called
    /// tasks' gates open; if one failed or didn't run, this caller says no to them.
    ///
    /// A call with a shell test (``TaskOptions/callTest``) runs it first, and returns a job for
    /// the step to wait for instead of the called task: it finishes at once when the test
    /// failed, else when the called task has. (Waiting for the task itself, a step whose call
    /// wasn't made would wait for a later caller to decide the task's gate: for itself, if that
    /// caller comes after it.)
    private func triggerCalls(of position: Int, gating: CallGating) -> Job? {
        let before = state.withLock { state in
            gating.staticDependencies[position].compactMap { state.progress[$0] }
                + (state.gates[position].map { [.live($0)] } ?? [])
        }
        let called = gating.calls[position]
        let test = plan.tasks[position].definition.callTest
        // A shell test runs on a job of its own, never on the thread that creates tasks.
        if test == nil, before.allSatisfy(\.hasSucceeded) {
            decideGates(called, callsSkipped(at: position) ? .skip : .open)
            return nil
        }
        let call = test.map { _ in BlockJob {} }
        call?.name = "\(plan.tasks[position].definition.name) (call)"
        call?.requiresSuccessfulDependencies = true
        let testFailed = LockedValue(false)
        let trigger = BlockJob { [self] in
            guard let test, !callsSkipped(at: position) else { return }
            if !callTestHolds(test, at: position) { testFailed.withLock { $0 = true } }
        }
        trigger.name = "\(plan.tasks[position].definition.name) (calls)"
        trigger.requiresSuccessfulDependencies = true
        pendingAdd(1)
        trigger.completionBlock = { [self] in
            let succeeded = !trigger.isCancelled && trigger.error == nil
            let skips = testFailed.value || callsSkipped(at: position)
            decideGates(called, !succeeded ? .no : skips ? .skip : .open)
            if let call {
                if !succeeded {
                    call.cancel()
                } else if !testFailed.value {
                    wire(call, after: state.withLock { state in called.compactMap { state.progress[$0] } })
                }
                add(call, to: control)
            }
            pendingAdd(-1)
        }
        wire(trigger, after: before)
        add(trigger, to: control)
        return call
    }

    /// Whether the shell test of the call that starts the step at `position` (``TaskOptions/callTest``)
    /// succeeds, run now in the task's directory — made first when it isn't there yet, as go-task
    /// makes it before its commands (not in a dry run: there the test fails) — and environment,
    /// its output discarded.
    private func callTestHolds(_ test: Located<String>, at position: Int) -> Bool {
        let request = plan.tasks[position].definition.jobRequest(source: nil)
        let dryRun = options.incremental?.isDryRun ?? false
        if !Files.isDirectory(request.directory) {
            guard !dryRun, CommandJob.makeDirectories(request.directory) == nil else { return false }
        }
        let environment = baseEnvironment.merging(request.environment) { _, task in task }
        if case .failure = DynamicVariables.run(test.value, directory: request.directory, environment: environment) {
            return false
        }
        return true
    }

    /// Whether the step at `position` skips the calls it makes: it is itself skipped with its
    /// caller, or it follows a guard found up to date (the task runs none of its calls).
    private func callsSkipped(at position: Int) -> Bool {
        let definition = plan.tasks[position].definition
        return state.withLock { state in
            state.skipped.contains(definition.name)
                || definition.guardedBy.map { state.guardVerdicts[$0] == .upToDate } == true
        }
    }

    /// Opens the gates of `positions` and of the waiting tasks they depend on — or counts a no
    /// for each, closing for good a gate all of whose triggers said no (its task then doesn't
    /// run, nor what it alone depends on). A gate all of whose triggers said no, one of them
    /// ``GateVote/skip``, opens on a skipped task: its jobs find it up to date.
    private func decideGates(_ positions: [Int], _ vote: GateVote) {
        guard let gating = plan.gating else { return }
        let (opened, closed) = state.withLock { state -> ([CallGateJob], [CallGateJob]) in
            var opened: [CallGateJob] = []
            var closed: [CallGateJob] = []
            var pending = positions.map { ($0, vote) }
            while let (position, vote) = pending.popLast() {
                guard gating.isGated[position], !state.decidedGates.contains(position) else { continue }
                if vote == .skip { state.skipVotes.insert(position) }
                if vote != .open {
                    let remaining = (state.openTriggers[position] ?? gating.triggers[position]) - 1
                    state.openTriggers[position] = remaining
                    guard remaining <= 0 else { continue }
                }
                state.decidedGates.insert(position)
                let decided = vote == .open ? GateVote.open : state.skipVotes.contains(position) ? .skip : .no
                if decided == .skip { state.skipped.insert(plan.tasks[position].definition.name) }
                if let gate = state.gates[position] {
                    if decided == .no { closed.append(gate) } else { opened.append(gate) }
                }
                pending += gating.gatedDependencies(of: position).map { ($0, decided) }
            }
            return (opened, closed)
        }
        for gate in opened { gate.open() }
        for gate in closed { gate.cancel() }
    }

    /// Makes `job` wait for what dependencies still run, and cancels it if one already failed.
    private func wire(_ job: Job, after dependencies: [TaskProgress]) {
        for dependency in dependencies {
            switch dependency {
            case .live(let dependency): job.addDependency(dependency)
            case .failed(let dependency): job.addDependency(dependency)  // finished: cancels `job` at once
            case .succeeded: break
            }
        }
    }

    /// The labels of the jobs that haven't finished yet (empty once the run is over).
    ///
    /// Threading: any thread.
    public var unfinishedJobs: [String] {
        state.withLock { state in state.live.values.compactMap { $0.isFinished ? nil : $0.name } }.sorted()
    }

    /// What the run is still waiting for, for a test's watchdog: the count of pending work, the
    /// tasks created and live, the jobs not finished (where each stands), and each queue's jobs.
    var pendingDescription: String {
        let (head, jobs) = state.withLock { state in
            (
                "pending \(state.pending), created \(state.nextTask) of \(plan.tasks.count) (creating \(state.creating), done \(state.creatingDone)), "
                    + "live tasks \(state.liveTasks)",
                Array(state.live.values)
            )
        }
        // Read outside the run's lock: a job's and a queue's state take their own.
        func standing(_ job: Job) -> String {
            "\(job.name ?? "?") finished=\(job.isFinished) executing=\(job.isExecuting) cancelled=\(job.isCancelled) "
                + "ready=\(job.isReady) dependencies=\(job.dependencies.map { "\($0.name ?? "?")\($0.isFinished ? "✓" : "…")" })"
        }
        let queueStates = ([checks, control, unitEnds] + queues.all.map(\.queue)).map { queue in
            "\(queue.name): \(queue.jobCount) jobs, \(queue.runningJobCount) running, \(queue.readyJobCount) ready"
                + (queue.isSuspended ? ", suspended" : "")
                + " \(queue.jobs.map { "\($0.name ?? "?")\($0.isExecuting ? "▶" : "")" })"
        }
        return head + ", live jobs \(jobs.map(standing)); queues: " + queueStates.joined(separator: "; ")
    }

    /// Blocks until every job has finished; returns the summary.
    public func wait() -> RunSummary {
        allDone.wait()
        allDone.signal()
        return state.withLock { $0.summary }
    }

    /// Stops the run as for Ctrl-C: nothing new starts, running commands are terminated.
    public func interrupt() {
        let jobs = state.withLock { state -> [Job] in
            state.stopping = true
            state.summary.interrupted = true
            return Array(state.live.values)
        }
        withQueuesSuspended {
            for job in jobs { job.cancel() }
            checks.cancelAllJobs()
            for (_, queue) in queues.all { queue.cancelAllJobs() }
            control.cancelAllJobs()
        }
    }

    /// Stops starting new jobs after a failure (without `--keep-going`); running jobs finish.
    private func stopScheduling() {
        let (jobs, spared) = state.withLock { state -> ([Job], [ObjectIdentifier: Job]) in
            guard !state.stopping else { return ([], [:]) }
            state.stopping = true
            return (Array(state.live.values), state.spared)
        }
        withQueuesSuspended {
            // The clean-up tasks (deferred calls) run after a failure: that is what they are for.
            for job in jobs where !job.isExecuting && spared[ObjectIdentifier(job)] == nil { job.cancel() }
            for (_, queue) in queues.all {
                for job in queue.jobs where !job.isExecuting && spared[ObjectIdentifier(job)] == nil { job.cancel() }
            }
        }
    }

    /// Runs `cancelling` while the queues start nothing (NSOperationQueue's suspend, cancel,
    /// resume): jobs are cancelled one by one, and one whose last dependency finished meanwhile
    /// would otherwise start after the stop, before the loop reached it.
    private func withQueuesSuspended(_ cancelling: () -> Void) {
        let all = [checks, control] + queues.all.map(\.queue)
        let suspended = all.filter { !$0.isSuspended }
        for queue in suspended { queue.isSuspended = true }
        cancelling()
        for queue in suspended { queue.isSuspended = false }
    }

    private var isStopping: Bool { state.withLock { $0.stopping } }

    private func pendingAdd(_ delta: Int) {
        let finished = state.withLock { state -> Bool in
            state.pending += delta
            return state.pending == 0
        }
        if finished { allDone.signal() }
    }

    // MARK: Plain tasks

    /// Starts a plain task's job; `nil` when the task was found up to date and needs none.
    private func startPlainTask(_ task: BuildPlan.Task, position: Int, after dependencies: [TaskProgress]) -> Job? {
        if let body = plan.gating?.deferralPieces[position]?.last {
            return startDeferralEnd(task, position: position, body: body, after: dependencies)
        }
        if task.definition.isGroup { return startGroupTask(task, position: position, after: dependencies) }
        let verdict = inlineCheck(task, source: nil, after: dependencies, position: position)
        if verdict?.reason == .upToDate { return nil }
        let request = task.definition.jobRequest(source: nil)
        let (entry, entryQueue, realJob, target) = makeUnit(
            task,
            position: position,
            source: nil,
            request: request,
            verdict: verdict
        ) {
            [self] _, job in
            taskFinished(position, doneJob: job)
        }
        if deferralBodyPositions.contains(position) { state.withLock { $0.bodyJobs[position] = realJob } }
        // A deferred command written before a call: `{{.EXIT_CODE}}` is its task's failed command's.
        if task.definition.options.isDeferredCommand, let end = plan.gating?.deferralEnds[position],
            let job = realJob as? CommandJob
        {
            job.inheritedExitCode = { [self] in failedExitCode(end: end) }
        }
        wire(entry, after: dependencies)
        // Created after a failure stopped the run: it doesn't run, but it is reported. (A
        // clean-up task runs all the same.)
        if isStopping, cleanupPositions.isEmpty || cleanupPositions[task.definition.name] == nil {
            realJob.cancel()
            entry.cancel()
        }
        add(entry, to: entryQueue)
        return target
    }

    /// The end of a task with deferred calls (``TaskOptions/deferralBody``): when the body has
    /// ended, however it ended, the calls whose places its commands reached are made, the last
    /// reached first, one after another; the others are skipped. The end then finishes as the
    /// body did: what depends on the task waits for its clean-up, and fails if its body failed.
    private func startDeferralEnd(
        _ task: BuildPlan.Task,
        position: Int,
        body: Int,
        after dependencies: [TaskProgress]
    ) -> Job {
        let name = task.definition.name
        let called = plan.gating?.calls[position] ?? []
        let (bodyProgress, calledProgress) = state.withLock { state in
            (state.progress[body], called.map { state.progress[$0] })
        }
        // Last written first; each once the one before has ended (or been skipped).
        var previous = bodyProgress
        for (number, instance) in called.enumerated().reversed() {
            let trigger = BlockJob {}
            trigger.name = "\(name) (deferred call \(number + 1))"
            trigger.requiresSuccessfulDependencies = false
            pendingAdd(1)
            trigger.completionBlock = { [self] in
                let reached = deferredCallReached(number, end: position, body: body, progress: bodyProgress)
                decideGates([instance], reached ? .open : .skip)
                pendingAdd(-1)
            }
            wire(trigger, after: previous.map { [$0] } ?? [])
            add(trigger, to: control)
            previous = calledProgress[number]
        }
        let end = BlockJob { [self] in
            if !Self.hasSucceeded(bodyProgress) { throw UnitFailure(label: plan.tasks[body].definition.name) }
        }
        end.name = name
        end.requiresSuccessfulDependencies = false
        pendingAdd(1)
        end.completionBlock = { [self] in
            if !end.isCancelled, end.error == nil {
                options.incremental?.publishGroup(name, dependencies: [plan.tasks[body].definition.name])
            }
            taskFinished(position, doneJob: end)
            pendingAdd(-1)
        }
        // Wired only now: a dependency that already finished readies the job at once.
        wire(end, after: dependencies + (previous.map { [$0] } ?? []))
        add(end, to: control)
        return end
    }

    /// Whether a task's progress, as it was when its dependent was made, came to success: its
    /// job has finished without failing or being cancelled.
    private static func hasSucceeded(_ progress: TaskProgress?) -> Bool {
        switch progress {
        case .succeeded?: true
        case .live(let job)?: job.isFinished && !job.isCancelled && job.error == nil
        case .failed?, nil: false
        }
    }

    /// Whether the commands of the task ending at `end` reached the place of its deferred call
    /// `number`, in any of its pieces (steps between calls, and the body): not when they were up
    /// to date or didn't start; when the body succeeded, for jobs that aren't command jobs (a
    /// dry run's).
    private func deferredCallReached(_ number: Int, end: Int, body: Int, progress: TaskProgress?) -> Bool {
        let pieces = plan.gating?.deferralPieces[end] ?? [body]
        let jobs = state.withLock { state in pieces.compactMap { state.bodyJobs[$0] } }
        guard !jobs.isEmpty else { return false }
        if jobs.allSatisfy({ $0 is CommandJob }) {
            return jobs.contains { ($0 as? CommandJob)?.reachedDeferredCalls.contains(number) == true }
        }
        return Self.hasSucceeded(progress)
    }

    /// The exit status of the command that failed the task ending at `end`, in any of its pieces.
    private func failedExitCode(end: Int) -> Int32? {
        let pieces = plan.gating?.deferralPieces[end] ?? []
        let jobs = state.withLock { state in pieces.compactMap { state.bodyJobs[$0] } }
        return jobs.lazy.compactMap { ($0 as? CommandJob)?.failedExitCode }.first
    }

    /// A group task makes no job: settled at once when its dependencies are, otherwise a control
    /// job waits for them. Either way it publishes its dependencies' signatures as its own.
    private func startGroupTask(_ task: BuildPlan.Task, position: Int, after dependencies: [TaskProgress]) -> Job? {
        let name = task.definition.name
        let names = task.definition.dependencies.map(\.value)
        let settled = dependencies.allSatisfy(\.hasSucceeded)
        if settled {
            options.incremental?.publishGroup(name, dependencies: names)
            return nil
        }
        let gather = BlockJob {}
        gather.name = name
        gather.requiresSuccessfulDependencies = true
        pendingAdd(1)
        gather.completionBlock = { [self] in
            if !gather.isCancelled { options.incremental?.publishGroup(name, dependencies: names) }
            taskFinished(position, doneJob: gather)
            pendingAdd(-1)
        }
        // Wired only now: a dependency that already failed finishes the job at once, and its
        // completion block must be in place by then.
        wire(gather, after: dependencies)
        add(gather, to: control)
        return gather
    }

    // MARK: `each:` tasks

    private func startEachTask(_ task: BuildPlan.Task, position: Int, after dependencies: [TaskProgress]) -> Job {
        let name = task.definition.name
        let done = EachTaskDoneJob(name: "\(task.definition.name) (all files)")
        let gate = BlockJob {}
        gate.name = "\(task.definition.name) (start)"
        gate.requiresSuccessfulDependencies = true
        pendingAdd(2)
        let sourcesOfTask = LockedValue<[String]>([])
        done.completionBlock = { [self] in
            if !done.isCancelled, done.error == nil {
                options.incremental?.publishEachTask(name, sources: sourcesOfTask.value)
            }
            taskFinished(position, doneJob: done)
            pendingAdd(-1)
        }
        gate.completionBlock = { [self] in
            defer { pendingAdd(-1) }
            if gate.isCancelled || isStopping {
                done.cancel()
                return
            }
            // Sources are listed only now, after the dependencies that may have generated them ran.
            var listed: [VisitedDirectory] = []
            let sources = plan.sourceFiles(of: task, visited: &listed)
            options.incremental?.listed(task: name, sources: sources, directories: listed)
            if let clash = task.definition.outputClash(among: sources) {
                // Two of its jobs would write one file: none of them runs.
                let id = state.withLock { state -> Int in
                    defer {
                        state.nextJobID += 1
                        state.summary.failed += 1
                    }
                    return state.nextJobID
                }
                observer.jobsPlanned(1)
                observer.jobFinished(
                    JobInfo(id: id, key: JobKey(task: name), summary: "", resources: []),
                    outcome: .failed(clash),
                    output: TaskOutput(),
                    at: now
                )
                if !options.keepGoing { stopScheduling() }
                done.complete(failures: 1)
                return
            }
            observer.jobsPlanned(sources.count)
            sourcesOfTask.withLock { $0 = sources }
            let batches = EachTaskBatches(
                task: task,
                position: position,
                sources: sources,
                batchSize: task.definition.batchSize ?? options.batchSize
            )
            for _ in 0..<options.batchesInFlight { launchBatch(batches, done: done) }
            if sources.isEmpty { done.complete(failures: 0) }
        }
        // Wired after the completion blocks are set: a dependency that already failed finishes
        // the gate at once.
        wire(gate, after: dependencies)
        // One at a time: the gate may have finished already, and must not keep `done` out.
        add(done, to: control)
        add(gate, to: control)
        return done
    }

    /// Creates the next batch of an `each:` task; its barrier's completion block creates the one after.
    private func launchBatch(_ batches: EachTaskBatches, done: EachTaskDoneJob) {
        guard let range = batches.takeNextRange() else { return }
        if isStopping {
            batches.skip(range)
            if batches.allFinished { done.cancel() }
            return
        }
        let barrier = BlockJob {}
        barrier.name = "\(batches.task.definition.name) (batch \(range.lowerBound / batches.batchSize + 1))"
        var entries: [(Job, JobQueue)] = []
        for source in batches.sources[range] {
            // The gate ran, so the task's dependencies all succeeded: check each file now.
            let verdict = inlineCheck(batches.task, source: source, after: [])
            if verdict?.reason == .upToDate { continue }
            let request = batches.task.definition.jobRequest(source: source)
            let (entry, queue, _, target) = makeUnit(
                batches.task,
                position: batches.position,
                source: source,
                request: request,
                verdict: verdict
            ) {
                [self] failed, _ in
                if failed { batches.recordFailure() }
                state.withLock { $0.liveEachJobs -= 1 }
            }
            barrier.addDependency(target)
            entries.append((entry, queue))
        }
        state.withLock { state in
            state.liveEachJobs += entries.count
            state.summary.peakLiveEachJobs = max(state.summary.peakLiveEachJobs, state.liveEachJobs)
        }
        pendingAdd(1)
        barrier.completionBlock = { [self] in
            batches.finish(range)
            if batches.allFinished {
                if isStopping { done.cancel() } else { done.complete(failures: batches.failures) }
            } else {
                launchBatch(batches, done: done)
            }
            pendingAdd(-1)
        }
        try? control.addJob(barrier)
        for (entry, queue) in entries { add(entry, to: queue) }
    }

    // MARK: Jobs

    /// Makes a job and the slot chain that acquires its resources. Returns the first job to add
    /// (and its queue), the real job, and the job dependents must wait for.
    ///
    /// With incremental state, the unit is check → chain → real job → done: the check (after the
    /// dependencies) computes the job's signature and either adds the chain or, when the job is up to
    /// date, cancels the real job before it ever runs; the done job records what a run left and
    /// succeeds for an up-to-date job, so dependents go on.
    private func makeUnit(
        _ task: BuildPlan.Task,
        position: Int,
        source: String?,
        request: JobRequest,
        verdict precomputed: IncrementalState.Check? = nil,
        onFinish: @escaping @Sendable (_ failed: Bool, _ job: Job) -> Void
    ) -> (entry: Job, queue: JobQueue, realJob: Job, target: Job) {
        // Past a MiB, a job's output goes to an anonymous file under .kiln/, not into memory.
        let output = TaskOutput(spillDirectory: KilnDirectory(root: plan.taskfile.root).path)
        // The host's environment plus the task's (shared storage when the task adds nothing); the
        // task's values win, and they are what its signature hashes. (go-task lets the host's win;
        // doing so needs the snapshot to watch those variables too: issue 13.)
        let environment =
            request.environment.isEmpty
            ? baseEnvironment : baseEnvironment.merging(request.environment) { _, task in task }
        let context = TaskContext(output: output, projectRoot: plan.taskfile.root, environment: environment)
        let incremental = options.incremental
        // A called task may be skipped with its caller: it is checked even without incremental state.
        let mayBeSkipped = calledTasks.contains(task.definition.name)
        // A dry run schedules exactly as a run does, with jobs that run nothing (ninja's dry run
        // is its builder with a command runner that runs nothing, too).
        let dryRun = incremental?.isDryRun ?? false
        // Prepared once for the job, or by its check (the plan keeps no prepared task: see
        // ``BuildPlan/Task/prepared()``).
        let prepared =
            precomputed?.prepared.map { Result.success($0) }
            ?? Result { () throws(TaskConfigurationError) in try task.prepared() }
        let realJob: Job
        do {
            // A template of the task's own that failed (its `generates:`) fails the job, naming why.
            if let failure = request.renderFailure { throw failure }
            let kind = try prepared.get()
            if dryRun {
                // Made too, and never run: a command whose template fails when rendered
                // (`{{.UNSET | lower}}`) fails the dry run as it would fail the run. Other
                // refusals may rest on files the tasks before it would have made: not those.
                do {
                    _ = try kind.makeJob(request, context: context)
                } catch let error as TemplateRenderError {
                    throw error
                } catch {}
                realJob = BlockJob {}
            } else {
                realJob = try kind.makeJob(request, context: context)
            }
        } catch {
            realJob = FailingJob(error)
        }
        let kind = try? prepared.get()
        let id = state.withLock { state -> Int in
            defer { state.nextJobID += 1 }
            return state.nextJobID
        }
        let outputs = request.outputs.map { $0.hasPrefix("/") ? $0 : request.directory + "/" + $0 }
        // The Taskfile's claims, or what the task's kind asks for (a download: its host's queue).
        var claims = request.resources.isEmpty ? kind?.defaultResources(for: request) ?? [] : request.resources
        // `remote`: the job runs on the remote executor when there is one (on its own queue, as
        // wide as the remote's capacity); here, it holds what it would hold without the claim.
        let claimsRemote = claims.contains(RemoteSettings.resource)
        claims.removeAll { $0 == RemoteSettings.resource }
        // One job at a time has the terminal (a resource of width 1 no Taskfile can name).
        let interactive = task.definition.options.isInteractive
        if interactive { claims.append(ResourceQueues.terminal) }
        let resources = queues.resources(for: claims, outputs: outputs, directory: request.directory)
        let key = JobKey(task: task.definition.name, source: source)
        let secrets = plan.taskfile.secrets
        var described = JobInfo(
            id: id,
            key: key,
            summary: secrets.masking(kind?.summary(for: request) ?? task.definition.name),
            resources: resources
        )
        described.isInteractive = interactive && !dryRun
        // A task's own `label:` names its jobs for people; a step or an instance keeps its name.
        if task.definition.options.label != nil, task.definition.partOf == nil { described.shownAs = request.label }
        if var group = plan.taskfile.outputGroup {
            // Rendered with the job's variables (as written when that fails: it is only shown).
            group.begin = group.begin.map { secrets.masking(request.display($0)) }
            group.end = group.end.map { secrets.masking(request.display($0)) }
            described.outputGroup = group
        }
        let info = described
        realJob.name = realJob.name ?? request.label
        realJob.requiresSuccessfulDependencies = true

        // The chain: a slot job per resource but the last, which the real job's own queue provides.
        var next = realJob
        var nextQueue = queues.queue(named: resources.last ?? "cpu")
        let realQueue = nextQueue
        var slots: [SlotJob] = []
        for resource in resources.dropLast().reversed() {
            let slot = SlotJob(resource: resource, label: request.label, next: next, in: nextQueue, realJob: realJob)
            slots.append(slot)
            next = slot
            nextQueue = queues.queue(named: resource)
        }

        let chainSlots = slots
        // A clean-up task (a deferred call): a failure elsewhere doesn't stop its jobs.
        let cleanup = cleanupPositions.isEmpty ? nil : cleanupPositions[task.definition.name]
        // The literal outputs the job declares (`generates:` paths without wildcards): one it
        // didn't produce fails it, as Bazel does, so nothing is built on a missing file and
        // nothing records it as up to date. A task decided whole (a guard and the pieces that
        // follow it) may make them in any piece or call: its last piece answers for them.
        let definition = task.definition
        let promised =
            definition.guardedWork.isEmpty && (definition.guardedBy == nil || definition.recordsGuard)
            ? request.outputs.filter(GlobList.isPlainPath).map { Path.join(request.directory, $0) } : []
        let unproduced = LockedValue<[String]>([])
        // Made for a call with `ignore_error: true`: its failure is reported, and its caller goes on.
        let ignoresFailure = task.definition.options.failureIgnored
        // Dependents wait for a job of their own when the unit checks first or checks outputs,
        // or when the job's failure is to be ignored (they must not see it).
        // A remote cache answers the jobs it can before they run, and stores what they leave;
        // never in a dry run, never for a clean-up task (stopping must not cancel its look-up).
        let remote =
            dryRun || cleanup != nil || RemoteRecipe.refusal(of: task) != nil
            ? nil : options.remote.map { RemoteSteps(session: $0, plan: plan, position: position, request: request) }
        // The depfile's path, rendered now: past this point only an up-to-date check still to
        // come and the remote render the job's templates. Without them the unit keeps its request
        // without its variables, a waiting job's largest part (a copy of the Taskfile's variables
        // per job: 0.55 MB of a 256-task window).
        let depfile = task.definition.renderedDepfile(variables: request.variables)
        let request = precomputed == nil || remote != nil ? request : request.keepingNoVariables
        let remoteHit = LockedValue(false)
        let ranAndLeftOutputs = LockedValue(false)
        let executesRemotely =
            remote.map { $0.session.settings.executes && (claimsRemote || $0.session.settings.executesAll) } ?? false
        let remoteRan = LockedValue<RemoteExecution?>(nil)
        // With a build state (not a dry run), a job's success is recorded after it ends (see the
        // completion block below): dependents wait for a job of their own, which waits for that.
        let recordsLater = incremental != nil && !dryRun
        let hasDone =
            (incremental != nil || mayBeSkipped) && precomputed == nil || !promised.isEmpty || ignoresFailure
            || remote != nil || recordsLater
        // Finished once the job is recorded and reported (never queued: started by hand). Without
        // a build state the job is reported before its done job is released: none is needed.
        let recorded = recordsLater ? DeferredWorkJob("\(request.label) (recorded)") { $0() } : nil
        // When the job started running here: its duration weighs its task next time (the
        // critical path first, see BuildPlan.startingLongestPathFirst).
        let startedAt = LockedValue<UInt64?>(nil)
        let observation = realJob.observe(.isExecuting) { [self] change in
            if change.kind == .didChange, change.value {
                startedAt.withLock { $0 = MonotonicClock.nanoseconds() }
                observer.jobStarted(info, at: now)
            }
        }
        // `each:` jobs were counted when their task listed its sources.
        if source == nil { observer.jobsPlanned(1) }
        pendingAdd(1)

        let verdict = LockedValue<IncrementalState.Check?>(precomputed)
        if let precomputed { observer.jobChecked(info, reason: precomputed.reason) }
        // The job dependents wait for (its done job, made below): whether one waits for it alone
        // decides whether its record may wait to share a commit.
        let awaitedAs = LockedValue<Job?>(nil)
        // The job runs remotely when it goes to the executor: a job on the `remote` queue, which on
        // success cancels the real job (reported as it ran there) and on a failure of the server
        // adds the chain: the job runs here (docs/remote.md: the fallback policy).
        @Sendable func executeRemotely(_ entry: Job, _ entryQueue: JobQueue) -> (Job, JobQueue)? {
            guard executesRemotely, let remote, remote.session.executes else { return nil }
            let ran = LockedValue<RemoteExecution?>(nil)
            let execute = DeferredWorkJob("\(request.label) (remote execution)") { [self] finished in
                // A run that is stopping sends nothing more.
                if isStopping { return finished() }
                observer.jobStarted(info, at: now)
                remote.execute(into: output) { execution in
                    ran.withLock { $0 = execution }
                    finished()
                }
            }
            execute.completionBlock = { [self] in
                if let execution = ran.value {
                    remoteRan.withLock { $0 = execution }
                    realJob.cancel()
                } else if isStopping || execute.isCancelled {
                    realJob.cancel()
                } else {
                    add(entry, to: entryQueue)
                }
            }
            return (execute, queues.queue(named: RemoteSettings.resource))
        }
        // Where a job that must run goes: the executor, or its chain here.
        @Sendable func runHere(_ entry: Job, _ entryQueue: JobQueue) {
            if let (execute, queue) = executeRemotely(entry, entryQueue) {
                add(execute, to: queue)
            } else {
                add(entry, to: entryQueue)
            }
        }
        // The job must run: without a remote, its chain is added; with one, a look-up job first,
        // which adds the chain on a miss, and on a hit cancels the job (reported as a remote hit).
        @Sendable func lookUpFirst(_ entry: Job, _ entryQueue: JobQueue) -> (Job, JobQueue)? {
            guard let remote, remote.session.isUp else { return executeRemotely(entry, entryQueue) }
            let found = LockedValue<Bool?>(nil)
            let lookUp = DeferredWorkJob("\(request.label) (remote look-up)") { finished in
                remote.lookUp(into: output) { hit in
                    found.withLock { $0 = hit }
                    finished()
                }
            }
            lookUp.completionBlock = { [self] in
                switch found.value {
                case true?:
                    remoteHit.withLock { $0 = true }
                    realJob.cancel()
                case false? where !isStopping: runHere(entry, entryQueue)
                default: realJob.cancel()
                }
            }
            return (lookUp, queues.queue(named: remote.session.settings.endpoint.queueName))
        }
        // Checked already (its dependencies had settled): no check job, the job runs directly.
        func makeCheck() -> BlockJob {
            let entry = next
            let entryQueue = nextQueue
            let check = BlockJob { [self] in
                let result = self.verdict(
                    of: task,
                    key: key,
                    request: request,
                    incremental: incremental,
                    prepared: try? prepared.get()
                )
                verdict.withLock { $0 = result }
            }
            check.name = "\(request.label) (up-to-date check)"
            check.requiresSuccessfulDependencies = true
            check.completionBlock = { [self] in
                guard !check.isCancelled, check.error == nil, let result = verdict.value else {
                    realJob.cancel()
                    return
                }
                observer.jobChecked(info, reason: result.reason)
                if result.reason == .upToDate || isStopping && cleanup == nil {
                    realJob.cancel()
                } else if let (lookUp, queue) = lookUpFirst(entry, entryQueue) {
                    add(lookUp, to: queue)
                } else {
                    add(entry, to: entryQueue)
                }
            }
            return check
        }
        let check = precomputed != nil || incremental == nil && !mayBeSkipped ? nil : makeCheck()

        realJob.completionBlock = { [self] in
            observation.invalidate()
            // When the job ended: what observers are told, even when its record (and so its
            // report) waits to share a commit, so a trace draws it as it ran.
            let endedAt = now
            var outcome = Self.outcome(of: realJob, secrets: plan.taskfile.secrets)
            if let check {
                if check.isCancelled {
                    outcome = Self.outcome(of: check, secrets: plan.taskfile.secrets)
                } else if verdict.value?.reason == .upToDate {
                    outcome = .upToDate
                }
            }
            if remoteHit.value { outcome = .remoteHit }
            if let ran = remoteRan.value {
                outcome =
                    ran.exitCode != 0
                    ? .failed("exit status \(ran.exitCode), run remotely: \(info.summary)")
                    : ran.cached ? .remoteHit : .succeeded
            }
            if outcome == .succeeded || outcome == .remoteHit, !dryRun {
                let missing = promised.filter { !Files.exists($0) }
                if !missing.isEmpty {
                    unproduced.withLock { $0 = missing }
                    let names = missing.map { "'\(Path.relative($0, to: request.directory))'" }.joined(separator: ", ")
                    outcome = .failed(
                        "it succeeded but didn't produce \(names), which its task declares under 'generates:'; write it, or remove it from 'generates:'"
                    )
                }
            }
            var ignored = false
            if ignoresFailure, case .failed(let reason) = outcome {
                let why = cleanup != nil ? "a deferred call's failure changes nothing" : "the call says ignore_error"
                outcome = .failed(reason + " (ignored: \(why))")
                ignored = true
            }
            let failed = outcome != .succeeded && outcome != .upToDate && outcome != .remoteHit && !ignored
            // Stored by the job, when it ran here; the executor stores what it runs itself.
            if outcome == .succeeded, remoteRan.value == nil { ranAndLeftOutputs.withLock { $0 = true } }
            let reported = outcome
            let ignoredFailure = ignored
            // The job is reported finished, and its dependents may start, once it is recorded. A
            // success's record (its outputs hashed, then committed) is written by this thread
            // when no other write is under way; otherwise it joins the one under way, this runs
            // with it, and this thread goes on without waiting (BuildState.record). Anything else
            // is recorded here and now.
            let settle: @Sendable () -> Void = { [self] in
                state.withLock { state in
                    state.live[id] = nil
                    switch reported {
                    case .succeeded: state.summary.succeeded += 1
                    case .failed where ignoredFailure: state.summary.ignoredFailures += 1
                    case .failed: state.summary.failed += 1
                    case .cancelled: state.summary.cancelled += 1
                    case .upToDate: state.summary.upToDate += 1
                    case .remoteHit: state.summary.remoteHits += 1
                    }
                }
                observer.jobFinished(info, outcome: reported, output: output, at: endedAt)
                if !hasDone { onFinish(failed, realJob) }
                if case .failed = reported, !ignoredFailure, !options.keepGoing { stopScheduling() }
                // Only now may a waiting job take the slots: after the observers heard this job
                // end (a trace never shows more jobs on a queue than its width) and after a
                // failure stopped the run (a job waiting for one of these slots must not start).
                for slot in chainSlots { slot.release() }
                if !hasDone { pendingAdd(-1) }
                try? recorded?.start()
            }
            var settles = true
            if let incremental, let result = verdict.value {
                switch outcome {
                case .succeeded where dryRun: incremental.willRun(key)
                case .succeeded where !definition.guardedWork.isEmpty:
                    // Recorded once the whole task has succeeded; the old record goes now, so a
                    // task stopped halfway runs again.
                    state.withLock { state in
                        state.pendingGuards[task.definition.name] = PendingGuard(
                            key: key,
                            check: result,
                            request: request,
                            definition: task.definition
                        )
                    }
                    incremental.failed(key: key)
                case .succeeded, .remoteHit:
                    if definition.recordsGuard, let guardName = definition.guardedBy,
                        let ran = state.withLock({ $0.pendingGuards.removeValue(forKey: guardName) })
                    {
                        incremental.succeeded(
                            key: ran.key,
                            check: ran.check,
                            request: ran.request,
                            definition: ran.definition
                        )
                    }
                    // Removed only inside the project, links resolved now: a link planted since
                    // the plan was checked can't make kiln delete a file elsewhere.
                    let removable =
                        depfile.map { depfile in
                            task.definition.allowsOutsideRoot
                                || plan.boundary.contains(
                                    Path.join(request.directory, depfile),
                                    followingLastLink: false,
                                    fresh: true
                                )
                        } ?? false
                    incremental.succeeded(
                        key: key,
                        check: result,
                        request: request,
                        depfile: depfile,
                        keepDepfile: task.definition.keepsDepfile || !removable,
                        definition: task.definition,
                        duration: outcome == .succeeded && remoteRan.value == nil
                            ? startedAt.value.map { Int64(MonotonicClock.nanoseconds() - $0) } : nil,
                        // A remote hit ends on the look-up's thread, one of Swift concurrency's:
                        // its outputs are read and its record written elsewhere.
                        handingOver: outcome == .remoteHit,
                        // Nothing waits for its end when its slot goes to a ready job and no
                        // dependent waits for it alone: its record may wait to share a commit.
                        // Not a job holding slots of other queues too: they are let go when
                        // it is reported.
                        canWait: chainSlots.isEmpty && realQueue.readyJobCount > 0
                            && !(awaitedAs.value?.isAwaited ?? true),
                        then: settle
                    )
                    settles = false
                case .upToDate:
                    incremental.upToDate(key: key, check: result)
                case .failed: incremental.failed(key: key)
                case .cancelled: break
                }
            }
            if settles { settle() }
        }
        // Only now may a stop or an interrupt cancel it: a job cancelled in no queue finishes at
        // once, and it must not finish before this completion block is there to report it and
        // count it done (that window made a failing run hang, now and then, under load).
        state.withLock { state in
            state.live[id] = realJob
            if cleanup != nil {
                for job in [realJob, next] + chainSlots + (check.map { [$0] } ?? []) {
                    state.spared[ObjectIdentifier(job)] = job
                }
            }
        }

        guard hasDone else { return (next, nextQueue, realJob, realJob) }
        // What the job left goes to the cache before dependents start: they can't change it
        // under the upload.
        var store: Job?
        if let remote, !remote.session.settings.readOnly {
            let upload = DeferredWorkJob("\(request.label) (remote store)") { finished in
                guard ranAndLeftOutputs.value else { return finished() }
                remote.store(output, done: finished)
            }
            upload.addDependency(realJob)
            add(upload, to: queues.queue(named: remote.session.settings.endpoint.queueName))
            store = upload
        }
        // Dependents wait for this: it succeeds when the job ran successfully (and produced what
        // it declares) or was up to date.
        let done = BlockJob {
            let outcome = Self.outcome(of: realJob, secrets: secrets)
            if let check, verdict.value?.reason == .upToDate, !check.isCancelled { return }
            if remoteHit.value || remoteRan.value?.exitCode == 0 { return }
            // It ran and failed, and the call ignores that (not a job that didn't run).
            if ignoresFailure, !realJob.isCancelled { return }
            if outcome != .succeeded || !unproduced.value.isEmpty { throw UnitFailure(label: request.label) }
        }
        done.name = request.label
        awaitedAs.withLock { $0 = done }
        done.addDependency(realJob)
        if let recorded { done.addDependency(recorded) }
        if let store { done.addDependency(store) }
        done.completionBlock = { [self] in
            onFinish(done.isCancelled || done.error != nil, done)
            pendingAdd(-1)
        }
        add(done, to: unitEnds)
        guard let check else {
            if let (lookUp, queue) = lookUpFirst(next, nextQueue) { return (lookUp, queue, realJob, done) }
            return (next, nextQueue, realJob, done)
        }
        return (check, checks, realJob, done)
    }

    /// With incremental state, checks a job on the spot when every dependency has already
    /// succeeded (their output signatures are known). An up-to-date job is reported and needs no
    /// job at all — a no-op run creates none. Returns `nil` when the check has to wait for running
    /// dependencies (a check job does it then).
    private func inlineCheck(
        _ task: BuildPlan.Task,
        source: String?,
        after dependencies: [TaskProgress],
        position: Int? = nil
    ) -> IncrementalState.Check? {
        guard let incremental = options.incremental else { return nil }
        guard dependencies.allSatisfy(\.hasSucceeded) else { return nil }
        let key = JobKey(task: task.definition.name, source: source)
        let verdict =
            prechecked(at: position)
            ?? verdict(
                of: task,
                key: key,
                request: task.definition.jobRequest(source: source),
                incremental: incremental
            )
        guard verdict.reason == .upToDate else { return verdict }
        incremental.upToDate(key: key, check: verdict)
        let id = state.withLock { state -> Int in
            defer {
                state.nextJobID += 1
                state.summary.upToDate += 1
            }
            return state.nextJobID
        }
        let info = JobInfo(id: id, key: key, summary: "", resources: [])
        // `each:` jobs were counted when their task listed its sources.
        observer.jobsUpToDate([info], planned: source == nil, at: now)
        return verdict
    }

    /// The verdict of the job `key` of `task`: **the one place a run asks for one.** A task
    /// skipped with its caller (``GateVote/skip``) is up to date without a look; a piece that
    /// follows a guard (``TaskOptions/guardedBy``) takes the guard's verdict — the guard is
    /// always an earlier piece of its chain, so it is known; any other job is judged by the
    /// incremental state (``IncrementalState/verdict(of:key:request:fresh:)``), and a guard's
    /// verdict is kept for its followers. Without incremental state, every job that isn't
    /// skipped runs.
    private func verdict(
        of task: BuildPlan.Task,
        key: JobKey,
        request: @autoclosure () -> JobRequest,
        incremental: IncrementalState?,
        prepared: PreparedTask? = nil
    ) -> IncrementalState.Check {
        let name = task.definition.name
        let guardName = task.definition.guardedBy
        // Only a called task can be skipped with its caller: most jobs take no lock here.
        if guardName != nil || !calledTasks.isEmpty && calledTasks.contains(name) {
            let (skipped, guardVerdict) = state.withLock { state in
                (state.skipped.contains(name), guardName.map { state.guardVerdicts[$0] ?? .noRecord })
            }
            if skipped { return .skipped }
            if let guardName, let guardVerdict {
                return .following(JobKey(task: guardName), reason: guardVerdict)
            }
        }
        guard let incremental else {
            var runs = IncrementalState.Check.skipped
            runs.reason = .alwaysRuns
            return runs
        }
        let result = incremental.verdict(
            of: task,
            key: key,
            request: request(),
            fresh: calledTasks.contains(name),
            prepared: prepared
        )
        if !task.definition.guardedWork.isEmpty { state.withLock { $0.guardVerdicts[name] = result.reason } }
        return result
    }

    /// A verdict `precheckSettledTasks` made for the plain task at `position`, taken out of the table.
    private func prechecked(at position: Int?) -> IncrementalState.Check? {
        guard let position else { return nil }
        return state.withLock { $0.prechecked.removeValue(forKey: position) }
    }

    private func add(_ job: Job, to queue: JobQueue) {
        do {
            try queue.addJob(job)
        } catch {
            job.cancel()
        }
    }

    /// How `job` ended, for reporters: the reasons say what failed (a command line, with
    /// `secrets` masked).
    static func outcome(of job: Job, secrets: SecretMask) -> JobOutcome {
        if job.isCancelled {
            switch job.cancellationReason {
            case .dependencyFailed(let dependency): return .cancelled("dependency \(dependency.description) failed")
            case .dependencyCancelled(let dependency):
                return .cancelled("dependency \(dependency.description) did not run")
            case .dependencyCycle(let names): return .cancelled("dependency cycle: \(names.joined(separator: " → "))")
            default: return .cancelled(job.error.map { secrets.masking("stopped: \($0)") } ?? "stopped")
            }
        }
        if let error = job.error { return .failed(secrets.masking("\(error)")) }
        return .succeeded
    }
}

/// The work of one `each:` task: its sources, cut into batches.
///
/// Threading: any thread; guarded by its mutex.
final class EachTaskBatches: Sendable {
    let task: BuildPlan.Task
    /// The task's position in the plan.
    let position: Int
    let sources: [String]
    let batchSize: Int
    private let progress = HostMutex<(next: Int, finished: Int, failures: Int)>((0, 0, 0))

    init(task: BuildPlan.Task, position: Int, sources: [String], batchSize: Int) {
        self.task = task
        self.position = position
        self.sources = sources
        self.batchSize = batchSize
    }

    func takeNextRange() -> Range<Int>? {
        progress.withLock { progress in
            guard progress.next < sources.count else { return nil }
            let range = progress.next..<min(progress.next + batchSize, sources.count)
            progress.next = range.upperBound
            return range
        }
    }

    func finish(_ range: Range<Int>) { progress.withLock { $0.finished += range.count } }
    func skip(_ range: Range<Int>) { finish(range) }
    func recordFailure() { progress.withLock { $0.failures += 1 } }
    var failures: Int { progress.withLock { $0.failures } }
    var allFinished: Bool { progress.withLock { $0.finished == sources.count } }
}

/// The job dependents of an `each:` task wait for: ready only once the task's last batch has
/// finished (custom readiness, re-evaluated through ``Job/updateReadiness(_:)``); fails if any
/// of the task's jobs failed, so its dependents don't run.
///
/// Threading: as ``Job``; `outcome` is guarded by its mutex.
final class EachTaskDoneJob: Job, @unchecked Sendable {
    private let outcome = HostMutex<(complete: Bool, failures: Int)>((false, 0))

    init(name: String) {
        super.init()
        self.name = name
        requiresSuccessfulDependencies = true
    }

    override var isReady: Bool { super.isReady && outcome.withLock { $0.complete } }

    func complete(failures: Int) {
        updateReadiness { outcome.withLock { $0 = (true, failures) } }
    }

    override func main() throws {
        let failures = outcome.withLock { $0.failures }
        if failures > 0 { throw EachTaskFailure(failures: failures) }
    }
}

/// Some jobs of an `each:` task failed.
struct EachTaskFailure: Error, CustomStringConvertible {
    var failures: Int
    var description: String { "\(failures) of its jobs failed" }
}

/// The failure of a unit whose job failed or didn't run; dependents name its label.
struct UnitFailure: Error, CustomStringConvertible {
    var label: String
    var description: String { "\(label) did not succeed" }
}

/// Stands in for a job its task kind could not make; fails with the kind's error.
final class FailingJob: Job, @unchecked Sendable {
    private let failure: any Error
    init(_ failure: any Error) {
        self.failure = failure
        super.init()
    }
    override func main() throws { throw failure }
}

/// The gate of a task that waits to be called: ready once a caller reaches the call; cancelled
/// when no caller will (its task then doesn't run).
///
/// Threading: as ``Job``; its state is guarded by its mutex.
final class CallGateJob: Job, @unchecked Sendable {
    private let isOpen = HostMutex(false)

    init(name: String) {
        super.init()
        self.name = name
    }

    override var isReady: Bool { super.isReady && isOpen.withLock { $0 } }

    /// Lets the task start.
    func open() {
        updateReadiness { isOpen.withLock { $0 = true } }
    }

    override func main() throws {}
}

extension JobRequest {
    /// The request without its variables: what a unit keeps once nothing will render with them.
    var keepingNoVariables: JobRequest {
        var kept = self
        kept.variables = [:]
        return kept
    }
}
