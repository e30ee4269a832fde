import Foundation
import KilnTestSupport
import Testing

/// Variables that come from outside the Taskfile — the command line, the environment, a dynamic
/// variable's command — can change between runs with no file changing: a run must see the change
/// (neither the Taskfile cache nor the up-to-date snapshot may answer for the old values), and
/// a run with the same values must still be a no-op.
@Suite struct VariableContextTests {
    static let taskfile = """
        version: '3'
        env:
          CC: gcc
        vars:
          V: one
        tasks:
          build:
            sources: [in.txt]
            generates: [out.txt]
            cmds:
              - echo "{{.V}} {{.KILN_TEST_READ | default "none"}} $CC" > out.txt
        """

    /// Runs `arguments` and returns how many jobs ran and what out.txt says.
    func run(_ arguments: [String], in directory: TemporaryDirectory, environment: [String: String] = [:]) async throws
        -> (ran: Int, output: String)
    {
        let result = try await KilnProcess.run(
            ["run", "--json"] + arguments,
            in: directory.path,
            environment: environment
        )
        try #require(result.status == 0, "\(result)")
        let ran = result.standardOutput.split(separator: "\n").filter {
            $0.contains("\"event\":\"finished\"") && $0.contains("\"status\":\"succeeded\"")
        }.count
        return (ran, directory.read("out.txt") ?? "")
    }

