import Foundation
import KilnTestSupport
import Testing

/// The launcher's quick answer to a pre-commit hook with nothing affected: from the plan the full
/// `kiln hook` saved, never when that plan is out of date or something is affected.
@Suite("The launcher's quick hook")
struct QuickHookTests {
    let incremental = IncrementalTests()

    /// A committed repository whose pre-commit hook lints `src/*.c`; the Taskfile aged a minute so
    /// the plan isn't refused as too fresh to trust.
    func project() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-quick-hook")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            hooks:
              pre-commit: [lint]
            tasks:
              lint:
                sources: ['src/*.c']
                cmds: ['echo lint >> ran.log']

            """
        )
        try setModificationTime(directory.path("Taskfile.yml"), secondsAgo: 60)
        try directory.write(".gitignore", "ran.log\n.kiln/\n")
        try directory.write("src/a.c", "int a;\n")
        try directory.write("docs/guide.md", "# guide\n")
        for arguments in [["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]] {
            try requireGit(arguments, in: directory.path)
        }
        return directory
    }

    /// `kiln hook pre-commit` with `KILN_DEBUG=phases`: its result, and whether the launcher
    /// answered it (its phases line says `quick hook`).
    func hook(_ directory: TemporaryDirectory) async throws -> (result: KilnProcess.Result, quick: Bool) {
        let result = try await KilnProcess.run(
            ["hook", "pre-commit"],
            in: directory.path,
            environment: ["KILN_DEBUG": "phases"]
        )
        #expect(result.status == 0, "\(result)")
        return (result, result.standardError.contains("phases (ms): quick hook"))
    }

    /// Standard error without the phases line.
    func message(_ result: KilnProcess.Result) -> String {
        result.standardError.split(separator: "\n").filter { !$0.hasPrefix("kiln: phases") }.joined(separator: "\n")
    }

    @Test("nothing affected: the full hook saves a plan, and the next hook is answered from it with the same words")
    func answeredFromThePlan() async throws {
        let directory = try project()
        defer { directory.remove() }
        try directory.write("docs/guide.md", "# guide, edited\n")
        try requireGit(["add", "docs/guide.md"], in: directory.path)
        let full = try await hook(directory)
        #expect(!full.quick)
        #expect(message(full.result) == "kiln hook pre-commit: nothing affected (1 changed file)")
        #expect(FileManager.default.fileExists(atPath: directory.path(".kiln/hooks/pre-commit.plan")))
        let quick = try await hook(directory)
        #expect(quick.quick, "\(quick.result)")
        #expect(message(quick.result) == message(full.result))
        #expect(directory.read("ran.log") == nil)
        // A hook whose name maps no task: nothing to say, either way.
        let commitMessage = try await KilnProcess.run(
            ["hook", "commit-msg", "--", ".git/COMMIT_EDITMSG"],
            in: directory.path
        )
        #expect(commitMessage.status == 0 && commitMessage.standardError.isEmpty, "\(commitMessage)")
    }

    @Test("a staged file a hook task looks at: the launcher hands over and the task runs")
    func affectedRunsInFull() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await hook(directory)  // saves the plan
        #expect(try await hook(directory).quick)
        try directory.write("src/b.c", "int b;\n")
        try requireGit(["add", "src/b.c"], in: directory.path)
        let result = try await hook(directory)
        #expect(!result.quick)
        #expect(directory.read("ran.log") == "lint\n")
    }

    @Test("an edited Taskfile makes the plan stale: the full hook answers with the new sources")
    func editedTaskfile() async throws {
        let directory = try project()
        defer { directory.remove() }
        try directory.write("docs/guide.md", "# guide, edited\n")
        try requireGit(["add", "docs/guide.md"], in: directory.path)
        _ = try await hook(directory)
        #expect(try await hook(directory).quick)
        // Now lint looks at docs too: the staged guide affects it. Same size, so only the time
        // and the inode's change time tell.
        let taskfile = try #require(directory.read("Taskfile.yml"))
        try directory.write("Taskfile.yml", taskfile.replacingOccurrences(of: "['src/*.c']", with: "['docs/*.md']"))
        let result = try await hook(directory)
        #expect(!result.quick, "\(result)")
        #expect(directory.read("ran.log") == "lint\n")
    }

    @Test("a header a depfile named is in the plan: staging it runs the hook's task (real cc -MMD)")
    func discoveredHeader() async throws {
        let directory = try incremental.cProject()
        defer { directory.remove() }
        let taskfile = try #require(directory.read("Taskfile.yml"))
        try directory.write(
            "Taskfile.yml",
            taskfile.replacingOccurrences(of: "tasks:\n", with: "hooks:\n  pre-commit: [default]\ntasks:\n")
        )
        try setModificationTime(directory.path("Taskfile.yml"), secondsAgo: 60)
        try directory.write(".gitignore", "ran.log\nbuild/\n.kiln/\n")
        for arguments in [["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]] {
            try requireGit(arguments, in: directory.path)
        }
        #expect(try await KilnProcess.run(["run"], in: directory.path).status == 0)
        _ = incremental.ran(directory)
        try setModificationTime(directory.path(".kiln/state.db"), secondsAgo: 60)
        try? setModificationTime(directory.path(".kiln/state.db-wal"), secondsAgo: 60)
        _ = try await hook(directory)  // saves the plan, with the headers the depfiles named
        #expect(try await hook(directory).quick)
        try directory.write("include/b.h", "#define B_VALUE 3\n")
        try requireGit(["add", "include/b.h"], in: directory.path)
        let result = try await hook(directory)
        #expect(!result.quick, "\(result)")
        #expect(incremental.ran(directory) == ["cc src/b.c"])
    }

    @Test("a split index, which the launcher doesn't read: the full hook answers, through git")
    func splitIndex() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await hook(directory)
        #expect(try await hook(directory).quick)
        try requireGit(["update-index", "--split-index"], in: directory.path)
        try directory.write("docs/guide.md", "# guide, edited\n")
        try requireGit(["add", "docs/guide.md"], in: directory.path)
        let split = try await hook(directory)
        #expect(!split.quick, "\(split.result)")
        #expect(message(split.result) == "kiln hook pre-commit: nothing affected (1 changed file)")
        try directory.write("src/a.c", "int a = 1;\n")
        try requireGit(["add", "src/a.c"], in: directory.path)
        #expect(try await hook(directory).quick == false)
        #expect(directory.read("ran.log") == "lint\n")
    }

    @Test("without libKilnCLI.so beside it, kiln says what is missing and how to build it; skipping hooks still works")
    func missingLibrary() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-launcher-alone")
        defer { directory.remove() }
        let copy = directory.path("kiln")
        // Copied through a close-on-exec descriptor: one inherited by a process another test
        // starts meanwhile would make running the copy fail with "Text file busy".
        let bytes = try #require(FileManager.default.contents(atPath: try KilnProcess.executable()))
        let descriptor = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        try #require(descriptor >= 0)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        try #require(written == bytes.count)
        // Close-on-exec closes it at exec, not at fork: a process another test forks in that
        // window holds it open for a moment, and exec fails with "Text file busy" meanwhile. Go's
        // os/exec retries the same way.
        func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
            for _ in 0..<100 {
                do {
                    return try runProgram(copy, arguments, in: directory.path, environment: environment)
                } catch let error as NSError
                    where (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == Int(ETXTBSY)
                {
                    usleep(20_000)
                }
            }
            return try runProgram(copy, arguments, in: directory.path, environment: environment)
        }
        let (status, output) = try run(["--version"])
        #expect(status == 70)
        #expect(output.contains("can't load its command-line library \(directory.path)/libKilnCLI.so"), "\(output)")
        #expect(output.contains("swift build"))
        #expect(try run(["hook", "pre-commit"], environment: ["KILN_SKIP_HOOKS": "1"]) == (0, ""))
    }
}
