import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// pre-commit tasks judge what is committed: a partly staged file is seen as staged, in place,
/// and the working tree, the index and the stash are never touched — whatever happens.
@Suite("Git hooks: staged content")
struct StagedHookTests {
    /// A repository whose pre-commit `lint` fails unless `src/a.c` says PASS; `extra` goes into
    /// the lint task's commands after the check.
    static func repository(extra: String = "") async throws -> TemporaryDirectory {
        try await HookRobustnessTests.repository(
            prefix: "kiln-staged",
            [
                "Taskfile.yml": """
                version: '3'
                hooks:
                  pre-commit: [lint]
                tasks:
                  lint:
                    sources: ['src/*.c']
                    cmds: ['grep -q PASS src/a.c'\(extra.isEmpty ? "" : ", '\(extra)'")]

                """,
                ".gitignore": ".kiln/\n*.log\n",
                "src/a.c": "PASS 1\n",
            ]
        )
    }

    /// What the index holds for `path`.
    static func staged(_ path: String, in directory: TemporaryDirectory) throws -> String {
        try requireGit(["show", ":" + path], in: directory.path)
    }

    @Test("bad staged content with a fixed working copy is refused; the working copy and the index stay as they were")
    func badStagedGoodWorkingCopy() async throws {
        let directory = try await Self.repository()
        defer { directory.remove() }
        try directory.write("src/a.c", "FAIL\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS 2\n")
        let commit = try runGit(["commit", "-q", "-m", "bad"], in: directory.path)
        #expect(commit.status != 0, "the commit holds FAIL: \(commit.output)")
        #expect(commit.output.contains("src/a.c is partly staged"), "\(commit.output)")
        #expect(directory.read("src/a.c") == "PASS 2\n")
        #expect(try Self.staged("src/a.c", in: directory) == "FAIL\n")
        #expect(try requireGit(["stash", "list"], in: directory.path).isEmpty)
    }

    @Test("good staged content with a bad unstaged edit commits; the edit stays unstaged in the working copy")
    func goodStagedBadWorkingCopy() async throws {
        let directory = try await Self.repository()
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS 2\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "FAIL, not staged\n")
        let commit = try runGit(["commit", "-q", "-m", "good"], in: directory.path)
        #expect(commit.status == 0, "the commit holds PASS: \(commit.output)")
        #expect(try requireGit(["show", "HEAD:src/a.c"], in: directory.path) == "PASS 2\n")
        #expect(directory.read("src/a.c") == "FAIL, not staged\n")
        #expect(try requireGit(["status", "--porcelain"], in: directory.path) == " M src/a.c\n")
        #expect(try requireGit(["stash", "list"], in: directory.path).isEmpty)
        let hooks = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln/hooks"))) ?? []
        #expect(!hooks.contains { $0.hasPrefix("staged-") }, "the staged copies are removed: \(hooks)")
    }

    @Test("a task that writes to a partly staged file writes the copy: the working copy is unchanged")
    func writesGoToTheCopy() async throws {
        let directory = try await Self.repository(extra: "echo formatted >> src/a.c")
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS 2\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS 3, not staged\n")
        let commit = try runGit(["commit", "-q", "-m", "good"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output)")
        #expect(directory.read("src/a.c") == "PASS 3, not staged\n")
        #expect(try requireGit(["show", "HEAD:src/a.c"], in: directory.path) == "PASS 2\n")
    }

    @Test("with no partly staged file the tasks run in place, in kiln's own mount namespace")
    func noPartlyStagedFileRunsInPlace() async throws {
        let directory = try await Self.repository(extra: "readlink /proc/self/ns/mnt > ns.log")
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS 2\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        let commit = try runGit(["commit", "-q", "-m", "whole"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output)")
        #expect(!commit.output.contains("partly staged"), "\(commit.output)")
        let own = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/mnt")
        #expect(directory.read("ns.log") == own + "\n")
        // Partly staged: another namespace, seen by the task only.
        try directory.write("src/a.c", "PASS 3\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS 4\n")
        #expect(try runGit(["commit", "-q", "-m", "partly"], in: directory.path).status == 0)
        let seen = directory.read("ns.log")
        #expect(seen != nil && seen != own + "\n", "\(seen ?? "none")")
    }

    @Test(
        "kill -9 of the hook and its run in the middle leaves the working copy and the index as they were; the next hook removes the copies"
    )
    func killedMidway() async throws {
        let directory = try await Self.repository(extra: "touch started.log && sleep 60")
        defer { directory.remove() }
        try directory.write("src/a.c", "PASS 2\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS 3, not staged\n")
        let path = directory.path
        let commit = Thread { _ = try? runGit(["commit", "-q", "-m", "killed"], in: path) }
        commit.start()
        let started = await waitUntil(within: 60) { directory.exists("started.log") }
        try #require(started)
        // Every kiln process working in this repository: the hook and the run it started.
        for process in processes(containing: "kiln")
        where process.commandLine.contains("kiln hook") || process.commandLine.contains("kiln run") {
            guard let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.pid)/cwd"),
                cwd == path || cwd.hasPrefix(path + "/")
            else { continue }
            kill(process.pid, SIGKILL)
        }
        let ended = await waitUntil(within: 60) {
            processes(containing: "sleep 60").allSatisfy { !$0.commandLine.contains(path) }
        }
        #expect(ended)
        #expect(directory.read("src/a.c") == "PASS 3, not staged\n")
        #expect(try Self.staged("src/a.c", in: directory) == "PASS 2\n")
        #expect(try requireGit(["stash", "list"], in: directory.path).isEmpty)
        // The copies the killed hook left go with the next hook.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln/hooks"))) ?? []
        #expect(left.contains { $0.hasPrefix("staged-") }, "the killed hook couldn't remove its copies: \(left)")
        try directory.write(
            "Taskfile.yml",
            directory.read("Taskfile.yml")!.replacingOccurrences(of: " && sleep 60", with: "")
        )
        try requireGit(["add", "Taskfile.yml", "src/a.c"], in: directory.path)
        let next = try runGit(["commit", "-q", "-m", "next"], in: directory.path)
        #expect(next.status == 0, "\(next.output)")
        try directory.write("src/a.c", "PASS 5\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        try directory.write("src/a.c", "PASS 6\n")
        #expect(try runGit(["commit", "-q", "-m", "partly"], in: directory.path).status == 0)
        let hooks = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln/hooks"))) ?? []
        #expect(!hooks.contains { $0.hasPrefix("staged-") || $0.hasPrefix("files-") }, "\(hooks)")
    }
}
