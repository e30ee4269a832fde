import Foundation
import KilnTestSupport
import Testing

/// go-task's `interactive: true`: the task's commands get kiln's standard input, output and error
/// — on a terminal, the foreground too, as a shell gives it to a job — one such job at a time,
/// while the console holds the other jobs' reports.
@Suite struct InteractiveTests {
    static let taskfile = """
        version: '3'
        tasks:
          ask:
            interactive: true
            deps: [quiet]
            cmds:
              - 'touch ready; printf "name? "; read name; echo "hello $name" > answer.txt'
              - 'if test -t 0; then echo terminal > stdin.txt; else echo other > stdin.txt; fi'
              - |
                awk '{print ($5 == $8) ? "foreground" : "background"}' /proc/self/stat > group.txt
          quiet:
            cmds: ['echo from-quiet']
          piped:
            interactive: true
            cmds:
              - 'read line; echo "got $line" > got.txt'
              - echo shown-directly
          both:
            deps: [first, second]
          first:
            interactive: true
            cmds: ['echo first-start >> turns.txt; sleep 0.5; echo first-end >> turns.txt']
          second:
            interactive: true
            cmds: ['echo second-start >> turns.txt; sleep 0.5; echo second-end >> turns.txt']
          held:
            deps: [talker, waiter]
          talker:
            interactive: true
            cmds: ['touch talker.started; echo talker-begin; sleep 1; echo talker-end']
          waiter:
            cmds: ['while [ ! -f talker.started ]; do sleep 0.05; done; echo waiter-output']
        """

    /// Runs `kiln ARGUMENTS` on a pseudo-terminal (`script`), typing `input` once the task's
    /// command has made the file `ready`.
    func onTerminal(_ arguments: String, typing input: String, in directory: TemporaryDirectory) throws -> (
        status: Int32, output: String
    ) {
        let kiln = try KilnProcess.executable()
        let typist = "(while [ ! -f ready ]; do sleep 0.05; done; sleep 0.3; printf '\(input)'; sleep 2)"
        return try runProgram(
            "/bin/sh",
            ["-c", "\(typist) | timeout 60 script -qec \"$0 \(arguments)\" /dev/null", kiln],
            in: directory.path
        )
    }

    @Test("on a terminal, an interactive task's commands read it in the foreground, and Ctrl-C reaches them, not kiln")
    func onATerminal() async throws {
        let directory = try taskfileProject(Self.taskfile, prefix: "kiln-interactive")
        defer { directory.remove() }
        let typed = try onTerminal("run ask", typing: "world\\n", in: directory)
        #expect(typed.status == 0, "\(typed.output)")
        #expect(directory.read("answer.txt") == "hello world\n")
        #expect(directory.read("stdin.txt") == "terminal\n")
        #expect(directory.read("group.txt") == "foreground\n")
        #expect(typed.output.contains("kiln: ask has the terminal"), "\(typed.output)")
        // Ctrl-C goes to the command that has the terminal: it ends, kiln reports its failure,
        // takes the terminal back and ends too (a kiln left in the background would be stopped
        // by SIGTTOU, and `timeout` would end it with 124).
        try FileManager.default.removeItem(atPath: directory.path("ready"))
        try FileManager.default.removeItem(atPath: directory.path("answer.txt"))
        let interrupted = try onTerminal("run ask", typing: "\\003", in: directory)
        #expect(interrupted.status == 1, "\(interrupted.output)")
        #expect(interrupted.output.contains("killed by signal 2"), "\(interrupted.output)")
        #expect(directory.read("answer.txt") == nil)
    }

    @Test(
        "without a terminal an interactive task reads kiln's standard input and prints straight to its output, as go-task's does"
    )
    func withoutATerminal() async throws {
        let kiln = try KilnProcess.executable()
        let task = try Peers.executable("task")
        let directory = try taskfileProject(Self.taskfile, prefix: "kiln-interactive")
        defer { directory.remove() }
        let peer = try TemporaryDirectory(prefix: "kiln-interactive-go-task")
        defer { peer.remove() }
        try peer.write("Taskfile.yml", Self.taskfile)
        let ours = try runProgram("/bin/sh", ["-c", "printf 'piped\\n' | \"$0\" run piped", kiln], in: directory.path)
        let theirs = try runProgram(
            "/bin/sh",
            ["-c", "printf 'piped\\n' | \"$0\" --silent piped", task],
            in: peer.path
        )
        #expect(ours.status == 0 && theirs.status == 0, "\(ours.output)\n\(theirs.output)")
        #expect(directory.read("got.txt") == "got piped\n")
        #expect(directory.read("got.txt") == peer.read("got.txt"))
        #expect(ours.output.components(separatedBy: "shown-directly").count == 2, "\(ours.output)")
        // Other tasks' commands read nothing (their standard input is /dev/null).
        #expect(directory.read("answer.txt") == nil)
    }

    @Test("one interactive job at a time; the others' reports wait until it ends")
    func oneAtATime() async throws {
        let kiln = try KilnProcess.executable()
        let directory = try taskfileProject(Self.taskfile, prefix: "kiln-interactive")
        defer { directory.remove() }
        let turns = try runProgram(kiln, ["run", "both"], in: directory.path)
        #expect(turns.status == 0, "\(turns.output)")
        let lines = directory.read("turns.txt")?.split(separator: "\n").map(String.init) ?? []
        #expect(
            lines == ["first-start", "first-end", "second-start", "second-end"]
                || lines == ["second-start", "second-end", "first-start", "first-end"],
            "\(lines)"
        )
        // The waiter finishes while the talker has the terminal: its report comes after.
        let held = try runProgram(kiln, ["run", "held"], in: directory.path)
        #expect(held.status == 0, "\(held.output)")
        let output = held.output
        let begin = try #require(output.range(of: "talker-begin"), "\(output)")
        let end = try #require(output.range(of: "talker-end"), "\(output)")
        let waiter = try #require(output.range(of: "waiter-output"), "\(output)")
        #expect(begin.lowerBound < end.lowerBound && end.lowerBound < waiter.lowerBound, "\(output)")
    }

    @Test("a dry run of an interactive task runs nothing and keeps nothing back")
    func dryRun() async throws {
        let directory = try taskfileProject(Self.taskfile, prefix: "kiln-interactive")
        defer { directory.remove() }
        let dry = try await KilnProcess.run(["run", "--dry-run", "ask"], in: directory.path)
        #expect(dry.status == 0, "\(dry)")
        #expect(!dry.standardOutput.contains("has the terminal"), "\(dry)")
        #expect(directory.read("ready") == nil)
    }
}
