import KilnPaths
import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Prints a run for people. On a terminal: a live status line like ninja's —
/// `[37/1000] cpu 2/2 · disk:sda1 1/1 · cc -c src/foo.c` — redrawn in place. Off a terminal
/// (CI, pipes): one plain line per finished job. A job's output is printed whole when it ends,
/// never interleaved with another's; a failure prints its command and the tail of its output.
///
/// Threading: any thread; printing and counters are guarded by one mutex.
public final class ConsoleReporter: RunObserver {
    private struct State {
        var total = 0
        var finished = 0
        var running: [Int: JobInfo] = [:]
        var lastDraw: Double = -1
        var statusShown = false
        /// An interactive job has the terminal: what would be printed waits in `held`.
        var interactiveJobs = 0
        var held: [String] = []
    }

    private let interactive: Bool
    private let verbose: Bool
    private let explain: Bool
    private let queues: ResourceQueues
    private let write: @Sendable (String) -> Void
    private let state = HostMutex(State())
    /// Lines of output shown for a failed job.
    public let failureTailLines = 40

    /// Creates a reporter.
    ///
    /// - Parameters:
    ///   - interactive: Draw a live status line (a terminal); otherwise plain lines.
    ///   - verbose: Also print a line per job that didn't run, and every command.
    ///   - explain: Print why each job runs (or that it is up to date), as it is checked.
    ///   - queues: Read for the occupancy shown in the status line.
    ///   - write: Where text goes (standard output by default).
    public init(
        interactive: Bool,
        verbose: Bool,
        explain: Bool = false,
        queues: ResourceQueues,
        write: @escaping @Sendable (String) -> Void = ConsoleReporter.standardOutput
    ) {
        self.interactive = interactive
        self.verbose = verbose
        self.explain = explain
        self.queues = queues
        self.write = write
    }

    /// Writes to file descriptor 1.
    public static let standardOutput: @Sendable (String) -> Void = { text in System.write(text, to: 1) }

    /// Whether standard output is a terminal that can redraw a line (and not CI).
    public static var standardOutputIsInteractive: Bool {
        return isatty(1) == 1 && getenv("TERM").map { String(cString: $0) } != "dumb" && getenv("CI") == nil
    }

    /// Counts jobs.
    public func jobsPlanned(_ count: Int) {
        state.withLock { $0.total += count }
    }

    /// Redraws the status line (throttled).
    public func jobStarted(_ job: JobInfo, at time: Double) {
        state.withLock { state in
            state.running[job.id] = job
            if verbose { emit(&state, "  \(job.summary)\n") }
            if job.isInteractive {
                // Its commands have the terminal: one line now, the rest when it ends.
                emit(&state, "kiln: \(job.shownLabel) has the terminal\n")
                state.interactiveJobs += 1
                return
            }
            if interactive, time - state.lastDraw > 0.033 {
                state.lastDraw = time
                drawStatus(&state)
            }
        }
    }

