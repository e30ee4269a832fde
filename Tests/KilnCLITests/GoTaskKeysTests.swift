import Foundation
import KilnTestSupport
import Testing

/// go-task's task keys and command-line flags where kiln's behaviour is its own to check (the
/// terminal, the build state) or is compared with go-task's printed output; and the go-task keys
/// kiln doesn't take yet, each refused where it is written.
@Suite struct GoTaskKeysTests {
    func project(_ taskfile: String) throws -> TemporaryDirectory {
        try taskfileProject(taskfile, prefix: "kiln-gotask-keys")
    }

    static let listed = """
        version: '3'
        tasks:
          build:
            desc: Build it
            summary: |
              Builds the thing.

              Really.
            aliases: [b]
            deps: [dep]
            cmds: ['echo a', 'echo b']
          dep:
            cmds: ['echo dep']
          hidden:
            internal: true
            desc: hidden one
            cmds: ['echo h']
        """

    @Test("list --summary prints what go-task's --summary prints; list hides internal tasks and shows aliases")
    func listing() async throws {
        let directory = try project(Self.listed)
        defer { directory.remove() }
        let goTask = try runProgram(try Peers.executable("task"), ["--summary", "build"], in: directory.path)
        let kiln = try await KilnProcess.run(["list", "--summary", "build"], in: directory.path)
        #expect(kiln.status == 0)
        #expect(kiln.standardOutput == goTask.output, "\(kiln)")
        let all = try await KilnProcess.run(["list"], in: directory.path)
        #expect(all.standardOutput.contains("* build:") && all.standardOutput.contains("(aliases: b)"), "\(all)")
        #expect(!all.standardOutput.contains("hidden"), "\(all)")
        let described = try await KilnProcess.run(["list", "--described"], in: directory.path)
        let goTaskList = try runProgram(try Peers.executable("task"), ["--list"], in: directory.path)
        let names = { (text: String) in
            text.split(separator: "\n").filter { $0.hasPrefix("* ") }.map { $0.split(separator: ":")[0] }
        }
        #expect(names(described.standardOutput) == names(goTaskList.output), "\(described) vs \(goTaskList.output)")
    }

