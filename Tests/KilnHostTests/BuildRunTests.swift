import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// Runs of shell and probe tasks: output, failures, stopping and `--keep-going`, `dir:` and `env:`.
@Suite struct BuildRunTests {
    @Test("the live-task window bounds how many tasks' jobs exist at once, and every task runs")
    func theLiveTaskWindowBoundsTheLiveTasks() async throws {
        let count = 600
        var text = "version: '3'\ntasks:\n"
        for index in 0..<count { text += "  t\(index):\n    cmds: ['echo \(index) >> ran.log']\n" }
        text += "  default:\n    deps: [\((0..<count).map { "t\($0)" }.joined(separator: ", "))]\n"
        // The default window at -j2 (256), then one set by hand.
        for (window, expected) in [(nil, 256), (7, 7)] as [(Int?, Int)] {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": text])
            var options = RunOptions()
            options.liveTaskWindow = window
            let (summary, _, _) = try await run(taskfile, targets: ["default"], cpuWidth: 2, options: options)
            #expect(summary.failed == 0 && summary.cancelled == 0)
            #expect(summary.succeeded == count)
            #expect(summary.peakLiveTasks > 0 && summary.peakLiveTasks <= expected, "\(summary)")
            let lines = try #require(directory.read("ran.log")).split(separator: "\n")
            #expect(Set(lines).count == count && lines.count == count)
        }
    }

    @Test("a run checks at most 64 tasks ahead of their jobs, and holds no more verdicts than that")
    func prechecksAreBatched() async throws {
        let count = 600
        var text = "version: '3'\ntasks:\n"
        for index in 0..<count {
            text += "  t\(index):\n    sources: [src/\(index).txt]\n    cmds: ['echo \(index) >> ran.log']\n"
        }
        text += "  default:\n    deps: [\((0..<count).map { "t\($0)" }.joined(separator: ", "))]\n"
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var files = ["Taskfile.yml": text]
        for index in 0..<count { files["src/\(index).txt"] = "\(index)\n" }
        let taskfile = try loadTaskfile(in: directory, files)
        var options = RunOptions()
        options.incremental = IncrementalState(state: nil, root: directory.path, plannedTasks: count + 1)
        let (summary, _, _) = try await run(taskfile, targets: ["default"], cpuWidth: 2, options: options)
        #expect(summary.succeeded == count && summary.failed == 0)
        // Every task was checked ahead (none is up to date), in batches of 64 at -j2.
        #expect(summary.peakPrechecked > 1 && summary.peakPrechecked <= 64, "\(summary)")
        let lines = try #require(directory.read("ran.log")).split(separator: "\n")
        #expect(Set(lines).count == count && lines.count == count)
    }

