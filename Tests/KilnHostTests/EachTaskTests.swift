import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// `each: sources` tasks: one job per file, created in batches.
@Suite struct EachTaskTests {
    @Test func batchesBoundTheLiveJobsAndEveryFilesJobRunsExactlyOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let count = 2_000
        for index in 0..<count { try directory.write("src/f\(index).txt", "") }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  touch:
                    each: sources
                    batch: 64
                    sources: ['src/*.txt']
                    cmds: ['echo {{.source}} >> ran.log']
                """
            ]
        )
        var options = RunOptions()
        options.batchesInFlight = 2
        let (summary, observer, _) = try await run(
            taskfile,
            targets: ["touch"],
            cpuWidth: 8,
            options: options,
            within: 300
        )
        #expect(summary.failed == 0 && summary.cancelled == 0)
        #expect(summary.succeeded == count)
        #expect(summary.peakLiveEachJobs > 0)
        #expect(summary.peakLiveEachJobs <= 2 * 64)
        let lines = try #require(directory.read("ran.log")).split(separator: "\n").map(String.init)
        let expected = (0..<count).map { "src/f\($0).txt" }
        #expect(lines.sorted() == expected.sorted())
        #expect(observer.planned == count)
        #expect(Set(observer.finished.map(\.job.label)).count == count)
    }

    @Test func aDependentOfAnEachTaskStartsOnlyAfterAllItsJobsFinished() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let count = 100
        for index in 0..<count { try directory.write("src/f\(index).txt", "") }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  each:
                    each: sources
                    batch: 8
                    sources: ['src/*.txt']
                    cmds: ['echo {{.source}} >> ran.log']
                  after:
                    deps: [each]
                    cmds: ['wc -l < ran.log > count.txt']
                """
            ]
        )
        let (summary, observer, _) = try await run(taskfile, targets: ["after"], cpuWidth: 8)
        #expect(summary.succeeded == count + 1)
        #expect(directory.read("count.txt")?.split(whereSeparator: \.isWhitespace).first == "\(count)")
        let afterStart = try #require(observer.started.first { $0.job.task == "after" }?.sequence)
        let lastEach = try #require(observer.finished(task: "each").map(\.sequence).max())
        #expect(lastEach < afterStart)
    }

    @Test func aFailingFilesJobFailsTheEachTaskSoItsDependentsDoNotRun() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for index in 0..<20 { try directory.write("src/f\(index).txt", "") }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  each:
                    each: sources
                    batch: 4
                    sources: ['src/*.txt']
                    cmds: ['test {{.source_base}} != f7.txt']
                  after:
                    deps: [each]
                    cmds: [touch after.ran]
                  unrelated:
                    cmds: [touch unrelated.ran]
                """
            ]
        )
        var options = RunOptions()
        options.keepGoing = true  // so only the failure's own consequences stop anything
        let (summary, observer, _) = try await run(taskfile, targets: ["after", "unrelated"], options: options)
        #expect(!directory.exists("after.ran"))
        #expect(directory.exists("unrelated.ran"))
        let eachJobs = observer.finished(task: "each")
        #expect(eachJobs.count == 20)
        #expect(eachJobs.filter { $0.outcome != .succeeded }.map(\.job.label) == ["each src/f7.txt"])
        #expect(observer.started.allSatisfy { $0.job.task != "after" })
        let after = try #require(observer.finished(task: "after").only)
        guard case .cancelled = after.outcome else {
            Issue.record("'after' should not have run: \(after.outcome)")
            return
        }
        #expect(summary.failed == 1)
        #expect(!summary.succeededOverall)
    }
}
