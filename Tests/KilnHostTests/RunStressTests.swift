import Foundation
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// Failures, `--keep-going`, and interrupts at random moments, on random graphs of jobs claiming
/// several resources: every run ends (a watchdog bounds it), every job is reported exactly once,
/// no job starts whose dependency didn't succeed, and no resource is ever over its width.
@Suite struct RunStressTests {
    @Test("random graphs with failures and interrupts always end, and report each job once", arguments: 0..<6)
    func randomRunsEnd(batch: Int) async throws {
        // KILN_STRESS_ROUNDS soaks it: that many rounds per batch, with seeds past the usual 60.
        let rounds = ProcessInfo.processInfo.environment["KILN_STRESS_ROUNDS"].flatMap { Int($0) } ?? 10
        for round in 0..<rounds {
            let seed = UInt64(round < 10 ? batch * 10 + round : 60 + batch * rounds + round)
            var random = SeededGenerator(seed: seed)
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let count = 30
            var text = "version: '3'\nresources:\n  x: 1\n  y: 2\ntasks:\n"
            var dependencies: [[Int]] = []
            for index in 0..<count {
                let fails = Int.random(in: 0..<100, using: &random) < 12
                let claims = ["cpu", "x", "y"].filter { _ in Bool.random(using: &random) }
                let deps =
                    index == 0
                    ? []
                    : (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: 0..<index, using: &random) }
                dependencies.append(Array(Set(deps)))
                text += "  t\(index):\n    plugin: probe\n    with: {fail: \(fails)}\n"
                if !claims.isEmpty { text += "    resources: [\(claims.joined(separator: ", "))]\n" }
                if !deps.isEmpty { text += "    deps: [\(Set(deps).map { "t\($0)" }.joined(separator: ", "))]\n" }
            }
            let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": text])
            let lab = ProbeLab()
            let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry([ProbeTaskKind(lab: lab)]))
                .plan(targets: taskfile.tasks.map(\.name))
            let queues = ResourceQueues(definitions: taskfile.resources, cpuWidth: 2)
            let observer = RecordingObserver()
            var options = RunOptions()
            options.keepGoing = Bool.random(using: &random)
            let buildRun = BuildRun(plan: plan, queues: queues, options: options, observer: RunObservers([observer]))
            let interruptAfter = round % 3 == 2 ? Int.random(in: 0...3_000, using: &random) : nil
            buildRun.start()
            if let interruptAfter {
                usleep(UInt32(interruptAfter))
                buildRun.interrupt()
            }
            guard let summary = await waitForResult(within: 60, { buildRun.wait() }) else {
                // Read before the interrupt, which ends what was stuck.
                let pending = buildRun.pendingDescription
                let reported = observer.finished.map(\.job.task)
                let ran = lab.runs
                buildRun.interrupt()
                let unreported = (0..<count).map { "t\($0)" }.filter { !reported.contains($0) }
                Issue.record(
                    "seed \(seed): the run did not end within 60 s (\(reported.count) of \(count) jobs reported, not \(unreported); probes that ran: \(ran)): \(pending)"
                )
                return
            }
            let reported = observer.finished.map(\.job.task)
            #expect(reported.count == count && Set(reported).count == count, "seed \(seed): \(reported.sorted())")
            #expect(summary.succeeded + summary.failed + summary.cancelled == count, "seed \(seed): \(summary)")
            let outcomes = Dictionary(
                observer.finished.map { ($0.job.task, $0.outcome) },
                uniquingKeysWith: { first, _ in first }
            )
            for started in observer.started {
                let index = Int(started.job.task.dropFirst())!
                for dependency in dependencies[index] {
                    #expect(
                        outcomes["t\(dependency)"] == .succeeded,
                        "seed \(seed): t\(index) started though t\(dependency) didn't succeed"
                    )
                }
            }
            let peaks = lab.peaks
            #expect(
                (peaks["x"] ?? 0) <= 1 && (peaks["y"] ?? 0) <= 2 && (peaks["cpu"] ?? 0) <= 2,
                "seed \(seed): \(peaks)"
            )
        }
    }
}
