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
        guard case .ran(let summary, _, _, _) = try BuildSession.run(Self.request(directory), Self.settings()) else {
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
        guard case .ran(let again, _, _, _) = try BuildSession.run(Self.request(directory), Self.settings()) else {
            Issue.record("the third session didn't run")
            return
        }
        #expect(again.succeeded == 1)
        #expect(directory.read("out") == "two\n")
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
