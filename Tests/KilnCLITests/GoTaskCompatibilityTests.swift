import Foundation
import KilnTestSupport
import Testing

/// Taskfile constructs that go-task accepts, run by both tools on identical copies of a project:
/// each leaves the same files with the same contents.
@Suite struct GoTaskCompatibilityTests {
    /// A case: the project's files, the task to run, and the files whose contents are compared.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var files: [String: String]
        var task: String
        var compared: [String]
        var environment: [String: String] = [:]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "an included directory holding Taskfile.yaml, or taskfile.dist.yml",
            files: [
                "Taskfile.yml":
                    "version: '3'\nincludes:\n  lib: ./lib\n  dist: ./dist\ntasks:\n  both:\n    deps: ['lib:hello', 'dist:hello']\n",
                "lib/Taskfile.yaml": "version: '3'\ntasks:\n  hello:\n    cmds: ['echo yaml > lib.out']\n",
                "dist/taskfile.dist.yml": "version: '3'\ntasks:\n  hello:\n    cmds: ['echo dist > dist.out']\n",
            ],
            task: "both",
            compared: ["lib.out", "dist.out"]
        ),
        Case(
            name: "a null item in deps is skipped",
            files: [
                "Taskfile.yml":
                    "version: '3'\ntasks:\n  a:\n    deps: [~, b, null]\n    cmds: ['echo a >> a.out']\n  b:\n    cmds: ['echo b > b.out']\n"
            ],
            task: "a",
            compared: ["a.out", "b.out"]
        ),
        Case(
            name: "a missing dir: is made before the first command",
            files: [
                "Taskfile.yml": "version: '3'\ntasks:\n  d:\n    dir: build/sub\n    cmds: ['echo here > made.out']\n"
            ],
            task: "d",
            compared: ["build/sub/made.out"]
        ),
    ]

    @Test("kiln leaves what go-task leaves", arguments: cases)
    func sameResult(example: Case) async throws {
        let task = try Peers.executable("task")
        let scratch = try TemporaryDirectory(prefix: "kiln-gotask")
        defer { scratch.remove() }
        for tool in ["go-task", "kiln"] {
            for (path, text) in example.files { try scratch.write(tool + "/" + path, text) }
        }
        let goTask = try runProgram(
            task,
            ["--silent", example.task],
            in: scratch.path("go-task"),
            environment: example.environment
        )
        #expect(goTask.status == 0, "go-task: \(goTask.output)")
        let kiln = try await KilnProcess.run(
            ["run", example.task],
            in: scratch.path("kiln"),
            environment: example.environment
        )
        #expect(kiln.status == 0, "\(kiln)")
        for path in example.compared {
            let expected = scratch.read("go-task/" + path)
            #expect(expected != nil, "go-task left no \(path)")
            #expect(scratch.read("kiln/" + path) == expected, "\(path)")
        }
    }
}
