import Foundation
import KilnTestSupport
import Testing

/// Git hooks installed by `kiln hooks install` and fired by real `git commit` and `git push`.
@Suite("Git hooks")
struct HookTests {
    let affected = AffectedTests()

    /// Runs git; returns its exit status and output.
    @discardableResult
    func git(_ arguments: [String], in directory: String, environment: [String: String] = [:]) throws -> (
        status: Int32, output: String
    ) {
        try runGit(arguments, in: directory, environment: environment)
    }

    /// A repository whose pre-commit and pre-push hooks lint `src/*.c` (a file fails unless it
    /// says "PASS"), with the hooks installed.
    func project() async throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-hooks")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            hooks:
              pre-commit: [lint, record]
              pre-push: lint
            tasks:
              lint:
                each: sources
                sources: ['src/*.c']
                cmds: ['echo "lint {{.source}}" >> ran.log', 'grep -q PASS {{.source}}']
              record:
                sources: ['src/*.c']
                cmds: ['echo "{{.staged_files}}" >> staged.log']

            """
        )
        try directory.write(".gitignore", "ran.log\nstaged.log\n.kiln/\n")
        try directory.write("src/a.c", "PASS\n")
        try git(["init", "-q", "-b", "main"], in: directory.path)
        try git(["add", "."], in: directory.path)
        try git(["commit", "-q", "-m", "first"], in: directory.path)
        let result = try await KilnProcess.run(["hooks", "install"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        return directory
    }

    @Test("install keeps a hook that isn't Kiln's and chains it; uninstall puts it back")
    func installChainsUninstallRestores() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hooks")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nhooks:\n  pre-commit: [check]\ntasks:\n  check:\n    cmds: ['true']\n"
        )
        try git(["init", "-q"], in: directory.path)
        let own = directory.path(".git/hooks/pre-commit")
        try "#!/bin/sh\necho mine >> \"$(git rev-parse --show-toplevel)/own.log\"\n".write(
            toFile: own,
            atomically: true,
            encoding: .utf8
        )
        chmod(own, 0o755)
        var result = try await KilnProcess.run(["hooks", "install"], in: directory.path)
        #expect(result.standardOutput.contains("kept your pre-commit hook as pre-commit.kiln-chained"), "\(result)")
        #expect(try String(contentsOfFile: own, encoding: .utf8).contains("hook pre-commit -- \"$@\""))
        result = try await KilnProcess.run(["hooks", "status"], in: directory.path)
        #expect(result.standardOutput.contains("pre-commit: check; installed, chains your own"), "\(result)")
        try directory.write("x.txt", "x\n")
        try git(["add", "x.txt"], in: directory.path)
        #expect(try git(["commit", "-q", "-m", "x"], in: directory.path).status == 0)
        #expect(directory.read("own.log") == "mine\n", "the chained hook ran")
        result = try await KilnProcess.run(["hooks", "uninstall"], in: directory.path)
        #expect(result.standardOutput.contains("your own is back"), "\(result)")
        #expect(try String(contentsOfFile: own, encoding: .utf8).contains("echo mine"))
        #expect(!FileManager.default.fileExists(atPath: own + ".kiln-chained"))
    }

    @Test("core.hooksPath is honoured")
    func hooksPath() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hooks")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nhooks:\n  pre-commit: check\ntasks:\n  check:\n    cmds: ['true']\n"
        )
        try git(["init", "-q"], in: directory.path)
        try git(["config", "core.hooksPath", "githooks"], in: directory.path)
        let result = try await KilnProcess.run(["hooks", "install"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(FileManager.default.isExecutableFile(atPath: directory.path("githooks/pre-commit")))
    }

    @Test("pre-commit runs the affected task on the staged files; a failure blocks the commit; KILN_SKIP_HOOKS skips")
    func preCommit() async throws {
        let directory = try await project()
        defer { directory.remove() }
        try directory.write("src/b.c", "PASS\n")
        try git(["add", "src/b.c"], in: directory.path)
        var commit = try git(["commit", "-q", "-m", "b"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output)")
        #expect(affected.incremental.ran(directory) == ["lint src/b.c"], "only the staged file's job")
        #expect(directory.read("staged.log") == "src/b.c\n", "{{.staged_files}}")
        try directory.write("src/c.c", "FAIL\n")
        try git(["add", "src/c.c"], in: directory.path)
        commit = try git(["commit", "-q", "-m", "c"], in: directory.path)
        #expect(commit.status != 0, "a failing task blocks the commit")
        #expect(commit.output.contains("FAILED: lint src/c.c"), "\(commit.output)")
        #expect(try git(["log", "--oneline"], in: directory.path).output.split(separator: "\n").count == 2)
        commit = try git(["commit", "-q", "-m", "c"], in: directory.path, environment: ["KILN_SKIP_HOOKS": "1"])
        #expect(commit.status == 0, "\(commit.output)")
        // Nothing the hook runs is affected: it says so and lets the commit through.
        try directory.write("README", "readme\n")
        try git(["add", "README"], in: directory.path)
        commit = try git(["commit", "-q", "-m", "readme"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output)")
        #expect(commit.output.contains("kiln hook pre-commit: nothing affected"), "\(commit.output)")
    }

    @Test("git commit -a and git commit PATH: the hook sees what the commit records, from git's temporary index")
    func temporaryIndex() async throws {
        let directory = try await project()
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS\nedited, not staged\n")
        var commit = try git(["commit", "-q", "-a", "-m", "all"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output)")
        #expect(affected.incremental.ran(directory) == ["lint src/a.c"], "\(commit.output)")
        try directory.write("src/a.c", "FAIL\n")
        commit = try git(["commit", "-q", "-m", "only a.c", "--", "src/a.c"], in: directory.path)
        #expect(commit.status != 0, "a failing task blocks a commit of named paths: \(commit.output)")
        #expect(commit.output.contains("FAILED: lint src/a.c"), "\(commit.output)")
    }

    @Test(
        "a hook never loses work: partly staged and untracked files are as before, after a failing and a passing hook"
    )
    func partialStagingKept() async throws {
        let directory = try await project()
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS\nstaged line\n")
        try git(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS\nstaged line\nunstaged line\n")
        try directory.write("notes.txt", "untracked notes\n")
        try directory.write("src/d.c", "FAIL\n")
        try git(["add", "src/d.c"], in: directory.path)
        let before = try git(["diff"], in: directory.path).output
        let stagedBefore = try git(["diff", "--cached"], in: directory.path).output
        #expect(try git(["commit", "-q", "-m", "fails"], in: directory.path).status != 0)
        #expect(try git(["diff"], in: directory.path).output == before)
        #expect(try git(["diff", "--cached"], in: directory.path).output == stagedBefore)
        #expect(directory.read("notes.txt") == "untracked notes\n")
        try directory.write("src/d.c", "PASS\n")
        try git(["add", "src/d.c"], in: directory.path)
        #expect(try git(["commit", "-q", "-m", "passes"], in: directory.path).status == 0)
        #expect(directory.read("src/a.c") == "PASS\nstaged line\nunstaged line\n", "the unstaged line is still there")
        #expect(try git(["diff"], in: directory.path).output == before, "still unstaged")
        #expect(
            try git(["show", "HEAD:src/a.c"], in: directory.path).output == "PASS\nstaged line\n",
            "the commit has the staged content"
        )
        #expect(directory.read("notes.txt") == "untracked notes\n")
    }

    @Test("pre-push checks the commits being pushed; a failure blocks the push to a local bare repository")
    func prePush() async throws {
        let directory = try await project()
        defer { directory.remove() }
        let remote = try TemporaryDirectory(prefix: "kiln-remote")
        defer { remote.remove() }
        try git(["init", "-q", "--bare", remote.path], in: directory.path)
        try git(["remote", "add", "origin", remote.path], in: directory.path)
        var push = try git(["push", "-q", "origin", "main"], in: directory.path)
        #expect(push.status == 0, "\(push.output)")
        _ = affected.incremental.ran(directory)
        try directory.write("src/e.c", "FAIL\n")
        try git(["add", "src/e.c"], in: directory.path)
        #expect(
            try git(["commit", "-q", "-m", "e"], in: directory.path, environment: ["KILN_SKIP_HOOKS": "1"]).status == 0
        )
        push = try git(["push", "-q", "origin", "main"], in: directory.path)
        #expect(push.status != 0, "a failing task blocks the push")
        #expect(push.output.contains("FAILED: lint src/e.c"), "\(push.output)")
        #expect(affected.incremental.ran(directory) == ["lint src/e.c"], "only what the pushed commits changed")
        try directory.write("src/e.c", "PASS\n")
        try git(["commit", "-q", "-am", "fix e"], in: directory.path, environment: ["KILN_SKIP_HOOKS": "1"])
        push = try git(["push", "-q", "origin", "main"], in: directory.path)
        #expect(push.status == 0, "\(push.output)")
    }
}