    @Test(
        "a task with calls, loops and deps with vars is listed as written: --summary as go-task's, --json deps and calls"
    )
    func listingCalls() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              main:
                deps: [{task: a, vars: {X: '1'}}, b]
                cmds:
                  - echo hello {{OS}}
                  - task: b
                    vars: {V: '1'}
                  - for: [p, q]
                    cmd: echo {{.ITEM}}
                  - task: a
                  - defer: echo bye
              a: echo a
              b: echo b {{.V | default ""}}
            """
        )
        defer { directory.remove() }
        let goTask = try runProgram(try Peers.executable("task"), ["--summary", "main"], in: directory.path)
        let kiln = try await KilnProcess.run(["list", "--summary", "main"], in: directory.path)
        #expect(kiln.status == 0)
        #expect(kiln.standardOutput == goTask.output, "\(kiln)")
        let json = try await KilnProcess.run(["list", "--json"], in: directory.path)
        let object = try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any]
        let main = (object?["tasks"] as? [[String: Any]])?.first { $0["name"] as? String == "main" }
        #expect(main?["deps"] as? [String] == ["a", "b"], "\(json)")
        #expect(main?["calls"] as? [String] == ["b", "a"], "\(json)")
    }

    @Test(
        "list --summary shows the vars, env and requires sections go-task's --summary shows, in its order and forms, secrets masked"
    )
    func summarySections() async throws {
        let directory = try project(
            """
            version: '3'
            vars:
              GLOBAL: g
              ONE_KEY: {map: {k: v}}
              EMPTY: ''
              LIST: [a, b]
              SHADOW: file
              FROM_FILE: '{{.GLOBAL}}-f'
              TOKEN: {value: tok-secret, secret: true}
            env:
              FILE_ENV: fe
              HOME: not-shown
              TASK_LIKE: hidden-by-prefix
            tasks:
              t:
                desc: with everything
                vars:
                  SHADOW: task
                  FILE_ENV: hidden-as-env
                  DYNAMIC: {sh: 'echo {{.GLOBAL}}'}
                  FLAG: true
                  N: 3
                  REF: {ref: .LIST}
                  KEY: {sh: 'echo key-secret', secret: true}
                env:
                  OWN: 'o-{{.GLOBAL}}'
                  TASK_OWN: hidden-by-prefix
                requires:
                  vars: [GLOBAL, {name: LEVEL, enum: [low, high]}]
                deps: [plain]
                cmds: ['echo {{.SHADOW}}', 'echo {{.TOKEN}}']
              plain: echo plain
              deferring:
                cmds:
                  - defer: rm -f {{.GLOBAL}}.tmp
                  - defer: {task: plain}
                  - task: plain
                  - defer: echo '{{.GLOBAL}}'
                  - echo after
            """
        )
        defer { directory.remove() }
        for task in ["t", "plain", "deferring"] {
            let goTask = try runProgram(try Peers.executable("task"), ["--summary", task], in: directory.path)
            let kiln = try await KilnProcess.run(["list", "--summary", task], in: directory.path)
            #expect(kiln.status == 0)
            #expect(kiln.standardOutput == goTask.output, "\(kiln)")
        }
    }

    @Test("an internal task runs as a dependency, never from the command line")
    func internalTasks() async throws {
        let directory = try project(Self.listed + "\n  uses:\n    deps: [hidden]\n    cmds: ['echo u']\n")
        defer { directory.remove() }
        let refused = try await KilnProcess.run(["run", "hidden"], in: directory.path)
        #expect(refused.status == 2)
        #expect(refused.standardError.contains("Taskfile.yml:14:3: error: task 'hidden' is internal"), "\(refused)")
        let used = try await KilnProcess.run(["run", "uses"], in: directory.path)
        #expect(used.status == 0, "\(used)")
    }

    @Test("a prompt stops the run unless --yes answers it; without a terminal nothing runs")
    func prompts() async throws {
        let directory = try project(
            "version: '3'\ntasks:\n  deploy:\n    prompt: Really deploy?\n    deps: [first]\n    cmds: ['touch deployed']\n  first:\n    cmds: ['touch first']\n"
        )
        defer { directory.remove() }
        let refused = try await KilnProcess.run(["run", "deploy"], in: directory.path)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.standardError.contains("asks \"Really deploy?\""), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("first")), "nothing runs before the answer")
        let answered = try await KilnProcess.run(["run", "--yes", "deploy"], in: directory.path)
        #expect(answered.status == 0, "\(answered)")
        #expect(answered.standardError.contains("Really deploy? [assuming yes]"), "\(answered)")
        #expect(FileManager.default.fileExists(atPath: directory.path("deployed")))
    }

    @Test("--force reruns up-to-date jobs; method: none runs every time; --dir works elsewhere")
    func forceAndMethod() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              copy:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['cat in.txt > out.txt', 'echo x >> copies']
              always:
                method: none
                sources: [in.txt]
                cmds: ['echo x >> always']
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "hello")
        let elsewhere = try TemporaryDirectory(prefix: "kiln-elsewhere")
        defer { elsewhere.remove() }
        for arguments in [["copy", "always"], ["copy", "always"], ["--force", "copy", "always"]] {
            let result = try await KilnProcess.run(["run", "--dir", directory.path] + arguments, in: elsewhere.path)
            #expect(result.status == 0, "\(result)")
        }
        #expect(directory.read("copies")?.split(separator: "\n").count == 2, "once, then up to date, then forced")
        #expect(directory.read("always")?.split(separator: "\n").count == 3, "method: none runs every time")
    }

    @Test(
        "go-task keys kiln doesn't take yet are refused where they are written, saying what to do, when a run plans the task"
    )
    func pendingKeys() async throws {
        let cases: [(taskfile: String, line: Int, column: Int, says: String)] = [
            (
                "tasks:\n  t:\n    cmds:\n      - defer: echo bye\n      - defer: {task: o}\n  o: 'true'\n", 6, 16,
                "a deferred '- task:' call written after a 'defer:' command at"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - defer: {task: o, if: 'false'}\n  o: 'true'\n", 5, 26,
                "go-task ignores 'if:' in a deferred call and makes the call all the same"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - defer: {task: o, vars: {CODE: '{{.EXIT_CODE}}'}}\n  o: 'true'\n", 5,
                32,
                "{{.EXIT_CODE}} in a deferred call's 'vars:' isn't supported yet"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - defer: {task: o}\n  o:\n    sources: [a]\n    each: sources\n    cmds: ['true']\n",
                5, 23, "'defer:' on a call to task 'o', which has 'each:', isn't supported yet"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - defer: echo bye\n        platforms: [windows]\n", 6, 9,
                "go-task ignores 'platforms:' beside 'defer:'"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - task: o\n        ignore_error: true\n  o:\n    sources: [a]\n    each: sources\n    cmds: ['true']\n",
                5, 15, "'ignore_error:' on a call to task 'o', which has 'each:', isn't supported yet"
            ),
            (
                "tasks:\n  t:\n    cmds:\n      - task: o\n        platforms: [windows]\n  o: 'true'\n", 6, 9,
                "go-task ignores 'platforms:' on a '- task:' call and runs 'o' here all the same"
            ),
            (
                "tasks:\n  t:\n    sources: [a]\n    depfile: t.d\n    cmds:\n      - task: o\n  o: 'true'\n", 3, 3,
                "task 't' has '- task:' calls in 'cmds' and 'depfile', which kiln doesn't combine yet"
            ),
            (
                "run: once\ntasks:\n  t:\n    deps:\n      - task: o\n        vars: {A: 1}\n      - task: o\n        vars: {A: 2}\n  o: 'true'\n",
                8, 15, "task 'o' has 'run: once' and is called with other variables"
            ),
            ("tasks:\n  t:\n    platforms: [linx]\n    cmds: ['true']\n", 4, 17, "'linx' in 'platforms' is not an OS"),
            (
                "tasks:\n  t:\n    cmds:\n      - task: o\n        timeout: 1s\n  o:\n    sources: [a]\n    each: sources\n    cmds: ['true']\n",
                5, 15,
                "'timeout:' on a call to task 'o', which has 'each:', isn't supported yet; put 'timeout:' on its commands"
            ),
            (
                "tasks:\n  t:\n    deps:\n      - task: o\n        timeout: 1s\n  o:\n    cmds:\n      - task: p\n  p: 'true'\n",
                5, 15, "'timeout:' on a call to task 'o', which has '- task:' calls, isn't supported yet"
            ),

        ]
        for example in cases {
            let directory = try project("version: '3'\n" + example.taskfile)
            defer { directory.remove() }
            // A task's own mistakes wait for a run that plans it; `kiln list` works.
            let result = try await KilnProcess.run(["run", "t"], in: directory.path)
            #expect(result.status == 2, "\(example.taskfile): \(result)")
            let place = "\(directory.path("Taskfile.yml")):\(example.line):\(example.column): error: "
            #expect(result.standardError.contains(place), "\(example.taskfile): \(result.standardError)")
            #expect(result.standardError.contains(example.says), "\(example.taskfile): \(result.standardError)")
        }
    }

    @Test(
        "a dry run fails where go-task's --dry fails: a precondition of a task that would run doesn't hold; nothing runs"
    )
    func dryRunChecksPreconditions() async throws {
        let task = try Peers.executable("task")
        let taskfile = """
            version: '3'
            tasks:
              missing:
                deps: [dep]
                preconditions:
                  - sh: command -v kiln-no-such-tool
                    msg: kiln-no-such-tool isn't installed
                cmds: ['echo ran > ran.txt']
              present:
                deps: [dep]
                preconditions: ['test -f Taskfile.yml']
                cmds: ['echo ran > ran.txt']
              dep:
                cmds: ['echo dep > dep.txt']
            """
        for (name, holds) in [("missing", false), ("present", true)] {
            let directory = try project(taskfile)
            defer { directory.remove() }
            let goTask = try runProgram(task, ["--dry", name], in: directory.path)
            #expect((goTask.status == 0) == holds, "go-task: \(goTask.output)")
            let kiln = try await KilnProcess.run(["run", "--dry-run", name], in: directory.path)
            #expect((kiln.status == 0) == holds, "\(kiln)")
            if !holds {
                #expect(
                    kiln.status == 1
                        && kiln.standardError.contains(
                            "kiln: \(name) would fail: precondition not met: kiln-no-such-tool isn't installed"
                        ),
                    "\(kiln)"
                )
            }
            #expect(!directory.exists("ran.txt") && !directory.exists("dep.txt"))
        }
    }

    @Test("a dry run fails where go-task's --dry fails: a command's template fails when rendered; nothing runs")
    func dryRunRendersCommands() async throws {
        let task = try Peers.executable("task")
        let directory = try project(
            """
            version: '3'
            tasks:
              t:
                deps: [dep]
                cmds: ['echo "{{.NAME | lower}}" > ran.txt']
              dep:
                cmds: ['echo dep > dep.txt']
            """
        )
        defer { directory.remove() }
        let goTask = try runProgram(task, ["--dry", "t"], in: directory.path)
        #expect(goTask.status != 0, "go-task: \(goTask.output)")
        let kiln = try await KilnProcess.run(["run", "--dry-run", "t"], in: directory.path)
        #expect(
            kiln.status == 1 && kiln.standardError.contains("kiln: t would fail: ")
                && kiln.standardError.contains("error calling lower: invalid value; expected string"),
            "\(kiln)"
        )
        #expect(!directory.exists("ran.txt") && !directory.exists("dep.txt"))
        // Given a value, both pass.
        let given = try await KilnProcess.run(["run", "--dry-run", "t", "NAME=X"], in: directory.path)
        #expect(given.status == 0, "\(given)")
    }

    @Test("CHECKSUM is a digest of the task's sources: the same until one changes, so a status test can keep it")
    func checksumVariable() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              t:
                sources: ['src/*.c']
                status: ['test "{{.CHECKSUM}}" = "$(cat seen.txt)"']
                cmds: ['echo {{.CHECKSUM}} > seen.txt', 'echo ran >> runs.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("src/a.c", "int a;\n")
        for _ in 0..<2 {
            let result = try await KilnProcess.run(["run", "t"], in: directory.path)
            #expect(result.status == 0, "\(result)")
        }
        let first = directory.read("seen.txt")
        #expect(first?.count == 33, "\(first ?? "")")
        // Up to date by its status test the second time.
        #expect(directory.read("runs.txt") == "ran\n")
        try directory.write("src/a.c", "int b;\n")
        let changed = try await KilnProcess.run(["run", "t"], in: directory.path)
        #expect(changed.status == 0, "\(changed)")
        #expect(directory.read("runs.txt") == "ran\nran\n")
        #expect(directory.read("seen.txt") != first)
    }

    @Test("prefix: names the job's output, as label: does (label: wins)")
    func prefixNamesOutput() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              default:
                deps: [a, b]
              a:
                prefix: front-{{.TASK}}
                cmds: ['echo a']
              b:
                prefix: ignored
                label: labelled
                cmds: ['echo b']
            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("] front-a\n"), "\(result)")
        #expect(
            result.standardOutput.contains("] labelled\n") && !result.standardOutput.contains("ignored"),
            "\(result)"
        )
    }

    @Test("output: group's begin and end lines wrap each job's output as go-task's do; error_only shows only failures")
    func outputGroup() async throws {
        for errorOnly in [false, true] {
            let directory = try project(
                """
                version: '3'
                output:
                  group:
                    begin: '::group::{{.TASK}}'
                    end: '::endgroup::'
                    error_only: \(errorOnly)
                tasks:
                  hello: echo 'Hello!'
                  quiet: 'true'
                  bye:
                    deps: [hello]
                    cmds:
                      - task: quiet
                      - echo 'Bye!'
                  bad:
                    deps: [bye]
                    cmds: ['echo broken; exit 3']
                """
            )
            defer { directory.remove() }
            let goTask = try runProgram(try Peers.executable("task"), ["--silent", "bad"], in: directory.path)
            let kiln = try await KilnProcess.run(["run", "bad"], in: directory.path)
            #expect(kiln.status != 0 && goTask.status != 0)
            // kiln's own lines aside (progress, the failed command, the summary), the same lines.
            let shown = kiln.standardOutput.split(separator: "\n").filter {
                !$0.hasPrefix("[") && !$0.hasPrefix("kiln:") && !$0.hasPrefix("  ")
            }
            let expected = goTask.output.split(separator: "\n").filter { !$0.hasPrefix("task:") }
            #expect(shown == expected, "\(kiln) vs \(goTask.output)")
        }
    }

    @Test(
        "a variable an included file redefines with another value is refused: go-task would give the main file's tasks the included value"
    )
    func sharedVariableNames() async throws {
        let directory = try project(
            """
            version: '3'
            vars:
              X: main
              SAME: one
            includes:
              lib: ./lib
            tasks:
              root: echo root X={{.X}} > root.txt
            """
        )
        defer { directory.remove() }
        try directory.write(
            "lib/Taskfile.yml",
            "version: '3'\nvars:\n  SAME: one\n  X: '{{.X | default \"lib\"}}'\ntasks:\n  t: echo lib X={{.X}}\n"
        )
        // What kiln refuses to guess: go-task's root task reads the included file's X.
        let goTask = try runProgram(try Peers.executable("task"), ["--silent", "root"], in: directory.path)
        #expect(goTask.status == 0 && directory.read("root.txt") == "root X=lib\n", "\(goTask.output)")
        let kiln = try await KilnProcess.run(["run", "root"], in: directory.path)
        #expect(kiln.status == 2, "\(kiln)")
        #expect(
            kiln.standardError.contains(
                "lib/Taskfile.yml:4:3: error: variable 'X' is also defined by the main Taskfile"
            ),
            "\(kiln)"
        )
        #expect(kiln.standardError.contains("Taskfile.yml:3:3: note: the main Taskfile's 'X'"), "\(kiln)")
        // The same value in both (SAME) is no conflict.
        #expect(!kiln.standardError.contains("'SAME'"), "\(kiln)")
    }

    @Test("kiln status and explain take NAME=value variables as kiln run does")
    func statusWithVariables() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              t:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['echo {{.MODE}} > out.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "x\n")
        let run = try await KilnProcess.run(["run", "t", "MODE=fast"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        let same = try await KilnProcess.run(["status", "t", "MODE=fast"], in: directory.path)
        #expect(same.status == 0 && same.standardOutput.contains("up to date"), "\(same)")
        let other = try await KilnProcess.run(["status", "--exit-code", "t", "MODE=slow"], in: directory.path)
        #expect(other.status == 1 && other.standardOutput.contains("1 of 1 job out of date"), "\(other)")
        let explained = try await KilnProcess.run(["explain", "t", "MODE=slow"], in: directory.path)
        #expect(explained.status == 0 && explained.standardOutput.contains("changed"), "\(explained)")
    }

    @Test("status: is asked every run (the snapshot never vouches for it), and with sources both must hold")
    func statusEveryRun() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              setup:
                status: [test -f ready.txt]
                cmds: ['echo setup >> log.txt', 'touch ready.txt']
              copy:
                sources: [in.txt]
                generates: [out.txt]
                status: [test -f ready.txt]
                cmds: ['cp in.txt out.txt', 'echo copy >> log.txt']
            """
        )
        defer { directory.remove() }
        try directory.write("in.txt", "a")
        func run(_ task: String) async throws -> String {
            let result = try await KilnProcess.run(["run", task], in: directory.path)
            #expect(result.status == 0, "\(result)")
            return result.standardOutput
        }
        _ = try await run("setup")
        #expect(try await run("setup").contains("1 up to date"))
        try FileManager.default.removeItem(atPath: directory.path("ready.txt"))
        _ = try await run("setup")  // the test fails again: it runs
        #expect(directory.read("log.txt") == "setup\nsetup\n")
        _ = try await run("copy")  // no record yet: runs
        #expect(try await run("copy").contains("1 up to date"))
        try directory.write("in.txt", "b")  // a source changed: runs though the test succeeds
        _ = try await run("copy")
        try FileManager.default.removeItem(atPath: directory.path("ready.txt"))
        _ = try await run("copy")  // sources unchanged, the test fails: runs
        #expect(directory.read("log.txt") == "setup\nsetup\ncopy\ncopy\ncopy\n")
        let explain = try await KilnProcess.run(["run", "--dry-run", "copy"], in: directory.path)
        #expect(explain.status == 0, "\(explain)")
    }
}