    /// Prints the job's line and output.
    public func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        state.withLock { state in
            if job.isInteractive, state.running[job.id] != nil {
                state.interactiveJobs -= 1
                if state.interactiveJobs == 0 {
                    let held = state.held
                    state.held = []
                    for text in held { emit(&state, text) }
                }
            }
            state.running[job.id] = nil
            state.finished += 1
            let progress = "[\(state.finished)/\(max(state.total, state.finished))]"
            switch outcome {
            case .succeeded, .remoteHit:
                // A remote hit shows what the job printed when it ran, as ninja shows a job's.
                let shown = outcome == .remoteHit ? job.shownLabel + " (remote hit)" : job.shownLabel
                let group = job.outputGroup
                if group?.showsOnlyFailures == true {
                    // `error_only:` a job that succeeded shows no output.
                    if !interactive { emit(&state, "\(progress) \(shown)\n") }
                } else if output.isSpilled {
                    // Streamed from its file, a piece at a time: never whole in memory.
                    emit(&state, "\(progress) \(shown)\n" + (group?.header ?? ""))
                    var last = ""
                    output.forEachChunk { chunk in
                        emit(&state, chunk)
                        if !chunk.isEmpty { last = chunk }
                    }
                    if !last.hasSuffix("\n") { emit(&state, "\n") }
                    if let footer = group?.footer { emit(&state, footer) }
                } else {
                    var text = output.text
                    if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
                    // go-task's group lines wrap output, and nothing when there is none.
                    if !text.isEmpty, let group { text = group.header + text + group.footer }
                    if !interactive || !text.isEmpty { emit(&state, "\(progress) \(shown)\n" + text) }
                }
            case .failed(let reason):
                var block = "\(progress) FAILED: \(job.shownLabel)\n  \(job.summary)\n"
                let tail = output.tail(lines: failureTailLines)
                if !tail.isEmpty {
                    let group = job.outputGroup
                    block += (group?.header ?? "") + tail + "\n" + (group?.footer ?? "")
                }
                block += "  \(reason)\n"
                emit(&state, block)
            case .cancelled(let reason):
                if verbose { emit(&state, "\(progress) skipped \(job.shownLabel): \(reason)\n") }
            case .upToDate:
                if verbose { emit(&state, "\(progress) up to date: \(job.shownLabel)\n") }
            }
            if interactive { drawStatus(&state) }
        }
    }

    /// Counts jobs found up to date together; prints them with `verbose` or `explain`.
    public func jobsUpToDate(_ jobs: [JobInfo], planned: Bool, at time: Double) {
        state.withLock { state in
            if planned { state.total += jobs.count }
            if explain || verbose {
                var text = ""
                for job in jobs {
                    state.finished += 1
                    if explain { text += "kiln explain: \(job.shownLabel): \(RunReason.upToDate)\n" }
                    if verbose {
                        text +=
                            "[\(state.finished)/\(max(state.total, state.finished))] up to date: \(job.shownLabel)\n"
                    }
                }
                emit(&state, text)
            } else {
                state.finished += jobs.count
            }
            if interactive { drawStatus(&state) }
        }
    }

    /// With `explain`, prints why the job runs, or that it is up to date.
    public func jobChecked(_ job: JobInfo, reason: RunReason) {
        guard explain else { return }
        state.withLock { state in emit(&state, "kiln explain: \(job.shownLabel): \(reason)\n") }
    }

    /// Prints the closing line and clears the status line.
    public func runFinished(_ summary: RunSummary, seconds: Double) {
        state.withLock { state in
            emit(&state, Self.summaryLine(summary, seconds: seconds))
        }
    }

    /// Prints the line that ends a run, for a run that needed no reporter (a no-op).
    public static func printSummary(_ summary: RunSummary, seconds: Double) {
        System.write(summaryLine(summary, seconds: seconds), to: 1)
    }

    private static func summaryLine(_ summary: RunSummary, seconds: Double) -> String {
        var parts = ["\(summary.succeeded) ran"]
        if summary.remoteHits > 0 { parts.append("\(summary.remoteHits) from the remote cache") }
        if summary.upToDate > 0 { parts.append("\(summary.upToDate) up to date") }
        if summary.failed > 0 { parts.append("\(summary.failed) failed") }
        if summary.ignoredFailures > 0 {
            parts.append("\(summary.ignoredFailures) failed with ignore_error")
        }
        if summary.cancelled > 0 { parts.append("\(summary.cancelled) did not run") }
        let verdict = summary.interrupted ? "interrupted" : summary.succeededOverall ? "done" : "FAILED"
        return "kiln: \(verdict): \(parts.joined(separator: ", ")) in \(formatDecimal(seconds, digits: 2)) s\n"
    }

    /// Prints the warning above the status line.
    public func warning(_ warning: RunWarning) {
        state.withLock { state in
            emit(&state, "kiln: \(warning)\n")
            if interactive { drawStatus(&state) }
        }
    }

    /// Writes text above the status line — or, while an interactive job has the terminal, keeps
    /// it for when that job ends.
    private func emit(_ state: inout State, _ text: String) {
        guard state.interactiveJobs == 0 else {
            state.held.append(text)
            return
        }
        if state.statusShown {
            write("\r\u{1B}[K")
            state.statusShown = false
        }
        write(text)
    }

    private func drawStatus(_ state: inout State) {
        guard state.interactiveJobs == 0 else { return }
        var parts: [String] = []
        for (name, queue) in queues.all where name != "control" {
            parts.append("\(name) \(queue.runningJobCount)/\(queue.maxConcurrentJobCount)")
        }
        let current = state.running.values.max { $0.id < $1.id }.map(\.shownLabel) ?? ""
        var line = "[\(state.finished)/\(max(state.total, state.finished))] \(parts.joined(separator: " · "))"
        if !current.isEmpty { line += " · \(current)" }
        let width = Int(terminalWidth())
        if line.count > width - 1 { line = String(line.prefix(max(10, width - 2))) + "…" }
        write("\r\u{1B}[K" + line)
        state.statusShown = true
    }

    private func terminalWidth() -> UInt16 {
        var size = winsize()
        return ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? size.ws_col : 80
    }
}
