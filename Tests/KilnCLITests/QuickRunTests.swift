import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The launcher's answer to a no-op `kiln run`: from the snapshot of the last complete run, with
/// the full command's words, and never when something changed or it can't tell.
@Suite("The launcher's quick no-op run")
struct QuickRunTests {
    let incremental = IncrementalTests()

    /// `kiln ARGUMENTS…` with `environment` and `KILN_DEBUG=phases` (unless `environment` sets it,
    /// phases among its topics): its result, and whether the launcher answered it (its phases line
    /// says `quick run`).
    func kiln(
        _ arguments: [String],
        _ directory: TemporaryDirectory,
        environment: [String: String] = [:]
    ) async throws -> (result: KilnProcess.Result, quick: Bool) {
        var environment = environment
        if environment["KILN_DEBUG"] == nil { environment["KILN_DEBUG"] = "phases" }
        let result = try await KilnProcess.run(arguments, in: directory.path, environment: environment)
        return (result, result.standardError.contains("phases (ms): quick run"))
    }

    /// Standard output with the seconds masked: `kiln: done: 0 ran, 3 up to date in S s`.
    func words(_ result: KilnProcess.Result) -> String {
        result.standardOutput.replacingOccurrences(
            of: #"in [0-9]+\.[0-9]{2} s"#,
            with: "in S s",
            options: .regularExpression
        )
    }

    /// The incremental tests' project, built once, and up to date.
    func builtProject() async throws -> TemporaryDirectory {
        let directory = try incremental.project()
        let first = try await KilnProcess.run(["run"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        #expect(incremental.ran(directory) == ["copy src/a.txt", "copy src/b.txt", "join"])
        return directory
    }

    @Test("the launcher's answer loads only the Swift core: no CLI, concurrency, Dispatch or Regex")
    func answerLoadsOnlyTheCore() async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        let logs = try TemporaryDirectory()
        defer { logs.remove() }
        let quick = try await kiln(
            ["run"],
            directory,
            environment: ["KILN_DEBUG": "phases", "LD_DEBUG": "files", "LD_DEBUG_OUTPUT": logs.path("ld")]
        )
        #expect(quick.quick && quick.result.status == 0, "\(quick.result)")
        let libraries = try LoadedLibrariesTests.loaded(in: logs.path)
        #expect(libraries.contains { $0.contains("libswiftCore.so") }, "\(libraries)")
        for unwanted in [
            "libKilnCLI", "libswift_Concurrency", "libdispatch", "libswiftDispatch", "libswift_StringProcessing",
            "libswift_RegexParser", "libFoundation",
        ] {
            let found = libraries.filter { $0.contains(unwanted) }
            #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
        }
    }

    @Test("a no-op run is answered by the launcher, with the words of the full command, for the targets given")
    func answeredWithTheFullCommandsWords() async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        // `--wait` changes nothing here, but it is an option the launcher doesn't take: the full
        // command answers.
        let full = try await kiln(["run", "--wait"], directory)
        #expect(!full.quick && full.result.status == 0, "\(full.result)")
        #expect(words(full.result) == "kiln: done: 0 ran, 3 up to date in S s\n")
        for arguments in [["run"], [], ["run", "-j", "2"]] {
            let quick = try await kiln(arguments, directory)
            #expect(quick.quick && quick.result.status == 0, "\(arguments): \(quick.result)")
            #expect(words(quick.result) == words(full.result))
        }
        #expect(incremental.ran(directory).isEmpty)
        // Other targets: the snapshot is of `default`, so the full command decides, then the
        // launcher answers for them.
        let other = try await kiln(["run", "copy"], directory)
        #expect(!other.quick && other.result.status == 0, "\(other.result)")
        let again = try await kiln(["run", "copy"], directory)
        #expect(again.quick && words(again.result) == "kiln: done: 0 ran, 2 up to date in S s\n", "\(again.result)")
        #expect(incremental.ran(directory).isEmpty)
    }

