import KilnHost
import KilnJobs
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// The run in progress, for Ctrl-C and for the watch mode, which stop it.
///
/// Threading: any thread; the state is behind a lock.
final class RunControl: Sendable {
    private struct State {
        var run: BuildRun?
        var stopping = false
        var watching = false
        /// `watch: true` on a task given: what the first run is watched with.
        var first: (watch: SourceWatch, pause: UInt32, poller: ChangePoller)?
    }
    private let state = HostMutex(State())

    /// A run has started: Ctrl-C, if it came already, stops it at once.
    func attach(_ run: BuildRun) {
        let stopping = state.withLock { state -> Bool in
            state.run = run
            return state.stopping
        }
        if stopping { run.interrupt() }
    }

    /// The run ended.
    func detach() {
        state.withLock { $0.run = nil }
    }

    /// Ctrl-C: stop the run in progress, and start no other.
    func stop() {
        let run = state.withLock { state -> BuildRun? in
            state.stopping = true
            return state.run
        }
        run?.interrupt()
    }

    /// A watched file changed: stop the run in progress (the watch starts another).
    func interruptForChange() {
        state.withLock { $0.run }?.interrupt()
    }

    /// Whether Ctrl-C came.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Whether kiln is in watch mode (Ctrl-C then ends it with status 0, as go-task's does).
    var isWatching: Bool {
        get { state.withLock { $0.watching } }
        set { state.withLock { $0.watching = newValue } }
    }

    /// A task the run was given says `watch: true`: kiln is in watch mode, and — when the run
    /// has a plan (`watching`: its sources, and the pause between looks) — a change during it
    /// stops it.
    func beginWatch(_ watching: (watch: SourceWatch, pause: UInt32)?) {
        let poller = watching.map { watching in
            ChangePoller(watching.watch, pause: watching.pause) { [self] _ in interruptForChange() }
        }
        state.withLock { state in
            state.watching = true
            if let watching, let poller { state.first = (watching.watch, watching.pause, poller) }
        }
    }

    /// The first run of a `watch: true` task ended: what it was watched with, and the change
    /// that stopped it, if one did.
    func endFirstRun() -> (watch: SourceWatch, pause: UInt32, change: String?)? {
        guard let first = state.withLock({ $0.first }) else { return nil }
        let change = first.poller.stop()
        detach()
        return (first.watch, first.pause, change)
    }

    /// The jobs of the run in progress that haven't finished.
    var unfinishedJobs: [String] { state.withLock { $0.run }?.unfinishedJobs ?? [] }
}

/// Looks for a change of a ``SourceWatch`` on a thread of its own while a run goes on.
///
/// Threading: made and stopped on one thread; it polls on its own.
final class ChangePoller: Sendable {
    private let found = HostMutex<(stopped: Bool, change: String?)>((false, nil))
    private let done = CountingSemaphore()

    /// Starts polling `watch` every `pause` microseconds; on the first change, `changed` is
    /// called (on the poller's thread) and polling ends.
    init(_ watch: SourceWatch, pause: UInt32, changed: @escaping @Sendable (String) -> Void) {
        System.startThread { [self] in
            defer { done.signal() }
            while true {
                usleep(pause)
                if found.withLock({ $0.stopped }) { return }
                if let change = watch.firstChange() {
                    found.withLock { $0.change = change }
                    changed(change)
                    return
                }
            }
        }
    }

    /// Stops polling (waits for the thread); the change it found, if any.
    func stop() -> String? {
        found.withLock { $0.stopped = true }
        done.wait()
        return found.withLock { $0.change }
    }
}

extension Kiln.Run {
    /// go-task's watch mode (`--watch`, or `watch: true` on a task given): runs the tasks, then
    /// runs them again whenever a file their sources match (theirs, and those of what they depend
    /// on and call: ``SourceWatch``) or the Taskfile changes. A change during a run stops it —
    /// its commands are stopped as Ctrl-C stops them, so a server the task started is
    /// restarted — and the next run begins. Every `interval` (go-task's `interval:`, 100 ms by
    /// default) it looks for changes. A failing run, or a Taskfile that doesn't load, is reported,
    /// and the watch goes on. Ctrl-C ends it, with status 0.
    ///
    /// - Parameters:
    ///   - report: Prints what a run came to.
    ///   - after: The tasks have just run (a task said `watch: true`): what that run was watched
    ///     with, and the change that stopped it — run again at once — or none: wait for one.
    ///     `nil` when the tasks haven't run, or ran from the snapshot's word (no plan).
    static func watchAndRun(
        _ request: BuildSession.Request,
        _ settings: BuildSession.RunSettings,
        control: RunControl,
        interval: String?,
        report: (BuildSession.Outcome) -> Int32,
        after first: (watch: SourceWatch, pause: UInt32, change: String?)? = nil
    ) -> Never {
        control.isWatching = true
        let names = request.targets.isEmpty ? "default" : request.targets.joined(separator: ", ")
        System.writeError("kiln: watching \(names); Ctrl-C stops\n")
        if let first {
            if let change = first.change {
                System.writeError("kiln: \(change) changed; running again\n")
            } else {
                waitForChange(first.watch, pause: first.pause, control: control)
            }
        }
        while true {
            if control.isStopping { Kiln.exit() }
            // What to watch: the plan as the Taskfile says now.
            var plan: BuildPlan?
            do {
                plan = try BuildSession.plan(request)
            } catch {
                System.writeError(error.description + "\n")
            }
            guard
                let watch = plan.map(SourceWatch.init(plan:))
                    ?? Project.locateTaskfile(request.taskfile, currentDirectory: request.currentDirectory).map({
                        SourceWatch(files: [$0.path], root: $0.root)
                    })
            else {
                Kiln.exit(ExitStatus.invalidTaskfile)
            }
            let pause = Self.pause(interval, plan: plan)
            if plan != nil {
                let poller = ChangePoller(watch, pause: pause) { _ in control.interruptForChange() }
                do {
                    _ = report(try BuildSession.run(request, settings))
                } catch {
                    System.writeError(error.description + "\n")
                }
                let change = poller.stop()
                control.detach()
                if control.isStopping { Kiln.exit() }
                if let change {
                    System.writeError("kiln: \(change) changed; running again\n")
                    usleep(pause)
                    continue
                }
            }
            waitForChange(watch, pause: pause, control: control)
        }
    }

    /// Returns when `watch` sees a change (and a moment more, for the rest of a save to land),
    /// having said which; Ctrl-C ends kiln meanwhile, with status 0.
    static func waitForChange(_ watch: SourceWatch, pause: UInt32, control: RunControl) {
        while true {
            usleep(pause)
            if control.isStopping { Kiln.exit() }
            if let change = watch.firstChange() {
                usleep(pause)
                System.writeError("kiln: \(change) changed; running again\n")
                return
            }
        }
    }

    /// The pause between looks for changes, in microseconds: `--interval`, else the Taskfile's
    /// `interval:`, else 100 ms.
    static func pause(_ interval: String?, plan: BuildPlan?) -> UInt32 {
        let every = interval.flatMap(GoDuration.init) ?? plan?.taskfile.watchInterval
        return UInt32(min(max((every?.seconds ?? 0.1) * 1_000_000, 1000), 3_600_000_000))
    }
}
