import Foundation
import KilnTestSupport
import Testing

/// Git hooks never get in the way and never pass unchecked: post-checkout works, a reinstall
/// never overwrites the chained hook, 100,000 staged files commit, a broken Taskfile blocks the
/// commit with its located errors, and no file list is left anywhere.
@Suite("Git hooks: robustness")
struct HookRobustnessTests {
    let hooks = HookTests()

    /// A git repository holding `files`, committed, with kiln's hooks installed.
    static func repository(prefix: String, _ files: [String: String]) async throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: prefix)
        for (path, text) in files { try directory.write(path, text) }
        try requireGit(["init", "-q", "-b", "main"], in: directory.path)
        try requireGit(["add", "."], in: directory.path)
        try requireGit(["commit", "-q", "-m", "first"], in: directory.path)
        let install = try await KilnProcess.run(["hooks", "install"], in: directory.path)
        #expect(install.status == 0, "\(install)")
        return directory
    }

    @Test("with post-checkout mapped, git checkout, git switch and git worktree add succeed and run the affected task")
    func postCheckout() async throws {
        let directory = try await Self.repository(
            prefix: "kiln-hooks",
            [
                "Taskfile.yml": """
                version: '3'
                hooks:
                  post-checkout: [note]
                tasks:
                  note:
                    sources: ['src/*.c']
                    cmds: ['echo "checked out" >> note.log']

                """,
                ".gitignore": "note.log\n.kiln/\n",
                "src/a.c": "a\n",
            ]
        )
        defer { directory.remove() }
        var result = try hooks.git(["checkout", "-q", "-b", "feature"], in: directory.path)
        #expect(result.status == 0, "\(result.output)")
        try directory.write("src/a.c", "changed on feature\n")
        try hooks.git(["commit", "-q", "-am", "feature"], in: directory.path)
        result = try hooks.git(["switch", "-q", "main"], in: directory.path)
        #expect(result.status == 0, "\(result.output)")
        #expect(
            directory.read("note.log") == "checked out\n",
            "src/a.c changed between the two heads: \(result.output)"
        )
        let worktree = try TemporaryDirectory(prefix: "kiln-worktree")
        defer { worktree.remove() }
        result = try hooks.git(["worktree", "add", "-q", worktree.path + "/w", "feature"], in: directory.path)
        #expect(result.status == 0, "\(result.output)")
        // A new worktree's checkout comes from nothing: every file is new there, so the task ran.
        #expect(FileManager.default.fileExists(atPath: worktree.path + "/w/note.log"), "\(result.output)")
    }

    @Test("a reinstall after another tool rewrote a hook keeps both hooks and says so")
    func reinstallNeverOverwritesTheChainedHook() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hooks")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nhooks:\n  pre-commit: [check]\ntasks:\n  check:\n    cmds: ['true']\n"
        )
        try hooks.git(["init", "-q"], in: directory.path)
        let hook = directory.path(".git/hooks/pre-commit")
        try "#!/bin/sh\n# the user's own\n".write(toFile: hook, atomically: true, encoding: .utf8)
        #expect(try await KilnProcess.run(["hooks", "install"], in: directory.path).status == 0)
        try "#!/bin/sh\n# another tool's\n".write(toFile: hook, atomically: true, encoding: .utf8)
        let again = try await KilnProcess.run(["hooks", "install"], in: directory.path)
        #expect(again.status == 1, "\(again)")
        #expect(
            again.standardError.contains("pre-commit.kiln-chained already holds the hook Kiln kept before"),
            "\(again)"
        )
        #expect(try String(contentsOfFile: hook + ".kiln-chained", encoding: .utf8) == "#!/bin/sh\n# the user's own\n")
        #expect(try String(contentsOfFile: hook, encoding: .utf8) == "#!/bin/sh\n# another tool's\n")
    }

    @Test("a Taskfile that doesn't load blocks the commit with its located errors; KILN_SKIP_HOOKS=1 lets it through")
    func brokenTaskfileBlocks() async throws {
        let directory = try await hooks.project()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nhooks:\n  pre-commit: [lint]\ntasks:\n  lint:\n    depz: [x]\n    cmds: ['true']\n"
        )
        try directory.write("src/b.c", "PASS\n")
        try hooks.git(["add", "."], in: directory.path)
        var commit = try hooks.git(["commit", "-q", "-m", "b"], in: directory.path)
        #expect(commit.status != 0, "\(commit.output)")
        #expect(commit.output.contains("Taskfile.yml:6:5: error: unknown key 'depz'"), "\(commit.output)")
        #expect(commit.output.contains("KILN_SKIP_HOOKS=1 skips the hook"), "\(commit.output)")
        commit = try hooks.git(["commit", "-q", "-m", "b"], in: directory.path, environment: ["KILN_SKIP_HOOKS": "1"])
        #expect(commit.status == 0, "\(commit.output)")
    }

    @Test("a commit of 100,000 staged files runs the affected task with the whole list, and leaves no list behind")
    func hundredThousandStagedFiles() async throws {
        let directory = try await Self.repository(
            prefix: "kiln-hooks-large",
            [
                "Taskfile.yml": """
                version: '3'
                hooks:
                  pre-commit: [count]
                tasks:
                  count:
                    sources: ['gen/**/*.txt']
                    cmds: ['wc -l < "$KILN_HOOK_FILES_FROM" > count.log; test -z "$KILN_HOOK_FILES"']

                """,
                ".gitignore": "count.log\n.kiln/\n",
            ]
        )
        defer { directory.remove() }
        let count = 100_000
        for group in 0..<100 {
            let folder = directory.path("gen/group-with-a-long-name-\(group)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for index in 0..<(count / 100) {
                _ = FileManager.default.createFile(atPath: folder + "/file-number-\(index).txt", contents: nil)
            }
        }
        let temporaryBefore = try FileManager.default.contentsOfDirectory(atPath: "/tmp").filter {
            $0.hasPrefix("kiln-hook-")
        }.count
        try hooks.git(["add", "gen"], in: directory.path)
        let commit = try hooks.git(["commit", "-q", "-m", "many"], in: directory.path)
        #expect(commit.status == 0, "\(commit.output.prefix(2000))")
        // wc counts newlines: the last path has none.
        #expect(directory.read("count.log")?.trimmingCharacters(in: .whitespacesAndNewlines) == String(count - 1))
        let lists = (try? FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln/hooks"))) ?? []
        #expect(!lists.contains { $0.hasPrefix("files-") }, "\(lists)")
        let temporaryAfter = try FileManager.default.contentsOfDirectory(atPath: "/tmp").filter {
            $0.hasPrefix("kiln-hook-")
        }.count
        #expect(temporaryAfter <= temporaryBefore)
    }
}

