import Foundation
import KilnTestSupport
import Testing

/// `kiln affected` and `kiln run --affected` on real git repositories made with the git CLI.
@Suite("Affected runs")
struct AffectedTests {
    let incremental = IncrementalTests()

    func git(_ arguments: [String], in directory: TemporaryDirectory) throws {
        try requireGit(arguments, in: directory.path)
    }

    /// A repository with a lint (per file), a build, a package that depends on it, and docs in an
    /// included Taskfile; every command appends to ran.log (ignored by git).
    func project() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-affected")
        try directory.write("src/a.c", "int a;\n")
        try directory.write("src/b.c", "int b;\n")
        try directory.write("docs/guide.md", "# Guide\n")
        try directory.write(".gitignore", "ran.log\nout/\n.kiln/\n")
        try directory.write(
            "docs/Taskfile.yml",
            """
            version: '3'
            tasks:
              html:
                sources: ['*.md']
                cmds: ['echo docs >> ../ran.log']

            """
        )
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            includes:
              docs: {taskfile: docs/Taskfile.yml, dir: docs}
            tasks:
              lint:
                each: sources
                sources: ['src/**/*.c']
                cmds: ['echo "lint {{.source}}" >> ran.log']
              build:
                sources: ['src/**/*.c']
                generates: [out/app]
                cmds: ['mkdir -p out', 'cat src/*.c > out/app', 'echo build >> ran.log']
              package:
                deps: [build]
                cmds: ['echo package >> ran.log']
              default:
                deps: [lint, package, docs:html]

