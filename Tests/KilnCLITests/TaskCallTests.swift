import Foundation
import KilnTestSupport
import Testing

/// `- task:` calls and tasks called with variables, where kiln's behaviour is its own to check:
/// the incremental state across runs, failures, what can be run by name, and the limits. (What
/// the calls run is compared with go-task in ``GoTaskCompatibilityTests``.)
@Suite struct TaskCallTests {
    func project(_ taskfile: String) throws -> TemporaryDirectory {
        try taskfileProject(taskfile, prefix: "kiln-calls")
    }

    @Test("a wildcard task runs by any name it matches, after a run that cached the Taskfile without that name")
    func wildcardAfterCache() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              plain: 'true'
              start-*:
                cmds: ['echo {{index .MATCH 0}} >> started.txt']
            """
        )
        defer { directory.remove() }
        for target in ["plain", "start-web", "start-db", "plain", "start-web"] {
            let result = try await KilnProcess.run(["run", target], in: directory.path)
            #expect(result.status == 0, "\(target): \(result)")
        }
        #expect(directory.read("started.txt") == "web\ndb\nweb\n")
        // A name no task matches is still unknown.
        let unknown = try await KilnProcess.run(["run", "stop-web"], in: directory.path)
        #expect(unknown.status == 2 && unknown.standardError.contains("no task named 'stop-web'"), "\(unknown)")
    }

    @Test("for: sources on a dependency finds the files as they are at each run (such a Taskfile isn't cached)")
    func loopOverSourcesEachRun() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              main:
                sources: ['*.in']
                deps:
                  - for: sources
                    task: show
                    vars: {FILE: '{{.ITEM}}'}
                cmds: ['true']
              show:
                cmds: ['echo {{.FILE}} >> seen.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("a.in", "")
        let first = try await KilnProcess.run(["run", "main"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        try directory.write("b.in", "")
        let second = try await KilnProcess.run(["run", "main"], in: directory.path)
        #expect(second.status == 0, "\(second)")
        // The second run's two calls run side by side: their lines in either order.
        let lines = (directory.read("seen.txt") ?? "").split(separator: "\n")
        #expect(lines.first == "a.in" && lines.dropFirst().sorted() == ["a.in", "b.in"], "\(lines)")
    }

    @Test("a called task is checked when called: a command before the call that removes its output reruns it")
    func checkedWhenCalled() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              build:
                cmds:
                  - rm -f out.txt
                  - task: gen
                  - cat out.txt >> seen.txt
              gen:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['cp in.txt out.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "data\n")
        for _ in 0..<3 {
            let result = try await KilnProcess.run(["run", "build"], in: directory.path)
            #expect(result.status == 0, "\(result)")
        }
        // The snapshot taken when a run starts saw out.txt; the command before the call removed it.
        #expect(directory.read("seen.txt") == "data\ndata\ndata\n")
        // Called on its own, with nothing removed, it is up to date.
        let alone = try await KilnProcess.run(["run", "gen"], in: directory.path)
        #expect(alone.status == 0 && alone.standardOutput.contains("1 up to date"), "\(alone)")
    }

    @Test("each instance with sources has its own state: up to date on the next run, rerun when an input changes")
    func instancesAreIncremental() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              all:
                deps:
                  - task: copy
                    vars: {TO: a.out}
                  - task: copy
                    vars: {TO: b.out}
              copy:
                sources: [in.txt]
                generates: ['{{.TO}}']
                cmds: ['cp in.txt {{.TO}}', 'echo {{.TO}} >> log.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "x\n")
        let first = try await KilnProcess.run(["run", "all"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        #expect(
            first.standardOutput.contains("copy (TO=a.out)") && first.standardOutput.contains("copy (TO=b.out)"),
            "\(first)"
        )
        let second = try await KilnProcess.run(["run", "all"], in: directory.path)
        #expect(second.status == 0 && second.standardOutput.contains("0 ran, 2 up to date"), "\(second)")
        try directory.write("in.txt", "y\n")
        let third = try await KilnProcess.run(["run", "all"], in: directory.path)
        #expect(third.status == 0 && third.standardOutput.contains("2 ran"), "\(third)")
        #expect(directory.read("log.txt")?.split(separator: "\n").count == 4)
    }

    @Test("with --keep-going, a caller that fails leaves its called task unrun (reported), and the run ends")
    func failedCallerKeepGoing() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              default:
                deps: [bad, good]
              bad:
                cmds:
                  - exit 3
                  - task: called
              good:
                cmds:
                  - task: other
              called:
                deps: [inner]
                cmds: ['echo called > called.txt']
              inner:
                cmds: ['echo inner > inner.txt']
              other:
                cmds: ['echo other > other.txt']
            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "--keep-going"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(directory.read("other.txt") == "other\n")
        #expect(directory.read("called.txt") == nil && directory.read("inner.txt") == nil)
        #expect(result.standardOutput.contains("1 failed"), "\(result)")
    }

    @Test("a task both depended on and called runs once per run, before the call needs it")
    func calledAndDependedOn() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              default:
                deps: [shared, caller]
              caller:
                cmds:
                  - echo caller >> order.txt
                  - task: shared
                  - echo after >> order.txt
              shared:
                cmds: ['echo shared >> shared.txt']
            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("shared.txt") == "shared\n", "once per run")
        #expect(directory.read("order.txt") == "caller\nafter\n")
    }

    @Test("the pieces kiln makes are not listed and can't be run by name")
    func piecesAreHidden() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              main:
                cmds:
                  - echo one
                  - task: other
                    vars: {N: 1}
                  - echo two
              other:
                cmds: ['echo {{.N}}']
            """
        )
        defer { directory.remove() }
        let list = try await KilnProcess.run(["list"], in: directory.path)
        #expect(list.status == 0, "\(list)")
        #expect(
            list.standardOutput.split(separator: "\n").map { $0.split(separator: ":").first ?? "" } == [
                "* main", "* other",
            ]
        )
        let piece = try await KilnProcess.run(["run", "main #1"], in: directory.path)
        #expect(piece.status == 2, "\(piece)")
        #expect(piece.standardError.contains("'main #1' is a piece of task 'main'"), "\(piece)")
        // Nor named when there is no default task to run.
        let nothing = try await KilnProcess.run(["run"], in: directory.path)
        #expect(nothing.status == 2 && nothing.standardError.contains("name one of: main, other\n"), "\(nothing)")
    }

    @Test("a task that calls itself with new variables each time stops at kiln's limit, at the call")
    func unboundedRecursion() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              count:
                cmds:
                  - task: count
                    vars: {N: '{{.N | default 0 | add 1}}'}
            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "count"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.standardError.contains(
                "Taskfile.yml:5:15: error: more than 1000 tasks called with different variables"
            ),
            "\(result)"
        )
        // Without variables, a task calling itself is a cycle.
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  loop:\n    cmds:\n      - echo x\n      - task: loop\n"
        )
        let cycle = try await KilnProcess.run(["run", "loop"], in: directory.path)
        #expect(cycle.status == 2 && cycle.standardError.contains("dependency cycle: loop"), "\(cycle)")
    }

    @Test("a file included under several namespaces is one task under several names; with other variables, two")
    func repeatedIncludes() async throws {
        let directory = try project(
            """
            version: '3'
            includes:
              common: ./build/Taskfile.yml
              windows: ./build/windows/Taskfile.yml
            vars:
              APP: demo
            tasks:
              default:
                deps: ['common:icons', 'windows:build']
            """
        )
        defer { directory.remove() }
        try directory.write(
            "build/Taskfile.yml",
            """
            version: '3'
            tasks:
              icons:
                desc: Makes the icons
                generates: [icons.txt]
                cmds: ['echo {{.APP}} >> icons.txt']
              named:
                cmds: ['echo {{.TASK}} >> names.txt']
            """
        )
        try directory.write(
            "build/windows/Taskfile.yml",
            """
            version: '3'
            includes:
              common: ../Taskfile.yml
            vars:
              UNUSED: only here
            tasks:
              build:
                deps: ['common:icons']
                cmds: ['echo build >> build.txt']
            """
        )
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("icons.txt") == "demo\n", "one task, run once")
        let list = try await KilnProcess.run(["list"], in: directory.path)
        #expect(
            list.standardOutput.contains("* windows:common:icons:") && list.standardOutput.contains("Makes the icons"),
            "\(list)"
        )
        // `{{.TASK}}` tells the names apart: two tasks.
        let named = try await KilnProcess.run(["run", "common:named", "windows:common:named"], in: directory.path)
        #expect(named.status == 0, "\(named)")
        #expect(
            directory.read("names.txt")?.split(separator: "\n").sorted() == ["common:named", "windows:common:named"]
        )
        // The windows file gives the common one another APP: two tasks writing one file.
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            includes:
              common: ./build/Taskfile.yml
              windows:
                taskfile: ./build/windows/Taskfile.yml
                vars: {APP: other}
            vars:
              APP: demo
            tasks:
              default:
                deps: ['common:icons', 'windows:build']
            """
        )
        let clash = try await KilnProcess.run(["run"], in: directory.path)
        #expect(clash.status == 2, "\(clash)")
        #expect(clash.standardError.contains("both declare the output icons.txt"), "\(clash)")
    }

    @Test("what a task names wrongly is reported when a run plans it, at its place: the rest of the Taskfile works")
    func deferredMistakes() async throws {
        let directory = try project(
            """
            version: '3'
            run: once
            tasks:
              good:
                cmds: ['echo good > good.txt']
              broken:
                cmds:
                  - task: formt
              windows-only:
                cmds:
                  - task: good
                    platforms: [windows]
              same:
                deps:
                  - task: gen
                    vars: {V: 1}
                cmds:
                  - task: gen
                    vars: {V: 1}
              differ:
                deps:
                  - task: gen
                    vars: {V: 1}
                  - task: gen
                    vars: {V: 2}
              gen:
                cmds: ['echo {{.V}} >> gen.txt']
            """
        )
        defer { directory.remove() }
        let list = try await KilnProcess.run(["list"], in: directory.path)
        #expect(list.status == 0, "\(list)")
        let good = try await KilnProcess.run(["run", "good"], in: directory.path)
        #expect(good.status == 0 && directory.read("good.txt") == "good\n", "\(good)")
        let broken = try await KilnProcess.run(["run", "broken"], in: directory.path)
        #expect(broken.status == 2, "\(broken)")
        #expect(
            broken.standardError.contains("Taskfile.yml:8:15: error: unknown task 'formt' in the calls of 'broken'"),
            "\(broken)"
        )
        let platforms = try await KilnProcess.run(["run", "windows-only"], in: directory.path)
        #expect(
            platforms.status == 2
                && platforms.standardError.contains(
                    "Taskfile.yml:12:9: error: this call's 'platforms:' leave this machine out, but go-task ignores 'platforms:'"
                ),
            "\(platforms)"
        )
        // run: once with the same variables everywhere is one run of them.
        let same = try await KilnProcess.run(["run", "same"], in: directory.path)
        #expect(same.status == 0 && directory.read("gen.txt") == "1\n", "\(same)")
        let differ = try await KilnProcess.run(["run", "differ"], in: directory.path)
        #expect(
            differ.status == 2
                && differ.standardError.contains(
                    "Taskfile.yml:24:15: error: task 'gen' has 'run: once' and is called with other variables"
                ),
            "\(differ)"
        )
    }

    @Test("a task's own dynamic variables run only when a run needs the task (go-task's rule); a listing runs none")
    func dynamicVariablesRunForTheTasksARunNeeds() async throws {
        let directory = try project(
            """
            version: '3'
            vars:
              FILE_LEVEL: {sh: 'echo file >> ran.txt; echo f'}
            tasks:
              other:
                cmds: ['echo other']
              deploy:
                vars:
                  TOKEN: {sh: 'echo deploy >> ran.txt; echo secret'}
                cmds: ['echo {{.TOKEN}} > token.txt']
              parent:
                cmds:
                  - task: called
                    vars: {WHO: p}
              called:
                vars:
                  STAMP: {sh: 'echo called-{{.WHO}} >> ran.txt; echo stamp'}
                cmds: ['echo {{.STAMP}} {{.WHO}} > called.txt']
            """
        )
        defer { directory.remove() }
        func ran() -> [String] { (directory.read("ran.txt") ?? "").split(separator: "\n").map(String.init) }
        let list = try await KilnProcess.run(["list"], in: directory.path)
        #expect(list.status == 0, "\(list)")
        #expect(ran() == [], "a listing runs no dynamic variable: \(ran())")
        let other = try await KilnProcess.run(["run", "other"], in: directory.path)
        #expect(other.status == 0, "\(other)")
        #expect(ran() == ["file"], "only the file's own: \(ran())")
        let deploy = try await KilnProcess.run(["run", "deploy"], in: directory.path)
        #expect(deploy.status == 0 && directory.read("token.txt") == "secret\n", "\(deploy)")
        #expect(ran() == ["file", "file", "deploy"], "\(ran())")
        let parent = try await KilnProcess.run(["run", "parent"], in: directory.path)
        #expect(parent.status == 0 && directory.read("called.txt") == "stamp p\n", "\(parent)")
        #expect(ran().suffix(2) == ["file", "called-p"], "the called instance's, with the call's variables: \(ran())")
    }

    @Test("a file included twice whose task has its own dynamic variable is still one task when a run needs one copy")
    func repeatedIncludesWithDynamicVariables() async throws {
        let directory = try project(
            """
            version: '3'
            includes:
              common: ./build/Taskfile.yml
              windows: ./build/windows/Taskfile.yml
            tasks:
              default:
                deps: ['common:icons']
            """
        )
        defer { directory.remove() }
        try directory.write(
            "build/Taskfile.yml",
            """
            version: '3'
            tasks:
              icons:
                vars:
                  STAMP: {sh: 'echo ran >> sh.txt; echo stamp'}
                generates: [icons.txt]
                cmds: ['echo {{.STAMP}} > icons.txt']
            """
        )
        try directory.write(
            "build/windows/Taskfile.yml",
            "version: '3'\nincludes:\n  common: ../Taskfile.yml\ntasks:\n  build:\n    deps: ['common:icons']\n"
        )
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("icons.txt") == "stamp\n")
        #expect(directory.read("sh.txt") == "ran\n", "the same command, run once for both copies")
    }
}

extension TaskCallTests {
    @Test(
        "a deferred call runs only when its task's commands run: skipped (not failed) when the task is up to date; the end waits for it"
    )
    func deferredCallOfAnUpToDateTask() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              build:
                sources: [in.txt]
                generates: [out.txt]
                cmds:
                  - defer: {task: note, vars: {WHAT: built}}
                  - cp in.txt out.txt
              after:
                deps: [build]
                cmds: ['cat notes.txt > seen.txt']
              note: echo "noted {{.WHAT}}" >> notes.txt
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "one")
        let first = try await KilnProcess.run(["run", "after"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        // What depends on the task waits for its clean-up.
        #expect(directory.read("seen.txt") == "noted built\n")
        let second = try await KilnProcess.run(["run", "after"], in: directory.path)
        #expect(second.status == 0, "\(second)")
        #expect(
            !second.standardOutput.contains("did not run") && !second.standardOutput.contains("FAILED"),
            "\(second)"
        )
        #expect(directory.read("notes.txt") == "noted built\n", "up to date: the clean-up isn't needed")
        try directory.write("in.txt", "two")
        let third = try await KilnProcess.run(["run", "build"], in: directory.path)
        #expect(third.status == 0, "\(third)")
        #expect(directory.read("notes.txt") == "noted built\nnoted built\n")
    }
    @Test(
        "a task with calls and sources is decided at its first piece and recorded at its last: no-ops, edits, missing outputs, shared calls"
    )
    func tasksDecidedWhole() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              docs:
                sources: [in.txt]
                generates: [out.txt]
                cmds:
                  - echo docs >> log.txt
                  - task: gen
                  - cp in.txt out.txt
                  - task: shared
              other:
                cmds:
                  - task: shared
              gen:
                cmds: ['echo gen >> log.txt']
              shared:
                cmds: ['echo shared >> log.txt']
              after:
                deps: [docs]
                sources: [out.txt]
                cmds: ['echo after >> log.txt']
              both:
                deps: [after, other]
              broken:
                sources: [in.txt]
                generates: [never.txt]
                cmds:
                  - task: gen
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "one")
        func run(_ arguments: String...) async throws -> KilnProcess.Result {
            try await KilnProcess.run(["run"] + arguments, in: directory.path)
        }
        func log() -> String {
            defer { unlink(directory.path("log.txt")) }
            return directory.read("log.txt") ?? ""
        }
        let first = try await run("after")
        #expect(first.status == 0, "\(first)")
        #expect(log() == "docs\ngen\nshared\nafter\n")
        // Up to date: none of its pieces, none of its calls, nothing after it.
        let again = try await run("after")
        #expect(again.standardOutput.contains("0 ran, 6 up to date"), "\(again)")
        #expect(log() == "")
        // Another caller still calls the shared task; the up-to-date one doesn't.
        let both = try await run("both")
        #expect(both.status == 0, "\(both)")
        #expect(log() == "shared\n")
        // The same input again: the task runs whole, and what follows it, whose input came out
        // the same, doesn't (early cutoff).
        try directory.write("in.txt", "one")
        try directory.write("log.txt", "")
        let touched = try await run("after")
        #expect(touched.status == 0 && log() == "", "\(touched)")
        try directory.write("in.txt", "two")
        let changed = try await run("after")
        #expect(changed.status == 0, "\(changed)")
        #expect(log() == "docs\ngen\nshared\nafter\n")
        // Kiln's own rule (go-task's checksum covers only the sources): a command after a call
        // is part of what decides the task.
        let taskfile = directory.read("Taskfile.yml") ?? ""
        try directory.write(
            "Taskfile.yml",
            taskfile.replacingOccurrences(of: "cp in.txt out.txt", with: "cp in.txt out.txt; true")
        )
        let edited = try await run("after")
        #expect(edited.status == 0, "\(edited)")
        #expect(log() == "docs\ngen\nshared\n")
        // A dry run says what would run: all of it, or none.
        unlink(directory.path("out.txt"))
        let dry = try await run("--dry-run", "after")
        #expect(dry.standardOutput.contains("docs #1:") && dry.standardOutput.contains("gen:"), "\(dry)")
        #expect(directory.read("out.txt") == nil && log() == "")
        _ = try await run("after")
        _ = log()
        let dryNoOp = try await run("--dry-run", "after")
        #expect(dryNoOp.status == 0 && !dryNoOp.standardOutput.contains("gen"), "\(dryNoOp)")
        // An output no piece made fails the task's last piece, and nothing is recorded.
        for _ in 0..<2 {
            let broken = try await run("broken")
            #expect(broken.status == 1, "\(broken)")
            #expect(broken.standardOutput.contains("didn't produce 'never.txt'"), "\(broken)")
            #expect(log() == "gen\n")
        }
    }
}
