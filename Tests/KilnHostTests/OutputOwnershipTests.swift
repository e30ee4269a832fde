import Foundation
import KilnTestSupport
import Testing

@testable import KilnHost

/// One file, one writer: two tasks declaring the same output are a located error, and so are two
/// jobs of an `each:` task; overlapping `sources:` patterns give a file one job.
@Suite struct OutputOwnershipTests {
    @Test("two tasks declaring the same output (written two ways) are an error at the second, with a note at the first")
    func duplicateOutputAcrossTasks() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                vars:
                  OUT: out
                tasks:
                  a:
                    generates: ['{{.OUT}}/lib.a']
                    cmds: ['true']
                  b:
                    generates: [other.txt, './out//lib.a']
                    cmds: ['true']
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .duplicateOutput)
        #expect(error.message == "tasks 'a' and 'b' both declare the output out/lib.a; only one task may write a file")
        #expect(error.location == at(directory.path("Taskfile.yml"), 9, 28))
        #expect(error.notes.first?.location == at(directory.path("Taskfile.yml"), 6, 17))
    }

    @Test("one task listing an output twice, globs, and exclusions are not duplicates")
    func notDuplicates() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              a:
                generates: [x.txt, x.txt, 'build/*.o']
                cmds: ['true']
              b:
                generates: ['build/*.o', {exclude: x.txt}]
                cmds: ['true']
            """
        )
        _ = try TaskfileLoader(usesCache: false).load(path: directory.path("Taskfile.yml"))
    }

    @Test("a dependency chain of 200,000 tasks loads and plans: no recursion per task")
    func longChain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let count = 200_000
        var text = "version: '3'\ntasks:\n  t0: {cmds: ['true']}\n"
        text.reserveCapacity(count * 40)
        for index in 1..<count { text += "  t\(index): {deps: [t\(index - 1)], cmds: ['true']}\n" }
        try directory.write("Taskfile.yml", text)
        let taskfile = try TaskfileLoader(usesCache: false).load(path: directory.path("Taskfile.yml"))
        let project = try Project(taskfile: taskfile, runner: ProcessMonitor())
        let plan = try BuildPlanner(taskfile: taskfile, registry: project.registry).plan(targets: ["t\(count - 1)"])
        #expect(plan.tasks.count == count)
        #expect(plan.tasks.first?.definition.name == "t0")
    }

    @Test("a cycle at the end of a long chain is found and reported once")
    func cycleAfterLongChain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var text = "version: '3'\ntasks:\n  t0: {deps: [t2999], cmds: ['true']}\n"
        for index in 1..<3_000 { text += "  t\(index): {deps: [t\(index - 1)], cmds: ['true']}\n" }
        let errors = try loadErrors(in: directory, ["Taskfile.yml": text])
        let error = try #require(errors.only)
        #expect(error.code == .dependencyCycle)
        #expect(error.notes.count == 3_000)
    }
}
