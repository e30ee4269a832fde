import KilnPluginAPI

/// One job of a run, as reporters see it.
///
/// Threading: a value type; safe to pass between threads.
public struct JobInfo: Sendable {
    /// Unique within the run, in creation order.
    public var id: Int
    /// Which job it is.
    public var key: JobKey
    /// What it does (the command line for shell jobs).
    public var summary: String
    /// The concrete resources it holds while it runs, in acquisition order.
    public var resources: [String]

    /// A job's description.
    public init(id: Int, key: JobKey, summary: String, resources: [String]) {
        self.id = id
        self.key = key
        self.summary = summary
        self.resources = resources
    }

    /// The task's name.
    public var task: String { key.task }
    /// The task name, plus the source file for `each:` jobs (see ``JobKey/label``).
    public var label: String { key.label }
    /// What the task's `label:` (or `prefix:`) makes of the job's name, when it has one: how
    /// people see it (its identity stays ``label``).
    public var shownAs: String?
    /// ``shownAs``, else ``label``.
    public var shownLabel: String { shownAs ?? key.label }
    /// The Taskfile's `output: {group: …}`, its lines rendered for this job: what goes before
    /// and after the job's output, and whether it is shown only when the job fails.
    public var outputGroup: OutputGroup?
    /// go-task's `interactive: true`: its commands have kiln's terminal while it runs, and
    /// print nothing a reporter receives.
    public var isInteractive = false
}

/// How a job ended.
///
/// Threading: a value type; safe to pass between threads.
public enum JobOutcome: Sendable, Equatable {
    /// It ran and succeeded.
    case succeeded
    /// It ran and failed; the text says how (`exit status 1: cc -c a.c`).
    case failed(String)
    /// It didn't run, or was stopped; the text says why.
    case cancelled(String)
    /// It didn't need to run: nothing it depends on changed.
    case upToDate
    /// It didn't run: the remote cache had its result, whose outputs are now in place.
    case remoteHit
}

/// Something a run noticed that may make it wrong without failing it: a `sources:` pattern that
/// matches no file, a depfile the command didn't write, an output glob that matched nothing.
///
/// Threading: a value type; safe to pass between threads.
public struct RunWarning: Sendable, Hashable, CustomStringConvertible {
    /// What was noticed and what to do.
    public var message: String
    /// Where in the Taskfile.
    public var location: SourceLocation?

    /// A warning.
    public init(_ message: String, at location: SourceLocation?) {
        self.message = message
        self.location = location
    }

    /// `file:line:column: warning: message`.
    public var description: String { "\(location.map { "\($0): " } ?? "")warning: \(message)" }
}

/// Receives the events of a run: the live status line, `--json`, `--trace` and tests implement it.
///
/// Threading: methods are called from any thread, concurrently; implementations must be
/// thread-safe. `jobFinished` is called once per job, after `jobStarted` if the job started.
public protocol RunObserver: Sendable {
    /// More jobs became known (a task's jobs, or the files of an `each:` task).
    func jobsPlanned(_ count: Int)
    /// A job started running (it holds all its resources).
    func jobStarted(_ job: JobInfo, at time: Double)
    /// A job ended. `output` is everything it printed.
    func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double)
    /// Why a job is about to run, or that it is up to date (incremental runs only).
    func jobChecked(_ job: JobInfo, reason: RunReason)
    /// Jobs found up to date without running, together (see the default implementation).
    func jobsUpToDate(_ jobs: [JobInfo], planned: Bool, at time: Double)
    /// Something that may make the run wrong without failing it; each at most once per run.
    func warning(_ warning: RunWarning)
}

extension RunObserver {
    /// Ignores the reason.
    public func jobChecked(_ job: JobInfo, reason: RunReason) {}

    /// Ignores the warning.
    public func warning(_ warning: RunWarning) {}

    /// Jobs found up to date without running, reported together (a no-op run has thousands):
    /// each is planned (when `planned`), checked and finished as `.upToDate`. Reporters that
    /// can take them in one go override it.
    public func jobsUpToDate(_ jobs: [JobInfo], planned: Bool, at time: Double) {
        if planned { jobsPlanned(jobs.count) }
        for job in jobs {
            jobChecked(job, reason: .upToDate)
            jobFinished(job, outcome: .upToDate, output: TaskOutput(), at: time)
        }
    }
}

/// Sends every event to several observers.
///
/// Threading: as its observers.
public struct RunObservers: RunObserver {
    /// The observers, in order.
    public var observers: [any RunObserver]

    /// Creates a fan-out.
    public init(_ observers: [any RunObserver]) { self.observers = observers }

    /// Forwards.
    public func jobsPlanned(_ count: Int) { for observer in observers { observer.jobsPlanned(count) } }
    /// Forwards.
    public func jobStarted(_ job: JobInfo, at time: Double) {
        for observer in observers { observer.jobStarted(job, at: time) }
    }
    /// Forwards.
    public func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        for observer in observers { observer.jobFinished(job, outcome: outcome, output: output, at: time) }
    }
    /// Forwards.
    public func jobChecked(_ job: JobInfo, reason: RunReason) {
        for observer in observers { observer.jobChecked(job, reason: reason) }
    }
    /// Forwards.
    public func jobsUpToDate(_ jobs: [JobInfo], planned: Bool, at time: Double) {
        for observer in observers { observer.jobsUpToDate(jobs, planned: planned, at: time) }
    }
    /// Forwards.
    public func warning(_ warning: RunWarning) { for observer in observers { observer.warning(warning) } }
}
