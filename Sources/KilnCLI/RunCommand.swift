import ArgumentParser
import KilnGit
import KilnHookPlan
import KilnHost
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension Kiln {
    struct Run: ParsableCommand {
        /// How long after Ctrl-C or SIGTERM kiln waits for jobs to stop before it exits anyway:
        /// past the commands' grace period (SIGTERM, then SIGKILL after 2 s).
        static let stopDeadline = 5.0

        static let configuration = CommandConfiguration(
            abstract: "Run tasks and everything they depend on.",
            discussion: """
                With no TASK, runs the task named 'default'. Without --keep-going the first failure \
                stops new jobs from starting (running ones finish). Ctrl-C stops every running \
                command (SIGTERM to its process group, SIGKILL after 2 s) and exits with 130.
                """
        )

        @OptionGroup var options: TaskfileOptions

        @Argument(help: "The tasks to run.")
        var tasks: [String] = []

        @Option(name: [.customShort("j", allowingJoined: true), .long], help: "Width of the cpu queue: how many cpu-bound jobs run at once (default: cores).")
        var jobs: Int?

        @Flag(name: .shortAndLong, help: "Print the jobs a run would make, and run nothing.")
        var dryRun = false

        @Flag(name: .shortAndLong, help: "Keep running everything that does not depend on a failed job.")
        var keepGoing = false

        @Option(help: "Jobs of an 'each: sources' task created at a time (a task's 'batch:' wins).")
        var batchSize: Int = 256

        @Flag(help: "Print one JSON event per line instead of the status display.")
        var json = false

        @Option(help: "Write a Chrome Trace Event file of the run (open it in Perfetto).")
        var trace: String?

        @Flag(name: .shortAndLong, help: "Print every command as it starts, and jobs that did not run.")
        var verbose = false

        @Flag(help: "Print why each job runs, or that it is up to date.")
        var explain = false

        @Flag(help: "Wait for another kiln run on this project to finish, instead of failing at once.")
        var wait = false

        @Option(name: .customLong("wait-limit"), help: "With --wait, give up (exit 3) after this many seconds.")
        var waitLimit: Double?

        @Flag(help: "Run only the tasks that files changed in git affect, and what depends on them (see 'kiln affected').")
        var affected = false

        @OptionGroup var changes: ChangeOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("-j must be at least 1") }
            if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        }

        func run() throws {
            let started = DispatchTime.now().uptimeNanoseconds
            let phases = PhaseClock()
            // Before any thread exists: Ctrl-C and SIGTERM are read from a signalfd, never delivered.
            let signals = SignalWatcher(descriptor: ProcessMonitor.blockTerminationSignals())
            let monitor = ProcessMonitor()

            // The last complete run's snapshot: when nothing it watches changed, this run is a no-op
            // and kiln says so without loading the Taskfile model or the build state.
            var lock: ProjectLock?
            var scan: UpToDateSnapshot.Scan?
            var tracked: GitTrackedContent?
            if let located = locateTaskfile(options), !affected {
                lock = dryRun ? try? ProjectLock(root: located.root, wait: false) : takeLock(root: located.root, wait: wait, waitLimit: waitLimit)
                tracked = trackedContent(root: located.root)
                scan = UpToDateSnapshot.scan(
                    root: located.root, taskfilePath: located.path, targets: tasks, mayRewrite: lock != nil, tracked: tracked
                )
                phases.mark("snapshot")
                if let scan, scan.isNoOp, !explain, !verbose, !json, trace == nil {
                    if !dryRun {
                        var summary = RunSummary()
                        summary.upToDate = scan.snapshot.jobCount
                        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                        ConsoleReporter.printSummary(summary, seconds: seconds)
                    }
                    phases.print()
                    Kiln.exit()
                }
            }
            var (project, plan) = loadAndPlan(options, targets: tasks, everyTaskWhenEmpty: false, runner: monitor)
            if affected, let changed = changes.changedFiles(in: project.taskfile.root) {
                let selection = plan.affected(by: changed, discovered: discoveredInputs(for: plan))
                System.writeError(
                    "kiln: \(selection.changedFiles.count) changed file\(selection.changedFiles.count == 1 ? "" : "s") affect "
                        + "\(selection.tasks.count) of \(plan.tasks.count) task\(plan.tasks.count == 1 ? "" : "s")\n"
                )
                plan = plan.restricted(to: selection)
            }
            phases.mark("load and plan")
            let root = project.taskfile.root
            let buildState =
                dryRun
                ? BuildState(root: root, lock: lock) { System.writeError($0 + "\n") }
                : BuildState(root: root, lock: lock ?? takeLock(root: root, wait: wait, waitLimit: waitLimit)) { System.writeError($0 + "\n") }
            let incremental = IncrementalState(
                state: buildState, root: root, previous: scan, tracked: tracked ?? trackedContent(root: root), dryRun: dryRun
            )
            phases.mark("open state")
            if dryRun {
                // The run's own scheduler, running nothing: the jobs a real run would start now (and
                // those waiting on them).
                var text = ""
                for job in plan.verdicts(incremental) where job.reason != .upToDate {
                    text += job.summary.isEmpty ? job.label : "\(job.label): \(job.summary)"
                    text += explain ? "\n    because \(job.reason)\n" : "\n"
                }
                System.write(text, to: 1)
                // Like ninja, leave freeing a large graph to the kernel.
                Kiln.exit()
            }
            // The run changes what the snapshot describes: it is written again as the run ends.
            UpToDateSnapshot.remove(root: root)
            incremental.watch(files: project.plugins.map(\.file))
            let queues = ResourceQueues(definitions: project.taskfile.resources, cpuWidth: jobs)
            let console = ConsoleReporter(
                interactive: ConsoleReporter.standardOutputIsInteractive, verbose: verbose, explain: explain, queues: queues
            )
            let jsonWriter = json ? JSONEventWriter() : nil
            let traceWriter = trace.map { _ in ChromeTraceWriter() }
            var observers: [any RunObserver] = [jsonWriter ?? console]
            if let traceWriter { observers.append(traceWriter) }
            var runOptions = RunOptions()
            runOptions.keepGoing = keepGoing
            runOptions.batchSize = batchSize
            runOptions.incremental = incremental
            let run = BuildRun(plan: plan, queues: queues, options: runOptions, observer: RunObservers(observers))
            signals.start(monitor: monitor) { count in
                if count == 1 {
                    run.interrupt()
                    // Commands are killed after their grace period; a plugin's job that ignores
                    // cancellation can't be. kiln ends anyway, saying which.
                    System.startThread {
                        usleep(UInt32(Self.stopDeadline * 1_000_000))
                        let stuck = run.unfinishedJobs
                        guard !stuck.isEmpty else { return }
                        System.writeError(
                            "kiln: \(stuck.joined(separator: ", ")) did not stop within \(Int(Self.stopDeadline)) s of the interrupt; exiting anyway\n"
                        )
                        System.markRunInProgress(false)
                        _exit(ExitStatus.interrupted)
                    }
                } else {
                    // A second Ctrl-C: don't wait for the grace period.
                    monitor.killAll()
                }
            }
            System.markRunInProgress(true)
            run.start()
            let summary = run.wait()
            System.markRunInProgress(false)
            for warning in incremental.takeWarnings() { RunObservers(observers).warning(warning) }
            phases.mark("run")
            incremental.saveFiles()
            // Even after a failure: the jobs that settled are in it (it is then incomplete, so the
            // next run is no no-op on its word, but checks only what changed and what didn't settle).
            incremental.saveSnapshot(
                taskfilePath: project.taskfile.path, targets: tasks, jobs: summary.succeeded + summary.upToDate,
                complete: summary.succeededOverall && !affected  // an --affected run covers only some jobs
            )
            buildState.close()
            phases.mark("save and close")
            let seconds = run.now
            if let trace, let traceWriter {
                do {
                    try traceWriter.write(to: trace)
                } catch {
                    System.writeError("kiln: can't write trace \(trace): \(error)\n")
                }
            }
            if let jsonWriter { jsonWriter.runFinished(summary, seconds: seconds) } else { console.runFinished(summary, seconds: seconds) }
            phases.mark("report")
            phases.print()
            if debugging("hashes") { System.writeError("kiln: hashes: \(incremental.hashingStatistics)\n") }
            // Exit here rather than return: the kernel frees a large graph faster than deinit does.
            if summary.interrupted { Kiln.exit(withError: ExitCode(ExitStatus.interrupted)) }
            if !summary.succeededOverall { Kiln.exit(withError: ExitCode(ExitStatus.jobFailed)) }
            Kiln.exit()
        }
    }
}

/// Routes SIGINT/SIGTERM/SIGHUP to a handler on the process monitor's thread.
final class SignalWatcher: Sendable {
    private let count = Mutex(0)
    private let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func start(monitor: ProcessMonitor, handler: @escaping @Sendable (Int) -> Void) {
        monitor.watchTerminationSignals(descriptor: descriptor) { [self] _ in
            let n = count.withLock { count -> Int in
                count += 1
                return count
            }
            handler(n)
        }
    }
}

/// Whether `KILN_DEBUG` (a comma-separated list) names `topic`: `phases`, `hashes`.
func debugging(_ topic: String) -> Bool {
    getenv("KILN_DEBUG").map { String(cString: $0).split(separator: ",").contains(Substring(topic)) } ?? false
}
