import KilnPluginAPI
import Synchronization

/// `--json`: one JSON object per line for every event of a run — `planned`, `started`,
/// `finished` (with `status` succeeded/failed/cancelled, `reason`, `duration` and `output`), and a
/// closing `run-finished`. Times are seconds since the run started.
///
/// Threading: any thread; lines are written whole under a mutex.
public final class JSONEventWriter: RunObserver {
    private let write: @Sendable (String) -> Void
    private let starts = HostMutex<[Int: Double]>([:])
    private let lock = HostMutex(())

    /// Creates a writer.
    public init(write: @escaping @Sendable (String) -> Void = ConsoleReporter.standardOutput) {
        self.write = write
    }

    /// Emits `planned`.
    public func jobsPlanned(_ count: Int) {
        guard count > 0 else { return }
        emit([("event", "planned"), ("jobs", .integer(count))])
    }

    /// Emits `started`.
    public func jobStarted(_ job: JobInfo, at time: Double) {
        starts.withLock { $0[job.id] = time }
        emit([
            ("event", "started"), ("id", .integer(job.id)), ("task", .string(job.task)), ("job", .string(job.label)),
            ("command", .string(job.summary)), ("resources", .array(job.resources.map(JSONValue.string))),
            ("time", .number(time)),
        ])
    }

    /// Emits `finished`.
    public func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        let started = starts.withLock { $0.removeValue(forKey: job.id) }
        var event: [(String, JSONValue)] = [
            ("event", "finished"), ("id", .integer(job.id)), ("task", .string(job.task)), ("job", .string(job.label)),
            ("time", .number(time)),
        ]
        switch outcome {
        case .succeeded: event.append(("status", "succeeded"))
        case .failed(let reason): event += [("status", "failed"), ("reason", .string(reason))]
        case .cancelled(let reason): event += [("status", "cancelled"), ("reason", .string(reason))]
        case .upToDate: event.append(("status", "up-to-date"))
        case .remoteHit: event.append(("status", "remote-hit"))
        }
        if let started { event.append(("duration", .number(time - started))) }
        // At most a MiB of it (its start and end, saying what was left out): an event is one line.
        if !output.isEmpty { event.append(("output", .string(output.text(limit: TaskOutput.memoryLimit)))) }
        emit(event)
    }

    /// Emits `checked`, with the reason the job runs (or `up to date`).
    public func jobChecked(_ job: JobInfo, reason: RunReason) {
        emit([
            ("event", "checked"), ("id", .integer(job.id)), ("job", .string(job.label)),
            ("runs", .bool(reason != .upToDate)), ("reason", .string(reason.description)),
        ])
    }

    /// Emits `warning`, with its message and place.
    public func warning(_ warning: RunWarning) {
        var event: [(String, JSONValue)] = [("event", "warning"), ("message", .string(warning.message))]
        if let location = warning.location {
            event += [
                ("file", .string(location.file)), ("line", .integer(location.line)),
                ("column", .integer(location.column)),
            ]
        }
        emit(event)
    }

    /// Emits `run-finished`.
    public func runFinished(_ summary: RunSummary, seconds: Double) {
        emit([
            ("event", "run-finished"), ("succeeded", .integer(summary.succeeded)), ("failed", .integer(summary.failed)),
            ("upToDate", .integer(summary.upToDate)), ("remoteHits", .integer(summary.remoteHits)),
            ("ignoredFailures", .integer(summary.ignoredFailures)),
            ("cancelled", .integer(summary.cancelled)), ("interrupted", .bool(summary.interrupted)),
            ("seconds", .number(seconds)), ("peakLiveEachJobs", .integer(summary.peakLiveEachJobs)),
            ("peakLiveTasks", .integer(summary.peakLiveTasks)),
        ])
    }

    private func emit(_ object: [(String, JSONValue)]) {
        let line = JSONValue.object(object).serialized() + "\n"
        lock.withLock { _ in write(line) }
    }
}