    @Test(
        "a job rerun for a deleted or edited output, or forced, stays in the snapshot: the next run is the launcher's no-op"
    )
    func rerunOutputsKeepTheSnapshotWhole() async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        let reruns: [(String, [String], @Sendable (TemporaryDirectory) throws -> Void, [String])] = [
            (
                "an each: job's output deleted", ["run"],
                { try FileManager.default.removeItem(atPath: $0.path("out/a.txt")) }, ["copy src/a.txt"]
            ),
            ("an each: job's output edited", ["run"], { try $0.write("out/b.txt", "edited\n") }, ["copy src/b.txt"]),
            (
                "a plain task's output deleted", ["run"],
                { try FileManager.default.removeItem(atPath: $0.path("joined.txt")) }, ["join"]
            ),
            (
                "every output deleted", ["run"], { try FileManager.default.removeItem(atPath: $0.path("out")) },
                ["copy src/a.txt", "copy src/b.txt"]
            ),
            ("--force", ["run", "--force"], { _ in }, ["copy src/a.txt", "copy src/b.txt", "join"]),
        ]
        for (what, arguments, change, runs) in reruns {
            try change(directory)
            let rerun = try await kiln(arguments, directory)
            #expect(rerun.result.status == 0, "\(what): \(rerun.result)")
            // Deleting `out` rewrites join's inputs with the same bytes: join stays up to date.
            #expect(incremental.ran(directory) == runs, "\(what)")
            let next = try await kiln(["run"], directory)
            #expect(next.quick, "\(what): the snapshot doesn't vouch for every job: \(next.result)")
            #expect(words(next.result) == "kiln: done: 0 ran, 3 up to date in S s\n", "\(what)")
            #expect(incremental.ran(directory).isEmpty, "\(what)")
        }
    }

    /// A change, and what the next run must then run.
    struct Change: Sendable, CustomStringConvertible {
        var description: String
        var apply: @Sendable (TemporaryDirectory) throws -> Void
        var runs: [String]
        /// Whether the change is to a path the snapshot watches, which the launcher's look finds
        /// (a Taskfile edit may be found instead by the Taskfile cache's identity, which doesn't
        /// say what changed).
        var watched = true
    }

    static let changes: [Change] = [
        Change(
            description: "a source edited",
            apply: { try $0.write("src/a.txt", "alpha, edited\n") },
            runs: ["copy src/a.txt", "join"]
        ),
        Change(
            description: "a source added to a glob",
            apply: { try $0.write("src/c.txt", "gamma\n") },
            runs: ["copy src/c.txt", "join"]
        ),
        Change(
            description: "a source deleted",
            apply: { try FileManager.default.removeItem(atPath: $0.path("src/b.txt")) },
            runs: ["join"]
        ),
        Change(
            description: "an output deleted",
            apply: { try FileManager.default.removeItem(atPath: $0.path("out/a.txt")) },
            runs: ["copy src/a.txt"]
        ),
        Change(description: "an output edited", apply: { try $0.write("joined.txt", "tampered\n") }, runs: ["join"]),
        Change(
            description: "the Taskfile's command edited",
            apply: { directory in
                let taskfile = directory.read("Taskfile.yml")!
                try directory.write(
                    "Taskfile.yml",
                    taskfile.replacingOccurrences(of: "cat out/a.txt", with: "cat  out/a.txt")
                )
            },
            runs: ["join"],
            watched: false
        ),
        Change(
            description: "an included Taskfile added",
            apply: { directory in
                try directory.write("extra.yml", "version: '3'\ntasks:\n  hello: ['echo hello >> ran.log']\n")
                let taskfile = directory.read("Taskfile.yml")!
                try directory.write(
                    "Taskfile.yml",
                    taskfile.replacingOccurrences(of: "tasks:\n", with: "includes:\n  extra: ./extra.yml\ntasks:\n")
                )
            },
            runs: [],
            watched: false
        ),
    ]

    @Test(
        "after a change the launcher hands over, the full command runs what changed, and the next no-op is quick again",
        arguments: changes
    )
    func changesAreTheFullCommands(_ change: Change) async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        try change.apply(directory)
        let changed = try await kiln(["run"], directory)
        #expect(!changed.quick && changed.result.status == 0, "\(change): \(changed.result)")
        #expect(incremental.ran(directory) == change.runs.sorted(), "\(change)")
        // The launcher's look found the changed path: the full command loaded the Taskfile at
        // once, and took what the look found instead of looking again.
        if change.watched {
            #expect(
                changed.result.standardError.contains("phases (ms): load (the launcher looked)"),
                "\(change): \(changed.result)"
            )
        }
        // The run wrote into directories its globs read moments before it looked: the next
        // no-op may be the full command's, to look again; the one after it is the launcher's.
        try await Task.sleep(for: .milliseconds(60))
        let settling = try await kiln(["run"], directory)
        #expect(settling.result.status == 0 && incremental.ran(directory).isEmpty, "\(change): \(settling.result)")
        let next = try await kiln(["run"], directory)
        #expect(next.quick && next.result.status == 0, "\(change): \(next.result)")
        #expect(incremental.ran(directory).isEmpty, "\(change)")
    }

    @Test("a Taskfile that breaks beside a changed source: the load beside the scan reports what the full command does")
    func brokenTaskfileLoadedBesideTheScan() async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        try directory.write("src/a.txt", "alpha, edited\n")
        let taskfile = directory.read("Taskfile.yml")!
        try directory.write(
            "Taskfile.yml",
            taskfile.replacingOccurrences(of: "tasks:\n", with: "tasks:\n  broken: [\n")
        )
        // The launcher finds the changed source before it reads the Taskfile: the full command
        // loads beside its scan, and the load fails.
        let beside = try await kiln(["run"], directory)
        // `--wait` is an option the launcher doesn't take: the full command, scan first.
        let after = try await kiln(["run", "--wait"], directory)
        #expect(beside.result.status == 2 && after.result.status == 2, "\(beside.result)\n\(after.result)")
        func errors(_ result: KilnProcess.Result) -> [Substring] {
            result.standardError.split(separator: "\n").filter { !$0.hasPrefix("kiln: phases") }
        }
        #expect(errors(beside.result) == errors(after.result))
        #expect(beside.result.standardError.contains("Taskfile.yml:"), "\(beside.result)")
        #expect(incremental.ran(directory).isEmpty)
        // Mended, the run takes the change.
        try directory.write("Taskfile.yml", taskfile)
        let mended = try await kiln(["run"], directory)
        #expect(
            mended.result.status == 0 && incremental.ran(directory) == ["copy src/a.txt", "join"],
            "\(mended.result)"
        )
    }

    @Test("what the launcher can't vouch for is the full command's: options, variables, the remote, another run")
    func handsOverWhatItCannotDecide() async throws {
        let directory = try await builtProject()
        defer { directory.remove() }
        let forced = try await kiln(["run", "--force"], directory)
        #expect(!forced.quick && forced.result.status == 0, "\(forced.result)")
        #expect(incremental.ran(directory) == ["copy src/a.txt", "copy src/b.txt", "join"])
        let variable = try await kiln(["run", "NAME=value"], directory)
        #expect(!variable.quick && variable.result.status == 0, "\(variable.result)")
        for (name, value) in [("KILN_REMOTE_CACHE", "grpc://127.0.0.1:9"), ("KILN_REMOTE_INSTANCE", "main")] {
            let remote = try await kiln(["run"], directory, environment: [name: value])
            #expect(!remote.quick, "\(name): \(remote.result)")
        }
        let json = try await kiln(["run", "--json"], directory)
        #expect(!json.quick && json.result.standardOutput.contains("\"event\""), "\(json.result)")
        let quick = try await kiln(["run"], directory)
        #expect(quick.quick, "\(quick.result)")
        #expect(incremental.ran(directory).isEmpty)

        // Another run holds the project: the full command says so (exit 3), as it would anyway.
        let descriptor = open(directory.path(".kiln/lock"), O_RDWR)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        #expect(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        let busy = try await kiln(["run"], directory)
        #expect(!busy.quick && busy.result.status == 3, "\(busy.result)")
        #expect(busy.result.standardError.contains("another kiln run"))
        flock(descriptor, LOCK_UN)
        let free = try await kiln(["run"], directory)
        #expect(free.quick && free.result.status == 0, "\(free.result)")
    }

    /// A project whose one task writes the variable `name` into `file`.
    func echoProject(of name: String, into file: String) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-quick-run")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                generates: [\(file)]
                cmds: ['echo "{{.\(name)}}" > \(file)']

            """
        )
        return directory
    }

    @Test("a Taskfile that reads the environment: the same value is a quick no-op, another is the full command's")
    func environmentTheTaskfileReads() async throws {
        let directory = try echoProject(of: "KILN_TEST_GREETING", into: "greeting.txt")
        defer { directory.remove() }
        let first = try await kiln(["run"], directory, environment: ["KILN_TEST_GREETING": "hello"])
        #expect(first.result.status == 0 && directory.read("greeting.txt") == "hello\n", "\(first.result)")
        let same = try await kiln(["run"], directory, environment: ["KILN_TEST_GREETING": "hello"])
        #expect(same.quick, "\(same.result)")
        let other = try await kiln(["run"], directory, environment: ["KILN_TEST_GREETING": "bonjour"])
        #expect(!other.quick && other.result.status == 0, "\(other.result)")
        #expect(directory.read("greeting.txt") == "bonjour\n")
        // Unset: kiln refuses a template that reads an undefined variable (a documented
        // difference from go-task), and the launcher must not answer for the Taskfile first.
        let unset = try await kiln(["run"], directory)
        #expect(!unset.quick && unset.result.status == 2, "\(unset.result)")
        #expect(unset.result.standardError.contains("undefined variable 'KILN_TEST_GREETING'"))
    }

    @Test("a Taskfile that reads a special variable: every no-op is the full command's")
    func specialVariablesAreTheFullCommands() async throws {
        let directory = try echoProject(of: "USER_WORKING_DIR", into: "where.txt")
        defer { directory.remove() }
        let first = try await kiln(["run"], directory)
        #expect(first.result.status == 0, "\(first.result)")
        let second = try await kiln(["run"], directory)
        #expect(!second.quick && second.result.status == 0, "\(second.result)")
        #expect(words(second.result) == "kiln: done: 0 ran, 1 up to date in S s\n")
    }

    @Test("the launcher's look, on its parallel-loop helpers, leaves the run one malloc arena")
    func theLookLeavesOneMallocArena() async throws {
        // 1,500 watched files: the look stats them in three chunks, on the parallel loop's helper threads.
        let directory = try TemporaryDirectory(prefix: "kiln-quick-run")
        defer { directory.remove() }
        for index in 0..<1_500 { _ = try directory.write("src/f\(index).txt", "\(index)\n") }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                sources: ['src/*.txt']
                generates: [all.txt]
                cmds: ['cat src/*.txt > all.txt']

            """
        )
        let first = try await kiln(["run"], directory)
        #expect(first.result.status == 0, "\(first.result)")
        _ = try directory.write("src/f700.txt", "changed\n")
        let changed = try await kiln(["run"], directory, environment: ["KILN_DEBUG": "phases,memory"])
        #expect(changed.result.status == 0, "\(changed.result)")
        #expect(changed.result.standardError.contains("phases (ms): load (the launcher looked)"), "\(changed.result)")
        // A worker that allocated before the launcher limited malloc to one arena got its own.
        #expect(changed.result.standardError.contains("; malloc arenas 1\n"), "\(changed.result)")
    }
}
