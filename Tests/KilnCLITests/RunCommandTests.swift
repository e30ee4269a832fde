import Foundation
import KilnTestSupport
import Testing

/// `kiln run` end to end: what it prints, its exit status, and what runs.
@Suite struct RunCommandTests {
    @Test("a task's own mistakes stop the runs that plan it, with every mistake located; other tasks run")
    func anInvalidTaskfileRunsNothingAndExitsWithStatus2() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              create: touch created.txt
              broken:
                deps: [nope]
                cmds: ['echo {{.X | uper}}']
            """
        )
        let result = try await KilnProcess.run(["run", "create", "broken"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(!directory.exists("created.txt"))
        // go-task reads a task's values when it runs it: a Taskfile with a broken task still runs the others.
        let other = try await KilnProcess.run(["run", "create"], in: directory.path)
        #expect(other.status == 0 && directory.exists("created.txt"), "\(other)")
        let file = directory.path("Taskfile.yml")
        let lines = result.standardError.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("\(file):5:12: error: unknown task 'nope'") }, "\(result)")
        #expect(
            lines.contains { $0.hasPrefix("\(file):6:25: error: template: function \"uper\" not defined") },
            "\(result)"
        )
    }

    @Test func aTaskfileMistakeOnlyThePlannerSeesRunsNothingAndExitsWithStatus2() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              create: touch created.txt
              escape:
                deps: [create]
                generates: ['../escaped']
                cmds: [touch ../escaped]
            """
        )
        let result = try await KilnProcess.run(["run", "escape"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(!directory.exists("created.txt"))
        #expect(result.standardError.contains("\(directory.path("Taskfile.yml")):6:17: error:"), "\(result)")
    }

    @Test func noTaskfileIsStatus2WithAHint() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "--taskfile", "Missing.yml"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(result.standardError.contains("Missing.yml"), "\(result)")
    }

    @Test func theOutputOfParallelJobsIsPrintedWholeNeverInterleaved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              a: 'i=1000; while [ $i -lt 3000 ]; do echo "a-line $i"; i=$((i+1)); done'
              b: 'i=1000; while [ $i -lt 3000 ]; do echo "b-line $i"; i=$((i+1)); done'
              default:
                deps: [a, b]
            """
        )
        let result = try await KilnProcess.run(["run", "-j2"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        for task in ["a", "b"] {
            let expected = (1000..<3000).map { "\(task)-line \($0)" }
            let first = try #require(lines.firstIndex(of: expected[0]), "\(task)'s output is missing")
            #expect(
                Array(lines[first..<min(lines.count, first + expected.count)]) == expected,
                "\(task)'s output is not in one piece"
            )
        }
    }

    @Test func aFailingCommandPrintsItsCommandAndOutputTailStopsDependentsAndExitsWithStatus1() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let command = #"i=1; while [ $i -le 100 ]; do echo "line-$((1000 + i))"; i=$((i+1)); done; exit 3"#
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              broken: '\(command)'
              dependent:
                deps: [broken]
                cmds: [touch dependent.ran]
            """
        )
        let result = try await KilnProcess.run(["run", "dependent"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(!directory.exists("dependent.ran"))
        let output = result.standardOutput
        #expect(output.contains("FAILED: broken"), "\(result)")
        #expect(output.contains("  \(command)\n"), "the command is printed")
        #expect(output.contains("exit status 3"))
        // The tail: the last 40 lines, not the first 60.
        #expect(output.contains("line-1061\n") && output.contains("line-1100\n"))
        #expect(!output.contains("line-1060\n"))
        #expect(output.contains("kiln: FAILED"))
    }

    @Test func keepGoingRunsWhatDoesNotDependOnTheFailureAndStillExitsWithStatus1() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              fail: exit 1
              dependent:
                deps: [fail]
                cmds: [touch dependent.ran]
              first: touch first.ran
              second:
                deps: [first]
                cmds: [touch second.ran]
              default:
                deps: [dependent, second]
            """
        )
        let result = try await KilnProcess.run(["run", "--keep-going", "-j1"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(directory.exists("first.ran") && directory.exists("second.ran"))
        #expect(!directory.exists("dependent.ran"))
    }
}