extension GoTaskKeysTests {
    @Test("timeout: takes the durations go-task takes (Go's syntax) and refuses the ones it refuses")
    func timeoutSyntax() async throws {
        let task = try Peers.executable("task")
        let written = [
            "1s", "1.5s", ".5s", "5.", "1h30m", "2us", "2\u{00B5}s", "300ms", "+1s", "-1s", "0", "0s", "1", "s", "1S",
            "1m1", "1 s", "1e3s", "1..2s", "3d", "2562047h", "2562048h",
        ]
        for duration in written {
            let directory = try project(
                "version: '3'\ntasks:\n  a:\n    cmds:\n      - cmd: 'true'\n        timeout: '\(duration)'\n"
            )
            defer { directory.remove() }
            // go-task exits 102 for a Taskfile it can't read, kiln 2.
            let goTask = try runProgram(task, ["--dry", "a"], in: directory.path)
            let kiln = try await KilnProcess.run(["run", "--dry-run", "a"], in: directory.path)
            #expect([0, 102].contains(goTask.status), "\(duration): go-task \(goTask.output)")
            #expect((goTask.status == 102) == (kiln.status == 2), "\(duration): go-task \(goTask.output), kiln \(kiln)")
        }
    }
}

extension GoTaskKeysTests {
    @Test("an include's excludes: leave out what go-task's leave out: names, 'ns:*', in files it includes in turn")
    func excludesLikeGoTask() async throws {
        let task = try Peers.executable("task")
        for excludes in [
            "['deep:x']", "['deep:*']", "['sub:*']", "['*', 'de*', ':*']", "[a, 'deep:y']", "['flat:*', z]",
        ] {
            let directory = try project(
                "version: '3'\nincludes:\n  lib:\n    taskfile: ./inc\n    excludes: \(excludes)\ntasks:\n  t: echo t\n"
            )
            defer { directory.remove() }
            try directory.write(
                "inc/Taskfile.yml",
                "version: '3'\nincludes:\n  deep: ./deep\n  flat:\n    taskfile: ./flat\n    flatten: true\ntasks:\n  a: echo a\n  sub:b: echo b\n"
            )
            try directory.write("inc/deep/Taskfile.yml", "version: '3'\ntasks:\n  x: echo x\n  y: echo y\n")
            try directory.write("inc/flat/Taskfile.yml", "version: '3'\ntasks:\n  z: echo z\n  w: echo w\n")
            func names(_ json: String) -> Set<String> {
                let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                let tasks = object?["tasks"] as? [[String: Any]] ?? []
                return Set(tasks.compactMap { $0["name"] as? String })
            }
            let goTask = try runProgram(task, ["--list-all", "--json"], in: directory.path)
            let kiln = try await KilnProcess.run(["list", "--json"], in: directory.path)
            #expect(goTask.status == 0 && kiln.status == 0, "\(excludes): \(goTask.output) \(kiln)")
            #expect(!names(goTask.output).isEmpty, "\(excludes): \(goTask.output)")
            #expect(names(kiln.standardOutput) == names(goTask.output), "excludes: \(excludes)")
        }
    }
}