    @Test("the default live-task window: 16 tasks per cpu slot, at least 256, at least 512 with a remote")
    func theDefaultLiveTaskWindow() {
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 1, remote: false) == 256)
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 2, remote: false) == 256)
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 16, remote: false) == 256)
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 32, remote: false) == 512)
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 2, remote: true) == 512)
        #expect(RunOptions.defaultLiveTaskWindow(cpuWidth: 64, remote: true) == 1024)
    }

    @Test func aJobsOutputIsCapturedWholeStandardOutputAndErrorTogether() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  talk:
                    cmds:
                      - 'i=1; while [ $i -le 300 ]; do echo "out $i"; i=$((i+1)); done'
                      - echo err >&2
                      - printf 'no newline'
                """
            ]
        )
        let (summary, observer, _) = try await run(taskfile, targets: ["talk"])
        #expect(summary.succeeded == 1)
        let expected = (1...300).map { "out \($0)\n" }.joined() + "err\nno newline"
        #expect(observer.finished(task: "talk").only?.output == expected)
    }

    @Test func aNonZeroExitFailsTheJobNamingTheCommandAndCancelsItsDependents() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  broken:
                    cmds:
                      - echo before
                      - echo failing; exit 3
                      - touch never.ran
                  dependent:
                    deps: [broken]
                    cmds: [touch dependent.ran]
                """
            ]
        )
        let (summary, observer, _) = try await run(taskfile, targets: ["dependent"])
        let broken = try #require(observer.finished(task: "broken").only)
        #expect(broken.outcome == .failed("exit status 3: echo failing; exit 3"))
        #expect(broken.output == "before\nfailing\n")
        #expect(!directory.exists("never.ran"))
        #expect(!directory.exists("dependent.ran"))
        let dependent = try #require(observer.finished(task: "dependent").only)
        guard case .cancelled = dependent.outcome else {
            Issue.record("'dependent' should not have run: \(dependent.outcome)")
            return
        }
        #expect(summary.failed == 1 && summary.cancelled == 1 && summary.succeeded == 0)
    }

    @Test func afterAFailureNoJobWaitingForTheFailedJobsSlotsStarts() async throws {
        // The failing job holds the only cpu slot (it is first in line); five jobs wait for it.
        // When it fails, none of them may start — 20 rounds, since a wrong order of releasing the
        // slots and stopping the run would let one slip through only sometimes.
        for _ in 0..<20 {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            var text = """
                version: '3'
                resources:
                  x: 1
                tasks:
                  fail:
                    plugin: probe
                    with: {fail: true}
                    resources: [cpu, x]

                """
            for index in 0..<5 { text += "  waiter\(index):\n    plugin: probe\n    resources: [cpu]\n" }
            let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": text])
            let lab = ProbeLab()
            let (summary, observer, _) = try await run(
                taskfile,
                targets: taskfile.tasks.map(\.name),
                kinds: [ProbeTaskKind(lab: lab)],
                cpuWidth: 1,
                within: 30
            )
            #expect(observer.started.map(\.job.task) == ["fail"])
            #expect(summary.failed == 1 && summary.cancelled == 5)
        }
    }

    @Test func afterAFailureAJobThatBecomesReadyLaterDoesNotStart() async throws {
        // Many sentinels wait for the failing job and many `after` jobs for `hold`. The stop
        // cancels them one by one; the moment the first sentinel is reported, on the thread that
        // reports it, `hold` is let go. An `after` job the stop hadn't reached yet would then
        // become ready and start (the first version of this test, with one of each and the test
        // polling for the sentinel, caught that one run in forty under load).
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fanOut = 150
        var text = """
            version: '3'
            tasks:
              fail:
                plugin: probe
                with: {fail: true}
              hold:
                plugin: probe

            """
        for index in 0..<fanOut {
            text += "  sentinel\(index):\n    deps: [fail]\n    plugin: probe\n"
            text += "  after\(index):\n    deps: [hold]\n    plugin: probe\n"
        }
        let taskfile = try loadTaskfile(in: directory, ["Taskfile.yml": text])
        let lab = ProbeLab()
        lab.hold("fail")
        lab.hold("hold")
        let targets = (0..<fanOut).flatMap { ["sentinel\($0)", "after\($0)"] }
        let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry([ProbeTaskKind(lab: lab)]))
            .plan(targets: targets)
        let observer = RecordingObserver { job in
            if job.task.hasPrefix("sentinel") { lab.open("hold") }
        }
        let buildRun = BuildRun(
            plan: plan,
            queues: ResourceQueues(definitions: [], cpuWidth: 4),
            options: RunOptions(),
            observer: observer
        )
        buildRun.start()
        defer { buildRun.interrupt() }
        #expect(await waitForResult(within: 30) { lab.waitUntilStarted("fail", seconds: 30) } == true)
        #expect(await waitForResult(within: 30) { lab.waitUntilStarted("hold", seconds: 30) } == true)
        lab.open("fail")
        let summary = try #require(await waitForResult(within: 30) { buildRun.wait() })
        let ran = lab.runs.keys.filter { $0.hasPrefix("after") }.sorted()
        #expect(ran.isEmpty, "started after the stop: \(ran)")
        #expect(observer.started.allSatisfy { !$0.job.task.hasPrefix("after") })
        #expect(summary.failed == 1)
        #expect(summary.succeeded == 1)  // `hold`, which was running, finishes
        #expect(summary.cancelled == 2 * fanOut)
    }

    @Test func keepGoingRunsEverythingThatDoesNotDependOnTheFailure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  fail: exit 1
                  dependent:
                    deps: [fail]
                    cmds: [touch dependent.ran]
                  indirect:
                    deps: [dependent]
                    cmds: [touch indirect.ran]
                  a: touch a.ran
                  b:
                    deps: [a]
                    cmds: [touch b.ran]
                  c: touch c.ran
                """
            ]
        )
        var options = RunOptions()
        options.keepGoing = true
        let (summary, _, _) = try await run(
            taskfile,
            targets: ["indirect", "b", "c"],
            cpuWidth: 1,
            options: options
        )
        #expect(directory.exists("a.ran") && directory.exists("b.ran") && directory.exists("c.ran"))
        #expect(!directory.exists("dependent.ran") && !directory.exists("indirect.ran"))
        #expect(summary.succeeded == 3 && summary.failed == 1 && summary.cancelled == 2)
    }

    @Test func theTasksDirectoryAndEnvironmentReachItsCommands() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.makeDirectory("sub/dir")
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                env:
                  GLOBAL: from-file
                  KEPT: kept
                tasks:
                  show:
                    dir: sub/dir
                    env:
                      LOCAL: from-task
                      GLOBAL: overridden
                    cmds:
                      - pwd > {{.ROOT_DIR}}/pwd.txt
                      - echo "$LOCAL $GLOBAL $KEPT" > {{.ROOT_DIR}}/env.txt
                      - test -n "$PATH"
                """
            ]
        )
        let (summary, _, _) = try await run(taskfile, targets: ["show"])
        #expect(summary.succeeded == 1)
        #expect(directory.read("pwd.txt") == directory.path("sub/dir") + "\n")
        #expect(directory.read("env.txt") == "from-task overridden kept\n")
    }

    @Test func aMissingDirectoryIsMadeAndOneThatCantBeFailsTheJobNamingIt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  lost:
                    dir: file.txt/nowhere
                    cmds: [touch ../../lost.ran]
                  made:
                    dir: build/sub
                    cmds: [touch ../../made.ran]
                """,
                "file.txt": "a file, not a directory\n",
            ]
        )
        // A missing directory is made first, as go-task does.
        let (made, _, _) = try await run(taskfile, targets: ["made"])
        #expect(made.succeeded == 1)
        #expect(directory.exists("made.ran"))
        // One that can't be made fails the job, naming it.
        let (summary, observer, _) = try await run(taskfile, targets: ["lost"])
        #expect(summary.failed == 1)
        let lost = try #require(observer.finished(task: "lost").only)
        guard case .failed(let reason) = lost.outcome else {
            Issue.record("expected a failure, got \(lost.outcome)")
            return
        }
        #expect(reason.contains(directory.path("file.txt/nowhere")))
        #expect(reason.contains("can't make its directory"))
        #expect(!directory.exists("lost.ran"))
    }
}