/// A commit made while a `kiln run` is using the project waits for it, saying so, instead of
/// failing with "another kiln run is using this project".
@Suite struct HookWaitTests {
    @Test("a pre-commit hook during a kiln run waits for the run, with a message, and then checks the commit")
    func commitWaitsForARun() async throws {
        let directory = try await HookRobustnessTests.repository(
            prefix: "kiln-hooks-wait",
            [
                "Taskfile.yml": """
                version: '3'
                hooks:
                  pre-commit: [lint]
                tasks:
                  lint:
                    sources: ['src/*.c']
                    cmds: ['echo linted >> lint.log']
                  slow:
                    cmds: ['touch slow.started; while [ ! -f release ]; do sleep 0.05; done']

                """,
                ".gitignore": "lint.log\nslow.started\nrelease\ncommit.out\n.kiln/\n",
                "src/a.c": "a\n",
            ]
        )
        defer { directory.remove() }
        let slow = try KilnProcess.start(["run", "slow"], in: directory.path)
        let started = await waitUntil(within: 60) { directory.exists("slow.started") }
        try #require(started)
        try directory.write("src/b.c", "b\n")
        try requireGit(["add", "src/b.c"], in: directory.path)
        // The run ends only once the hook's own `kiln run` has said it waits for it: released from
        // another thread, which reads the commit's output as it is written. (Released a second
        // after the hook's process appeared, the run once ended before a loaded CI machine let
        // the hook look.)
        let release = directory.path("release")
        let output = directory.path("commit.out")
        let waiting = "is using this project; waiting for it to finish (at most 300 s)"
        let releaser = Thread {
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline {
                if let text = try? String(contentsOfFile: output, encoding: .utf8), text.contains(waiting) { break }
                usleep(20_000)
            }
            _ = FileManager.default.createFile(atPath: release, contents: nil)
        }
        releaser.start()
        let commit = try runProgram(
            "/bin/sh",
            ["-c", #"exec "$@" > commit.out 2>&1"#, "sh", "/usr/bin/git"] + gitIdentityOptions
                + ["commit", "-q", "-m", "during a run"],
            in: directory.path
        )
        let said = directory.read("commit.out") ?? ""
        #expect(commit.status == 0, "\(said)")
        #expect(said.contains(waiting), "\(said)")
        #expect(directory.read("lint.log") == "linted\n")
        #expect(try await slow.wait(within: 60).status == 0)
    }
}