extension GoTaskKeysTests {
    @Test(
        "secret: true hides a variable's value in everything kiln prints — status, failures, dry run, --json, --summary, instance names"
    )
    func secretsAreMasked() async throws {
        let directory = try project(
            """
            version: '3'
            vars:
              TOKEN: {value: tok-secret-value, secret: true}
              FROM_SHELL: {sh: 'echo shell-secret-value', secret: true}
              LONG:
                value: long-secret-0123456789012345678901234567890123456789012345678901234567890123456789
                secret: true
              PUBLIC: shown
            tasks:
              fails:
                vars:
                  OWN: {value: own-secret-value, secret: true}
                cmds:
                  - test -z "{{.TOKEN}}{{.FROM_SHELL}}{{.OWN}}" -a "{{.PUBLIC}}" = shown
              calls:
                cmds:
                  - task: called
                    vars: {DERIVED: 'derived-{{.TOKEN}}'}
                  - task: called
                    vars: {DERIVED: '{{.LONG}}'}
                  - task: called
                    vars: {DERIVED: plain, TOKEN: given-secret-value}
              called:
                cmds:
                  - test -n "{{.DERIVED}}{{.TOKEN}}"
            """
        )
        defer { directory.remove() }
        let secrets = [
            "tok-secret-value", "shell-secret-value", "own-secret-value", "given-secret-value", "long-secret-0123",
        ]
        for arguments in [
            ["run", "fails"], ["run", "--dry-run", "fails"], ["run", "--json", "fails"], ["run", "calls"],
            ["run", "--json", "calls"], ["run", "--dry-run", "calls"], ["list", "--summary", "fails"],
            ["explain", "fails"], ["status", "--json", "calls"],
        ] {
            let result = try await KilnProcess.run(arguments, in: directory.path)
            let printed = result.standardOutput + result.standardError
            // Masked where kiln shows a command; explain shows none.
            if arguments != ["explain", "fails"] {
                #expect(printed.contains(SecretMaskText.replacement), "\(arguments): \(printed)")
            }
            #expect(
                printed.contains("shown") || arguments.contains("calls") || arguments.contains("explain"),
                "\(arguments): \(printed)"
            )
            for secret in secrets {
                #expect(!printed.contains(secret), "\(arguments) shows \(secret): \(printed)")
            }
        }
        // Two instances whose names would look alike once masked are numbered apart.
        let run = try await KilnProcess.run(["run", "calls"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        #expect(run.standardOutput.contains("called (DERIVED=derived-*****)"), "\(run)")
        #expect(run.standardOutput.contains("called (DERIVED=*****)"), "\(run)")
        #expect(run.standardOutput.contains("called (DERIVED=plain, TOKEN=*****)"), "\(run)")
    }
}

/// What ``SecretMask`` prints for a secret (the tests don't import the host).
enum SecretMaskText {
    static let replacement = "*****"
}

extension GoTaskKeysTests {
    @Test(
        "use_gitignore: an ignored file's edits don't rerun the task; editing a .gitignore in place does, and changes its files"
    )
    func gitignoreChangesRerun() async throws {
        let directory = try project(
            """
            version: '3'
            use_gitignore: true
            tasks:
              t:
                sources: ['*.txt', '*.log']
                cmds:
                  - rm -f list.out
                  - for: sources
                    cmd: echo {{.ITEM}} >> list.out
            """
        )
        defer { directory.remove() }
        try requireGit(["init", "-q"], in: directory.path)
        try directory.write(".gitignore", "*.log\n")
        try directory.write("a.txt", "a")
        try directory.write("b.log", "b")
        func run() async throws -> String {
            let result = try await KilnProcess.run(["run", "t"], in: directory.path)
            #expect(result.status == 0, "\(result)")
            return result.standardOutput
        }
        let listed = { directory.read("list.out") ?? "" }
        _ = try await run()
        #expect(listed() == "a.txt\n")
        try directory.write("b.log", "edited, and ignored")
        #expect(try await run().contains("0 ran, 1 up to date"))
        // Rewritten in place: the directory doesn't change, the file does.
        let handle = try #require(FileHandle(forWritingAtPath: directory.path(".gitignore")))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("# nothing ignored\n".utf8))
        try handle.close()
        #expect(try await run().contains("1 ran"))
        #expect(listed() == "a.txt\nb.log\n")
    }
}
