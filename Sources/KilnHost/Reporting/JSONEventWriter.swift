import Foundation
import KilnPluginAPI
import Synchronization

/// `--json`: one JSON object per line for every event of a run — `planned`, `started`,
/// `finished` (with `status` succeeded/failed/cancelled, `reason`, `duration` and `output`), and a
/// closing `run-finished`. Times are seconds since the run started.
///
/// Threading: any thread; lines are written whole under a mutex.
public final class JSONEventWriter: RunObserver {
    private let write: @Sendable (String) -> Void
    private let starts = Mutex<[Int: Double]>([:])
    private let lock = Mutex(())

    /// Creates a writer.
    public init(write: @escaping @Sendable (String) -> Void = ConsoleReporter.standardOutput) {
        self.write = write
    }

    /// Emits `planned`.
    public func jobsPlanned(_ count: Int) {
        guard count > 0 else { return }
        emit(["event": "planned", "jobs": count])
    }

    /// Emits `started`.
    public func jobStarted(_ job: JobInfo, at time: Double) {
        starts.withLock { $0[job.id] = time }
        emit(["event": "started", "id": job.id, "task": job.task, "job": job.label, "command": job.summary,
              "resources": job.resources, "time": time])
    }

    /// Emits `finished`.
    public func jobFinished(_ job: JobInfo, outcome: JobOutcome, output: TaskOutput, at time: Double) {
        let started = starts.withLock { $0.removeValue(forKey: job.id) }
        var event: [String: Any] = ["event": "finished", "id": job.id, "task": job.task, "job": job.label, "time": time]
        switch outcome {
        case .succeeded: event["status"] = "succeeded"
        case .failed(let reason):
            event["status"] = "failed"
            event["reason"] = reason
        case .cancelled(let reason):
            event["status"] = "cancelled"
            event["reason"] = reason
        }
        if let started { event["duration"] = time - started }
        if !output.isEmpty { event["output"] = output.text }
        emit(event)
    }

    /// Emits `run-finished`.
    public func runFinished(_ summary: RunSummary, seconds: Double) {
        emit(["event": "run-finished", "succeeded": summary.succeeded, "failed": summary.failed,
              "cancelled": summary.cancelled, "interrupted": summary.interrupted, "seconds": seconds])
    }

    private func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        let line = String(decoding: data, as: UTF8.self) + "\n"
        lock.withLock { _ in write(line) }
    }
}
