import KilnJobs

/// A kind of task — `shell` (built in), `archive`, `http`, … — that turns a Taskfile task into jobs.
///
/// The host calls ``configuration(from:task:)`` for every task a run plans, before anything runs,
/// so a bad `with:` map stops the run with the file, line and column of the mistake. It keeps none
/// of the results: it calls ``configuration(from:task:)`` again when it makes the task's jobs (and
/// works out their signatures), so it must give the same answer for the same map; a refusal then
/// fails those jobs. It calls ``makeJob(configuration:request:context:)`` once per job: once for a
/// plain task, once per source file for an `each: sources` task.
///
/// The returned ``Job`` may be synchronous (override `main()`) or asynchronous (override
/// `start()`, call `beginExecution()`, and `finish(error:)` when the work is done — e.g. a network
/// transfer that holds no thread). The host puts it on the queue of its resource claims, records
/// its output, and treats an ``Job/error`` as the task's failure.
///
/// Threading: every requirement may be called from any thread, concurrently for different tasks
/// and jobs; implementations must be thread-safe (they are `Sendable`).
public protocol TaskKind: Sendable {
    /// The typed configuration this kind validates `with:` into.
    associatedtype Configuration: Sendable

    /// The name used in Taskfiles (`plugin: archive`); `shell` for tasks with `cmds:`.
    var name: String { get }

    /// The kind's version; it is part of every job signature, so a new version reruns its jobs.
    var version: String { get }

    /// Validates a task's configuration.
    ///
    /// - Parameters:
    ///   - value: The task's `with:` map (for the shell kind: a map with `cmds`).
    ///   - task: The task being loaded.
    /// - Returns: The typed configuration.
    /// - Throws: ``TaskConfigurationError`` naming the location of the mistake.
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration

    /// A one-line description of what a job will do (the command, for shell jobs), shown by
    /// `--dry-run` and the live status line.
    func summary(of configuration: Configuration, request: JobRequest) -> String

    /// Makes the job for one unit of work.
    ///
    /// - Throws: Any error; the host reports it as the failure of that job only.
    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job

    /// The resources a job holds when its task claims none (`resources:` in the Taskfile wins):
    /// `cpu` (the default), `disk` (the queue of the device its outputs are on), `net:HOST`, …
    func resources(of configuration: Configuration, request: JobRequest) -> [String]
}

extension TaskKind {
    /// `cpu`.
    public func resources(of configuration: Configuration, request: JobRequest) -> [String] { ["cpu"] }
}

/// What the host knows of a task when it validates its configuration.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskDescription: Sendable {
    /// The task's name, with its include namespace (`lib:compile`).
    public var name: String
    /// Where the task is defined.
    public var location: SourceLocation
    /// The Taskfile variables the task's templates may use (beside the built-ins `ROOT_DIR`,
    /// `TASK`, `TASKFILE_DIR`, and the per-source ones of `each:` tasks).
    public var variables: [String: TemplateValue]

    /// Creates a description.
    public init(name: String, location: SourceLocation, variables: [String: TemplateValue]) {
        self.name = name
        self.location = location
        self.variables = variables
    }
}

/// One job to make: its task, the files it reads and writes, and the variables of its templates.
///
/// Threading: a value type; safe to pass between threads.
public struct JobRequest: Sendable {
    /// The task's name.
    public var taskName: String
    /// A label for people: the task name, plus the source file for `each:` jobs.
    public var label: String
    /// Files the job reads, relative to ``directory``'s project root.
    public var inputs: [String]
    /// Files the job writes.
    public var outputs: [String]
    /// The resources the job holds while it runs (`cpu`, `disk:…`, `net:host`, user-defined).
    public var resources: [String]
    /// The variables its templates see: Taskfile `vars`, plus `source`, `output`, … for `each:` jobs.
    public var variables: [String: TemplateValue]
    /// The absolute directory the job works in.
    public var directory: String
    /// The environment the Taskfile declares for it (added to the host's own environment, over it).
    public var environment: [String: String]
    /// The templates' functions and parsed forms, shared by every request of a run.
    public var templates: TemplateLibrary
    /// The first of the host's own templates for this job (its `generates:`, `depfile:`) that could
    /// not be rendered: the host fails the job with it, and never counts it up to date.
    public var renderFailure: TemplateRenderError?

    /// Creates a request.
    public init(
        taskName: String,
        label: String,
        inputs: [String],
        outputs: [String],
        resources: [String],
        variables: [String: TemplateValue],
        directory: String,
        environment: [String: String],
        templates: TemplateLibrary = .standard,
        renderFailure: TemplateRenderError? = nil
    ) {
        self.taskName = taskName
        self.label = label
        self.inputs = inputs
        self.outputs = outputs
        self.resources = resources
        self.variables = variables
        self.directory = directory
        self.environment = environment
        self.templates = templates
        self.renderFailure = renderFailure
    }

    /// `template` (Go's `text/template`, as go-task reads it) rendered with ``variables``.
    ///
    /// - Parameter location: Where the template is written (a ``ConfigurationValue``'s
    ///   location), so an error names its file, line and column.
    /// - Throws: ``TemplateRenderError``: a function failed, or the template prints a variable
    ///   that isn't set.
    public func render(_ template: String, at location: SourceLocation? = nil) throws(TemplateRenderError) -> String {
        try templates.render(template, variables: variables, at: location)
    }

    /// `template` rendered for showing (a summary, a status line): as written when it can't be
    /// rendered — the job that renders it for real fails with the reason.
    public func display(_ template: String) -> String {
        (try? templates.render(template, variables: variables, at: nil)) ?? template
    }
}

/// What a running job may use from the host.
///
/// Cancellation reaches a job as ``Job/cancel()``: the host cancels running jobs on Ctrl-C, and
/// jobs not yet started after a failure. A synchronous job checks `isCancelled`; an asynchronous
/// one overrides `cancel()` to stop its work and then finishes.
///
/// Threading: all members are safe from any thread.
public struct TaskContext: Sendable {
    /// Where the job's output goes; the host prints it whole when the job ends, never interleaved.
    public var output: TaskOutput
    /// The project root (absolute).
    public var projectRoot: String
    /// The environment the job runs with: the host's, plus what the Taskfile declares for the task.
    public var environment: [String: String]

    /// Creates a context.
    public init(output: TaskOutput, projectRoot: String, environment: [String: String] = [:]) {
        self.output = output
        self.projectRoot = projectRoot
        self.environment = environment
    }

    /// Writes a line to the job's output (the host's logger for jobs: shown when the job ends,
    /// or with its failure).
    public func log(_ line: String) {
        output.write(line: line)
    }
}