    @Test(
        "a changed command-line variable, environment variable or env: override reruns the job; the same values don't"
    )
    func outsideValuesCount() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-variables")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        try directory.write("in.txt", "x")
        // The plain runs go through the snapshot (no --json): it must not vouch for other values.
        func plain(_ arguments: [String], environment: [String: String] = [:]) async throws -> String {
            let result = try await KilnProcess.run(["run"] + arguments, in: directory.path, environment: environment)
            try #require(result.status == 0, "\(result)")
            return directory.read("out.txt") ?? ""
        }
        #expect(try await run(["build"], in: directory) == (1, "one none gcc\n"))
        #expect(try await plain(["build"]) == "one none gcc\n")
        #expect(try await plain(["build", "V=two"]) == "two none gcc\n")
        #expect(try await run(["build", "V=two"], in: directory) == (0, "two none gcc\n"))
        #expect(try await plain(["build"], environment: ["KILN_TEST_READ": "read"]) == "one read gcc\n")
        #expect(
            try await run(["build"], in: directory, environment: ["KILN_TEST_READ": "read"]) == (0, "one read gcc\n")
        )
        #expect(try await plain(["build"], environment: ["CC": "clang"]) == "one none clang\n")
        #expect(try await plain(["build"]) == "one none gcc\n")
        #expect(try await run(["build"], in: directory) == (0, "one none gcc\n"))
    }

    @Test("a dynamic variable runs every run: the Taskfile cache isn't kept, and only a changed value reruns the job")
    func dynamicVariables() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-dynamic")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            vars:
              STAMP:
                sh: cat stamp.txt
            tasks:
              build:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['echo "{{.STAMP}}" > out.txt']
            """
        )
        try directory.write("in.txt", "x")
        try directory.write("stamp.txt", "first\n")
        #expect(try await run(["build"], in: directory) == (1, "first\n"))
        #expect(!FileManager.default.fileExists(atPath: directory.path(".kiln/taskfile.cache")))
        #expect(try await run(["build"], in: directory) == (0, "first\n"))
        try directory.write("stamp.txt", "second\n")
        #expect(try await run(["build"], in: directory) == (1, "second\n"))
        // Through the snapshot too: a plain no-op run must not keep the old value.
        try directory.write("stamp.txt", "third\n")
        let plain = try await KilnProcess.run(["run", "build"], in: directory.path)
        #expect(plain.status == 0)
        #expect(directory.read("out.txt") == "third\n")
    }

    @Test("a dotenv file that changes, appears or disappears is seen by the next run")
    func dotenvChanges() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-dotenv")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            dotenv: [.env, local.env]
            tasks:
              build:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['echo "$MODE {{.LEVEL | default "none"}}" > out.txt']
            """
        )
        try directory.write("in.txt", "x")
        try directory.write(".env", "MODE=debug\n")
        #expect(try await run(["build"], in: directory) == (1, "debug none\n"))
        #expect(try await run(["build"], in: directory) == (0, "debug none\n"))
        try directory.write(".env", "MODE=release\n")
        #expect(try await run(["build"], in: directory) == (1, "release none\n"))
        try directory.write("local.env", "LEVEL=3\n")
        #expect(try await run(["build"], in: directory) == (1, "release 3\n"))
        try FileManager.default.removeItem(atPath: directory.path("local.env"))
        let plain = try await KilnProcess.run(["run", "build"], in: directory.path)
        #expect(plain.status == 0)
        #expect(directory.read("out.txt") == "release none\n")
    }

    @Test("a dynamic variable whose command fails stops the load at the variable")
    func failingDynamicVariable() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-dynamic-fail")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\nvars:\n  X:\n    sh: exit 3\ntasks:\n  t: echo {{.X}}\n")
        let result = try await KilnProcess.run(["run", "t"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.standardError.contains(
                "Taskfile.yml:4:9: error: variable 'X': its command 'exit 3' failed: exit status 3"
            ),
            "\(result)"
        )
    }

    /// Starts `kiln run t` in a process group of its own in `directory`, waits (at most 30 s) for
    /// the file `started` to appear, sends `signal` to `target` (`-$pid`: kiln's whole group, as a
    /// terminal's Ctrl-C does; `$pid`: kiln alone, as a supervisor's SIGTERM does), and returns
    /// what was printed, with `status N` at the end.
    func interruptWhenStarted(in directory: TemporaryDirectory, signal: String, target: String) throws -> String {
        let kiln = try KilnProcess.executable()
        let script = """
            setsid '\(kiln)' run t & pid=$!
            i=0; while [ ! -e started ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
            kill -\(signal) \(target); wait $pid; echo "status $?"
            """
        return try runProgram("/bin/sh", ["-c", script], in: directory.path).output
    }

    static let slowVariables = """
        version: '3'
        vars:
          SLOW:
            sh: touch started; sleep 60
          NEXT:
            sh: touch next-started
        tasks:
          t: echo {{.SLOW}} {{.NEXT}}
        """

    @Test("Ctrl-C while a dynamic variable's command runs stops it: kiln ends at once with a located error")
    func interruptedDynamicVariable() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-dynamic-interrupt")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.slowVariables)
        // Unstopped, the command would end well after its minute: its error says it was killed.
        let output = try interruptWhenStarted(in: directory, signal: "INT", target: "-$pid")
        #expect(output.contains("status 2"), "\(output)")
        #expect(
            output.contains(
                "Taskfile.yml:4:9: error: variable 'SLOW': its command 'touch started; sleep 60' failed: killed by signal 2"
            ),
            "\(output)"
        )
        // Nothing the load would have run after the interrupt is started.
        #expect(!FileManager.default.fileExists(atPath: directory.path("next-started")), "\(output)")
        #expect(output.contains("variable 'NEXT': its command 'touch next-started' failed: not started"), "\(output)")
    }

    @Test("SIGTERM sent to kiln alone while a dynamic variable's command runs reaches the command: kiln passes it on")
    func terminatedDynamicVariable() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-dynamic-terminate")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.slowVariables)
        // The command is in a group of its own, which only kiln can pass the signal to: without
        // that it would end well after its minute, and its error wouldn't say it was killed.
        let output = try interruptWhenStarted(in: directory, signal: "TERM", target: "$pid")
        #expect(output.contains("status 2"), "\(output)")
        #expect(output.contains("its command 'touch started; sleep 60' failed: killed by signal 15"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("next-started")), "\(output)")
    }

    @Test("the Taskfile cache, which holds the variables' values, is readable by its owner only")
    func cacheIsPrivate() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-cache-mode")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\nvars:\n  T: '{{.KILN_TEST_TOKEN}}'\ntasks:\n  t: 'true'\n")
        let result = try await KilnProcess.run(
            ["run", "t"],
            in: directory.path,
            environment: ["KILN_TEST_TOKEN": "secret"]
        )
        #expect(result.status == 0, "\(result)")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path(".kiln/taskfile.cache"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }
}
