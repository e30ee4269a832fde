import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C and SIGTERM: `kiln` stops every command — with everything the commands started — and
/// exits with 130.
@Suite struct InterruptTests {
    /// Long commands with background grandchildren (some nested a level deeper), and one that
    /// ignores SIGTERM, so only SIGKILL after the grace period stops it.
    static let tasks = """
          spawner: '{{.SLEEP}} 1000 & {{.SLEEP}} 1001 & touch spawner.started; {{.SLEEP}} 1002'
          nested: 'sh -c "{{.SLEEP}} 1003 & {{.SLEEP}} 1004 & touch nested.started; wait"; {{.SLEEP}} 1005'
          trapper: "trap '' TERM; {{.SLEEP}} 1006 & touch trapper.started; {{.SLEEP}} 1007"
        """

    @Test func ctrlCStopsEveryCommandAndWhatItStartedAndExitsWithStatus130() async throws {
        try await expectInterruption(by: SIGINT, tasks: Self.tasks, started: ["spawner", "nested", "trapper"])
    }

    @Test func sigtermStopsEveryCommandAndWhatItStartedAndExitsWithStatus130() async throws {
        try await expectInterruption(by: SIGTERM, tasks: Self.tasks, started: ["spawner", "nested", "trapper"])
    }

    @Test("after kill -9 of kiln, no command it started (nor what those started) keeps running")
    func killNineLeavesNothingRunning() async throws {
        try await expectInterruption(by: SIGKILL, tasks: Self.tasks, started: ["spawner", "nested", "trapper"])
    }

    @Test func aBackgroundGrandchildThatIgnoresSIGTERMIsStoppedEvenAfterItsShellExited() async throws {
        // The command's shell dies of SIGTERM at once; the grandchild it started ignores SIGTERM
        // and still holds the output pipe.
        let tasks = """
              stubborn: 'sh -c "trap \\"\\" TERM; touch stubborn.started; exec {{.SLEEP}} 1008" & {{.SLEEP}} 1009'
            """
        try await expectInterruption(by: SIGINT, tasks: tasks, started: ["stubborn"])
    }

    @Test("Ctrl-C stops a task's command, then its defer: commands run (go-task's clean-up), and kiln exits 130")
    func deferredCommandsRunAfterAnInterruption() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                cmds:
                  - defer: echo "cleaned {{.EXIT_CODE}}" > cleaned.txt
                  - touch started.txt; sleep 1000
                  - echo never > never.txt
            """
        )
        guard let result = try await interruptOnceStarted(in: directory) else { return }
        #expect(result.status == 130, "\(result)")
        // The shell died of SIGTERM: 128 + 15.
        #expect(directory.read("cleaned.txt") == "cleaned 143\n", "\(result)")
        #expect(!directory.exists("never.txt"))
    }

    @Test(
        "after Ctrl-C a task's defer: commands run and its deferred calls don't (documented), and the run ends at once with 130"
    )
    func deferredCallsDoNotRunAfterAnInterruption() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                cmds:
                  - defer: {task: clean}
                  - task: first
                  - defer: echo "cleaned {{.EXIT_CODE}}" > cleaned.txt
                  - touch started.txt; sleep 1000
              first: 'true'
              clean: echo called > called.txt
            """
        )
        guard let result = try await interruptOnceStarted(in: directory) else { return }
        #expect(result.status == 130, "\(result)")
        #expect(directory.read("cleaned.txt") == "cleaned 143\n", "\(result)")
        #expect(!directory.exists("called.txt"), "\(result)")
    }

    /// Runs `kiln run` in `directory`, sends Ctrl-C (SIGINT) once a command has written
    /// `started.txt`, and returns how kiln ended; `nil` (recorded) when nothing started.
    private func interruptOnceStarted(in directory: TemporaryDirectory) async throws -> KilnProcess.Result? {
        let kiln = try KilnProcess.start(["run"], in: directory.path)
        guard await waitUntil(within: 60, { directory.exists("started.txt") }) else {
            kiln.send(SIGKILL)
            Issue.record("the command did not start")
            return nil
        }
        kiln.send(SIGINT)
        return try await kiln.wait(within: 60)
    }

    /// Runs `kiln run` on `tasks` (a `default` task depends on every name in `started`), waits
    /// until each of those has written `NAME.started`, sends `signal`, and expects status 130 and
    /// no process left whose command line holds the test's marker.
    private func expectInterruption(
        by signal: Int32,
        tasks: String,
        started: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Every process of the test has the marker on its command line: the shells (in their
        // command text) and the sleeps (in the name of the link they run through).
        let marker = "kiln-orphan-" + String(UInt64.random(in: .min ... .max), radix: 16)
        try directory.makeDirectory("bin")
        let sleeper = directory.path("bin/\(marker)-sleep")
        try FileManager.default.createSymbolicLink(atPath: sleeper, withDestinationPath: "/bin/sleep")
        defer { for process in processes(containing: marker) { kill(process.pid, SIGKILL) } }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            vars:
              SLEEP: \(sleeper)
            tasks:
            \(tasks)
              default:
                deps: [\(started.joined(separator: ", "))]
            """
        )

        let kiln = try KilnProcess.start(["run", "-j8"], in: directory.path, sourceLocation: sourceLocation)
        let running = await waitUntil(within: 60) { started.allSatisfy { directory.exists("\($0).started") } }
        guard running else {
            kiln.send(SIGKILL)
            let result = try? await kiln.wait(within: 30, sourceLocation: sourceLocation)
            Issue.record("the commands did not start\n\(result.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
            return
        }
        kiln.send(signal)
        let result = try await kiln.wait(within: 60, sourceLocation: sourceLocation)
        if signal == SIGKILL {
            // Nothing of kiln runs after SIGKILL: its guardian process cleans up.
            #expect(result.signal == SIGKILL, "\(result)", sourceLocation: sourceLocation)
        } else {
            #expect(result.status == 130, "\(result)", sourceLocation: sourceLocation)
            #expect(result.standardOutput.contains("kiln: interrupted"), "\(result)", sourceLocation: sourceLocation)
        }
        // Processes killed as kiln exits may take a moment to disappear.
        let gone = await waitUntil(within: 10) { processes(containing: marker).isEmpty }
        let left = processes(containing: marker).map { "\($0.pid): \($0.commandLine)" }
        #expect(
            gone,
            "processes left behind after kiln exited:\n\(left.joined(separator: "\n"))",
            sourceLocation: sourceLocation
        )
    }
}
