import KilnCommandLine
import KilnGit
import KilnHookPlan
import KilnHost
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Kiln {
    struct Run {
        /// How long after Ctrl-C or SIGTERM kiln waits for jobs to stop before it exits anyway:
        /// past the commands' grace period (SIGTERM, then SIGKILL after 2 s).
        static let stopDeadline = 5.0

        static let spec = CommandSpec(
            name: "run",
            abstract: "Run tasks and everything they depend on.",
            discussion: """
                With no TASK, runs the task named 'default'. Without --keep-going the first failure \
                stops new jobs from starting (running ones finish). Ctrl-C stops every running \
                command (SIGTERM to its process group, SIGKILL after 2 s) and exits with 130.
                """,
            options: TaskfileOptions.specs + [
                .value(
                    "jobs",
                    short: "j",
                    joined: true,
                    help: "Width of the cpu queue: how many cpu-bound jobs run at once (default: cores)."
                ),
                .flag("dry-run", short: "d", help: "Print the jobs a run would make, and run nothing."),
                .flag("keep-going", short: "k", help: "Keep running everything that does not depend on a failed job."),
                .value(
                    "batch-size",
                    help:
                        "Jobs of an 'each: sources' task created at a time (a task's 'batch:' wins). (default: \(RunOptions().batchSize))"
                ),
                .flag("json", help: "Print one JSON event per line instead of the status display."),
                .value("trace", help: "Write a Chrome Trace Event file of the run (open it in Perfetto)."),
                .flag("verbose", short: "v", help: "Print every command as it starts, and jobs that did not run."),
                .flag("explain", help: "Print why each job runs, or that it is up to date."),
                .flag("wait", help: "Wait for another kiln run on this project to finish, instead of failing at once."),
                .value("wait-limit", help: "With --wait, give up (exit 3) after this many seconds."),
                .flag(
                    "affected",
                    help:
                        "Run only the tasks that files changed in git affect, and what depends on them (see 'kiln affected')."
                ),
            ] + ChangeOptions.specs + RemoteOptions.specs + [
                .flag("force", short: "f", help: "Run every job, even those that are up to date (go-task's --force)."),
                .flag("yes", short: "y", help: "Answer yes to every task's 'prompt:' (go-task's --yes)."),
                .flag(
                    "silent",
                    short: "s",
                    help: "go-task's --silent: kiln never echoes commands, so it changes nothing."
                ),
                .value(
                    "output",
                    help:
                        "go-task's output style (interleaved, group, prefixed): kiln always prints each job's output whole, under its name."
                ),
                .flag(
                    "watch",
                    short: "w",
                    help:
                        "Watch the sources of the tasks (and of what they depend on and call) and run again when they change; Ctrl-C stops (go-task's --watch)."
                ),
                .value(
                    "interval",
                    help:
                        "With --watch, how often to look for changes: a Go duration (default: the Taskfile's 'interval:', else 100ms)."
                ),
            ],
            positionals: [
                .many(
                    "tasks",
                    help:
                        "The tasks to run, NAME=value variables for the Taskfile, and after -- the arguments {{.CLI_ARGS}} holds (go-task's)."
                )
            ],
            keepsWordsAfterDashes: true
        )

        var options: TaskfileOptions
        /// The tasks and variables, before `--`.
        var taskArguments: [String]
        /// The arguments after `--`: `{{.CLI_ARGS}}`.
        var cliArguments: [String]
        var jobs: Int?
        var dryRun: Bool
        var keepGoing: Bool
        /// `--batch-size`; `nil`: the run's own default (``RunOptions/batchSize``).
        var batchSize: Int?
        var json: Bool
        var trace: String?
        var verbose: Bool
        var explain: Bool
        var wait: Bool
        var waitLimit: Double?
        var affected: Bool
        var changes: ChangeOptions
        var remote: RemoteOptions
        var force: Bool
        var yes: Bool
        var silent: Bool
        var watch: Bool
        var interval: String?

        /// `kiln run`'s options, checked.
        ///
        /// - Throws: A usage error for a value out of range or options that don't go together.
        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = TaskfileOptions(arguments)
            taskArguments = arguments.positionals
            cliArguments = arguments.afterDashes
            jobs = try arguments.integer("jobs", atLeast: 1)
            dryRun = arguments.flag("dry-run")
            keepGoing = arguments.flag("keep-going")
            batchSize = try arguments.integer("batch-size", atLeast: 1)
            json = arguments.flag("json")
            trace = arguments.value("trace")
            verbose = arguments.flag("verbose")
            explain = arguments.flag("explain")
            wait = arguments.flag("wait")
            waitLimit = try arguments.number("wait-limit")
            affected = arguments.flag("affected")
            changes = ChangeOptions(arguments)
            remote = try RemoteOptions(arguments)
            force = arguments.flag("force")
            yes = arguments.flag("yes")
            silent = arguments.flag("silent")
            _ = try arguments.choice("output", among: ["interleaved", "group", "prefixed"])
            watch = arguments.flag("watch")
            interval = arguments.value("interval")
            if let interval, GoDuration(interval).map({ $0.seconds > 0 }) != true {
                throw arguments.usageError(
                    "--interval must be a duration greater than zero as Go writes one (100ms, 1s), not '\(interval)'"
                )
            }
            if watch, dryRun || affected {
                throw arguments.usageError(
                    "--watch runs the tasks again and again; it doesn't go with --dry-run or --affected"
                )
            }
        }

        func run() throws {
            let started = MonotonicClock.nanoseconds()
            let phases = PhaseClock()
            // Before any thread exists: Ctrl-C and SIGTERM are read from a signalfd, never delivered.
            let signals = SignalWatcher(descriptor: ProcessMonitor.blockTerminationSignals())
            let monitor = ProcessMonitor()
            // `NAME=value` arguments are variables (go-task's); the rest name tasks.
            let words = TaskArguments(taskArguments)
            var context = TaskfileContext(workingDirectory: System.currentDirectory, environment: System.environment)
            context.variables = words.variables
            context.arguments = cliArguments
            context.force = force
            context.silent = silent
            context.verbose = verbose
            context.assumeYes = yes
            // Only the tasks this run is for run their own dynamic variables (go-task's rule).
            context.dynamicScope = .tasks(words.targets)
            // Ctrl-C while the Taskfile loads stops its dynamic variables' commands.
            let loadInterruption = LoadInterruption()
            context.interruption = loadInterruption
            var request = BuildSession.Request(
                taskfile: options.taskfile,
                currentDirectory: options.workingDirectory,
                plugins: options.plugins,
                targets: words.targets,
                runner: monitor,
                tracked: { trackedContent(root: $0) }
            )
            request.context = context
            request.exitsAfterwards = true
            if affected {
                let changes = self.changes
                request.changedFiles = { root throws(BuildSession.Failure) in try changes.changedFiles(in: root) }
            }
            if dryRun {
                // The run's own scheduler, running nothing: the jobs a real run would start now (and
                // those waiting on them).
                let verdicts = try session { () throws(BuildSession.Failure) in
                    try BuildSession.inspect(
                        request,
                        onlyOutOfDate: true,
                        note: { System.writeError($0 + "\n") },
                        phase: phases.mark
                    )
                }
                var text = ""
                for job in verdicts where job.reason != .upToDate {
                    text += job.summary.isEmpty ? job.label : "\(job.label): \(job.summary)"
                    text += explain ? "\n    because \(job.reason)\n" : "\n"
                }
                System.write(text, to: 1)
                phases.print()
                // A job a run would fail before it starts (a precondition that doesn't hold, two
                // jobs writing one file) fails the dry run too, as go-task's `--dry` does.
                var refusals = ""
                for job in verdicts {
                    if case .refused(let reason) = job.reason {
                        refusals += "kiln: \(job.label) would fail: \(reason)\n"
                    }
                }
                // Like ninja, leave freeing a large graph to the kernel.
                guard refusals.isEmpty else {
                    System.writeError(refusals)
                    Kiln.exit(ExitStatus.jobFailed)
                }
                Kiln.exit()
            }

            let console = ReporterBox()
            let jsonWriter = json ? JSONEventWriter() : nil
            let traceWriter = trace.map { _ in ChromeTraceWriter() }
            var settings = BuildSession.RunSettings { [verbose, explain] queues in
                let reporter = ConsoleReporter(
                    interactive: ConsoleReporter.standardOutputIsInteractive,
                    verbose: verbose,
                    explain: explain,
                    queues: queues
                )
                console.reporter = reporter
                var observers: [any RunObserver] = [jsonWriter ?? reporter]
                if let traceWriter { observers.append(traceWriter) }
                return RunObservers(observers)
            }
            settings.forcesEveryJob = force
            settings.confirm = { [yes] task, question in Self.confirm(task: task, question: question, assumingYes: yes)
            }
            settings.options.keepGoing = keepGoing
            settings.remote = { [remote] in remote.settings(over: $0) }
            if let batchSize { settings.options.batchSize = batchSize }
            settings.cpuWidth = jobs
            settings.wait = wait
            settings.waitLimit = waitLimit
            settings.waiting = { [waitLimit] holder in
                let bound = waitLimit.map { " (at most \(Int($0)) s)" } ?? ""
                System.writeError("kiln: \(holder) is using this project; waiting for it to finish\(bound)…\n")
            }
            settings.allowsSnapshotShortcuts = !explain && !verbose && !json && trace == nil
            if settings.allowsSnapshotShortcuts, let seen = Kiln.changeSeen.withLock({ $0 }) {
                settings.changeSeenBefore = true
                settings.launcherLook = seen.handover
            }
            let control = RunControl()
            settings.started = { run in control.attach(run) }
            // `watch: true` on a task given: the watch begins with this run (a change stops it).
            settings.watchRequested = { [watch, interval] watches, plan in
                guard watches, !watch else { return }
                control.beginWatch(plan.map { plan in (SourceWatch(plan: plan), Self.pause(interval, plan: plan)) })
            }
            signals.start(monitor: monitor) { count, signal in
                if count == 1 {
                    loadInterruption.interrupt(with: signal)
                    control.stop()
                    // Commands are killed after their grace period; a plugin's job that ignores
                    // cancellation can't be. kiln ends anyway, saying which.
                    System.startThread {
                        usleep(UInt32(Self.stopDeadline * 1_000_000))
                        let stuck = control.unfinishedJobs
                        guard !stuck.isEmpty else { return }
                        System.writeError(
                            "kiln: \(stuck.joined(separator: ", ")) did not stop within \(Int(Self.stopDeadline)) s of the interrupt; exiting anyway\n"
                        )
                        System.markRunInProgress(false)
                        _exit(control.isWatching ? 0 : ExitStatus.interrupted)
                    }
                } else {
                    // A second Ctrl-C: don't wait for the grace period.
                    monitor.killAll()
                }
            }
            /// Prints what a run came to; the exit status it means.
            let report = { (outcome: BuildSession.Outcome) -> Int32 in
                switch outcome {
                case .upToDate(let count):
                    var summary = RunSummary()
                    summary.upToDate = count
                    ConsoleReporter.printSummary(
                        summary,
                        seconds: Double(MonotonicClock.nanoseconds() - started) / 1e9
                    )
                    phases.print()
                    if debugging("memory") { System.writeError("kiln: memory: \(MemoryReport.summary())\n") }
                    return 0
                case .ran(let summary, let seconds, let warnings, let hashing, let commits):
                    let observer: any RunObserver =
                        jsonWriter ?? console.reporter.map { $0 as any RunObserver } ?? RunObservers([])
                    for warning in warnings { observer.warning(warning) }
                    if let trace, let traceWriter {
                        do {
                            try traceWriter.write(to: trace)
                        } catch {
                            System.writeError("kiln: can't write trace \(trace): \(error)\n")
                        }
                    }
                    if let jsonWriter {
                        jsonWriter.runFinished(summary, seconds: seconds)
                    } else {
                        console.reporter?.runFinished(summary, seconds: seconds)
                    }
                    phases.mark("report")
                    phases.print()
                    if debugging("hashes") { System.writeError("kiln: hashes: \(hashing)\n") }
                    if debugging("state") { System.writeError("kiln: state: \(commits)\n") }
                    if debugging("memory") { System.writeError("kiln: memory: \(MemoryReport.summary())\n") }
                    if summary.interrupted { return ExitStatus.interrupted }
                    return summary.succeededOverall ? 0 : ExitStatus.jobFailed
                }
            }
            if watch {
                request.exitsAfterwards = false
                Self.watchAndRun(request, settings, control: control, interval: interval, report: report)
            }
            let outcome = try session { () throws(BuildSession.Failure) in
                try BuildSession.run(request, settings, phase: phases.mark)
            }
            let status = report(outcome)
            // `watch: true` on a task it was given: go on watching (Ctrl-C ends a watch with 0).
            if control.isWatching {
                if control.isStopping { Kiln.exit() }
                request.exitsAfterwards = false
                Self.watchAndRun(
                    request,
                    settings,
                    control: control,
                    interval: interval,
                    report: report,
                    after: control.endFirstRun()
                )
            }
            // Exit here rather than return: the kernel frees a large graph faster than deinit does.
            Kiln.exit(status)
        }
    }
}