            """
        )
        try git(["init", "-q", "-b", "main"], in: directory)
        try git(["add", "."], in: directory)
        try git(["commit", "-q", "-m", "first"], in: directory)
        return directory
    }

    func affected(_ directory: TemporaryDirectory, _ extra: [String] = []) async throws -> [String: [String: Any]] {
        let result = try await KilnProcess.run(["affected", "--json"] + extra, in: directory.path)
        #expect(result.status == 0, "\(result)")
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        )
        let tasks = try #require(document["tasks"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: tasks.map { ($0["name"] as? String ?? "", $0) })
    }

    @Test("a changed source affects its tasks and every task that depends on them; an each: task only for that file")
    func changedSource() async throws {
        let directory = try project()
        defer { directory.remove() }
        #expect(try await affected(directory).isEmpty)
        try directory.write("src/a.c", "int a = 1;\n")
        let tasks = try await affected(directory)
        #expect(Set(tasks.keys) == ["lint", "build", "package", "default"])
        #expect(tasks["lint"]?["files"] as? [String] == ["src/a.c"])
        #expect(tasks["build"]?["reason"] as? String == "src/a.c changed")
        #expect(tasks["package"]?["reason"] as? String == "depends on an affected task")
        let result = try await KilnProcess.run(["run", "--affected"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["build", "lint src/a.c", "package"])
    }

    @Test("a task with calls runs whole when affected: its calls are made, its pieces aren't listed")
    func affectedTaskWithCalls() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-affected-calls")
        defer { directory.remove() }
        try directory.write(".gitignore", "ran.log\n.kiln/\n")
        try directory.write("a.txt", "a\n")
        try directory.write("b.txt", "b\n")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              guarded:
                sources: [a.txt]
                cmds:
                  - echo guarded >> ran.log
                  - task: helper
                  - echo guarded-end >> ran.log
              plain:
                deps: [notes]
                cmds:
                  - echo plain >> ran.log
                  - task: helper
                    vars: {WHO: plain}
              notes:
                sources: [b.txt]
                cmds: ['echo notes >> ran.log']
              helper:
                cmds: ['echo helper {{.WHO | default "guarded"}} >> ran.log']
              default:
                deps: [guarded, plain]

            """
        )
        try git(["init", "-q", "-b", "main"], in: directory)
        try git(["add", "."], in: directory)
        try git(["commit", "-q", "-m", "first"], in: directory)
        try directory.write("a.txt", "a2\n")
        #expect(Set(try await affected(directory).keys) == ["guarded", "default"])
        var result = try await KilnProcess.run(["run", "--affected"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("ran.log") == "guarded\nhelper guarded\nguarded-end\n")
        #expect(result.standardError.contains("affect 2 of 6 tasks"), "\(result)")
        try git(["commit", "-q", "-am", "second"], in: directory)
        unlink(directory.path("ran.log"))
        // A dependency before the first call affects the task's later pieces: all of it runs.
        try directory.write("b.txt", "b2\n")
        #expect(Set(try await affected(directory).keys) == ["notes", "plain", "default"])
        result = try await KilnProcess.run(["run", "--affected"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("ran.log") == "notes\nplain\nhelper plain\n")
    }

    @Test("untracked files count, ignored ones don't; --staged sees only the index")
    func untrackedIgnoredStaged() async throws {
        let directory = try project()
        defer { directory.remove() }
        try directory.write("out/app", "ignored output\n")
        try directory.write("src/new.c", "int n;\n")
        var tasks = try await affected(directory)
        #expect(tasks["lint"]?["files"] as? [String] == ["src/new.c"])
        #expect(try await affected(directory, ["--staged"]).isEmpty)
        try git(["add", "src/new.c"], in: directory)
        tasks = try await affected(directory, ["--staged"])
        #expect(tasks["lint"]?["files"] as? [String] == ["src/new.c"])
    }

    @Test("between revisions, and a changed Taskfile affects the tasks it defines")
    func revisionsAndTaskfiles() async throws {
        let directory = try project()
        defer { directory.remove() }
        try git(["checkout", "-q", "-b", "feature"], in: directory)
        try directory.write(
            "docs/Taskfile.yml",
            """
            version: '3'
            tasks:
              html:
                sources: ['*.md']
                cmds: ['echo "docs, rebuilt" >> ../ran.log']

            """
        )
        try git(["commit", "-q", "-am", "docs task changed"], in: directory)
        let tasks = try await affected(directory, ["--base", "main", "--head", "feature"])
        #expect(Set(tasks.keys) == ["docs:html", "default"])
        #expect(tasks["docs:html"]?["reason"] as? String == "Taskfile.yml changed")
        let result = try await KilnProcess.run(["affected", "--base", "nowhere"], in: directory.path)
        #expect(result.status == 2)
        #expect(result.standardError.contains("'nowhere' does not name a commit"), "\(result)")
    }

    @Test("a renamed file counts under both paths")
    func rename() async throws {
        let directory = try project()
        defer { directory.remove() }
        try git(["mv", "src/b.c", "src/renamed.c"], in: directory)
        let tasks = try await affected(directory)
        #expect(tasks["lint"]?["files"] as? [String] == ["src/renamed.c"], "the job of the file that exists")
        #expect((tasks["build"]?["reason"] as? String)?.hasSuffix(".c changed") == true)
    }

    @Test("outside a git repository: a clear note, and every task counts")
    func outsideGit() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-nogit")
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  default:\n    cmds: ['echo ran >> ran.log']\n")
        var result = try await KilnProcess.run(["affected"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(
            result.standardError.contains("is not inside a git repository; without git, every task counts as affected"),
            "\(result)"
        )
        #expect(result.standardOutput == "default\n")
        result = try await KilnProcess.run(["run", "--affected"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["ran"])
    }

    @Test("a header a depfile named affects exactly the files that include it (real cc -MMD)")
    func headerThroughDepfile() async throws {
        let directory = try incremental.cProject()
        defer { directory.remove() }
        try directory.write(".gitignore", "ran.log\nbuild/\n.kiln/\n")
        try git(["init", "-q", "-b", "main"], in: directory)
        try git(["add", "."], in: directory)
        try git(["commit", "-q", "-m", "first"], in: directory)
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write("include/b.h", "#define B_VALUE 3\n")
        let tasks = try await affected(directory)
        #expect(tasks["default"]?["files"] as? [String] == ["src/b.c"])
        _ = try await KilnProcess.run(["run", "--affected"], in: directory.path)
        #expect(incremental.ran(directory) == ["cc src/b.c"])
    }
}
