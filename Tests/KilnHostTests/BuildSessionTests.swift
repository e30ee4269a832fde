import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

/// A session owns a run's whole life and reports how it ended; it never exits the process.
@Suite struct BuildSessionTests {
    static func request(_ directory: TemporaryDirectory, targets: [String] = []) -> BuildSession.Request {
        BuildSession.Request(
            taskfile: nil,
            currentDirectory: directory.path,
            plugins: PluginOptions(),
            targets: targets,
            runner: ProcessMonitor(),
            tracked: { _ in nil }
        )
    }

    static func settings(_ observer: RecordingObserver = RecordingObserver()) -> BuildSession.RunSettings {
        BuildSession.RunSettings { _ in observer }
    }

    @Test("run, then the snapshot answers the next run without loading; inspect agrees")
    func runThenUpToDate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  default:\n    sources: [in]\n    generates: [out]\n    cmds: ['cp in out']\n"
        )
        try directory.write("in", "one\n")
        guard case .ran(let summary, _, _, _, _) = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the first session didn't run")
            return
        }
        #expect(summary.succeeded == 1)
        guard case .upToDate(let jobs) = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the second session wasn't answered by the snapshot")
            return
        }
        #expect(jobs == 1)
        try directory.write("in", "two\n")
        let verdicts = try BuildSession.inspect(Self.request(directory), note: { _ in })
        #expect(verdicts.map(\.label) == ["default"])
        #expect(verdicts.first?.reason == .inputChanged("in"))
        // The inspection saved nothing: the run still has it to do.
        guard case .ran(let again, _, _, _, _) = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the third session didn't run")
            return
        }
        #expect(again.succeeded == 1)
        #expect(directory.read("out") == "two\n")
    }

    @Test(
        "outputs re-read because they were hashed as they were written are settled by the next run, even one that runs a job"
    )
    func changeRunSettlesRacyOutputs() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                each: sources
                sources: ['src/*.txt']
                generates: ['out/{{.source_stem}}.txt']
                cmds: ['mkdir -p out && cp {{.source}} {{.output}} && touch -d "@$(( $(date +%s) + 5 ))" {{.output}}']

            """
        )
        // Each output's time is set 4–5 s ahead, so it is hashed within the racy window of its
        // time however slow the machine (written at once, it was hashed 50 ms later, now and then,
        // on a loaded CI machine, and the first snapshot vouched for it).
        for name in ["a", "b", "c"] { try directory.write("src/\(name).txt", "\(name)\n") }
        for file in ["src/a.txt", "src/b.txt", "src/c.txt", "Taskfile.yml"] {
            try setModificationTime(directory.path(file), secondsAgo: 10)
        }
        /// The snapshot's entries for the outputs, and whether each can vouch by its status alone.
        func outputsSettled() throws -> [String: Bool] {
            let bytes = try #require(FileManager.default.contents(atPath: directory.path(".kiln/snapshot")))
            let snapshot = try #require(UpToDateSnapshot.decode(Array(bytes)))
            var settled: [String: Bool] = [:]
            for entry in snapshot.paths where entry.path.hasPrefix("out/") {
                settled[entry.path] = entry.stat.isSettled(at: entry.seenAt)
            }
            return settled
        }
        guard case .ran = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the first session didn't run")
            return
        }
        // Hashed as they were written: the first snapshot can't vouch for them by status.
        #expect(try outputsSettled() == ["out/a.txt": false, "out/b.txt": false, "out/c.txt": false])
        // Until the outputs' times are settled: a racy window after the latest.
        let latest =
            try ["out/a.txt", "out/b.txt", "out/c.txt"].map { file in
                try #require(FileSignature.of(directory.path(file))).modified
            }.max() ?? 0
        let wait = latest + 2 * FileSignature.racyWindow - FileSignature.now()
        if wait > 0 { usleep(UInt32(wait / 1000)) }
        try directory.write("src/a.txt", "a, edited\n")
        try setModificationTime(directory.path("src/a.txt"), secondsAgo: 5)
        guard case .ran(let summary, _, _, _, _) = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the second session didn't run")
            return
        }
        #expect(summary.succeeded == 1)
        // b and c were read once, by this run's scan, and what vouches for them now is kept: the
        // next run stats them. a was written again, so its status is fresh again.
        #expect(try outputsSettled() == ["out/a.txt": false, "out/b.txt": true, "out/c.txt": true])
    }

    @Test("a run of the whole plan holds no copy of the last snapshot's detail once it has planned")
    func wholeRunLetsGoOfTheSnapshotDetail() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var taskfile = "version: '3'\ntasks:\n"
        for index in 0..<4 {
            taskfile += "  t\(index):\n    sources: [in\(index)]\n    generates: [out\(index)]\n"
            taskfile += "    cmds: ['cp in\(index) out\(index)']\n"
            try directory.write("in\(index)", "\(index)\n")
        }
        taskfile += "  default:\n    deps: [t0, t1, t2, t3]\n"
        try directory.write("Taskfile.yml", taskfile)
        guard case .ran = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the first session didn't run")
            return
        }
        // Every output gone: every job runs, and the run takes the whole plan.
        for index in 0..<4 { try FileManager.default.removeItem(atPath: directory.path + "/out\(index)") }
        let root = directory.path
        // Each phase as it ends, with how many scans of the project hold their detail then.
        var phases: [(phase: String, scans: Int)] = []
        let outcome = try BuildSession.run(Self.request(directory), Self.settings()) { phase in
            phases.append((phase, UpToDateSnapshot.DetailToken.held(root: root)))
        }
        guard case .ran(let summary, _, _, _, _) = outcome else {
            Issue.record("the second session didn't run")
            return
        }
        #expect(summary.succeeded == 4)
        // Scanned: the scan holds its detail (so the count is of this project's scan).
        #expect(phases.first?.phase.hasPrefix("snapshot") == true)
        #expect(phases.first?.scans == 1)
        // Planned, the whole plan: no copy of the scan with its detail is left anywhere.
        let planned = phases.first { $0.phase.hasSuffix("plan") }
        #expect(planned != nil, "phases: \(phases.map { $0.phase })")
        #expect(planned?.scans == 0)
        #expect(phases.allSatisfy { !$0.phase.contains("changed part") })
        #expect(UpToDateSnapshot.DetailToken.held(root: root) == 0)
    }

    @Test("an invalid Taskfile is a failure with status 2 and its located errors; a busy project is status 3")
    func failuresAreThrownNotExited() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  default:\n    deps: [missing]\n")
        #expect {
            _ = try BuildSession.run(Self.request(directory), Self.settings())
        } throws: { error in
            guard let failure = error as? BuildSession.Failure else { return false }
            return failure.exitStatus == 2 && failure.description.contains("Taskfile.yml:4:")
        }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  default:\n    cmds: ['true']\n")
        let held = try ProjectLock(root: directory.path, wait: false)
        try withExtendedLifetime(held) {
            #expect {
                _ = try BuildSession.run(Self.request(directory), Self.settings())
            } throws: { error in
                (error as? BuildSession.Failure)?.exitStatus == 3
            }
            // Inspecting beside a run is allowed, with a note.
            var notes: [String] = []
            _ = try BuildSession.inspect(Self.request(directory), note: { notes.append($0) })
            #expect(notes.contains { $0.contains("another kiln run is using this project") })
        }
    }
}