extension Kiln.Run {
    /// A `prompt:` answered: yes with `--yes` (said on standard error, as go-task says it), else
    /// asked on the terminal; no terminal, no yes.
    static func confirm(task: String, question: String, assumingYes: Bool) -> Bool {
        if assumingYes {
            System.writeError("\(question) [assuming yes]\n")
            return true
        }
        guard isatty(0) == 1, isatty(2) == 1 else { return false }
        System.writeError("\(question) [y/N] ")
        guard let line = readLine() else { return false }
        let answer = line.lowercased().filter { !$0.isWhitespace }
        return answer == "y" || answer == "yes"
    }
}

/// The console reporter, made by the session once the run's queues exist (before the run starts,
/// on the session's thread) and read after it ends.
///
/// Threading: set once before the run starts, read after it ends; `@unchecked Sendable` for that.
final class ReporterBox: @unchecked Sendable {
    var reporter: ConsoleReporter?
}

/// Runs a session; a failure is printed and becomes the command's exit status.
func session<Result>(_ body: () throws(BuildSession.Failure) -> Result) throws(ExitCode) -> Result {
    do {
        return try body()
    } catch {
        System.writeError(error.description + "\n")
        throw ExitCode(error.exitStatus)
    }
}

/// Routes SIGINT/SIGTERM/SIGHUP to a handler on the process monitor's thread.
final class SignalWatcher: Sendable {
    private let count = HostMutex(0)
    private let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Calls `handler` on the monitor's thread for each signal: how many have come, this one
    /// included, and its number.
    func start(monitor: ProcessMonitor, handler: @escaping @Sendable (_ count: Int, _ signal: Int32) -> Void) {
        monitor.watchTerminationSignals(descriptor: descriptor) { [self] signal in
            let n = count.withLock { count -> Int in
                count += 1
                return count
            }
            handler(n, signal)
        }
    }
}

/// Whether `KILN_DEBUG` (a comma-separated list) names `topic`: `phases`, `hashes`, `state`,
/// `memory`.
func debugging(_ topic: String) -> Bool {
    getenv("KILN_DEBUG").map { String(cString: $0).split(separator: ",").contains(Substring(topic)) } ?? false
}
