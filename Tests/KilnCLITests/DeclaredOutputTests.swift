import Foundation
import KilnTestSupport
import Testing

/// A job is judged by what it declares: a literal `generates:` path it didn't produce fails it.
@Suite struct DeclaredOutputTests {
    static let taskfile = """
        version: '3'
        tasks:
          lib:
            generates: [foo.a, include/foo.h]
            cmds: ['mkdir -p include && touch include/foo.h']
          app:
            deps: [lib]
            generates: [app]
            cmds: ['touch app']
        """

    @Test(
        "a succeeding command that didn't write a declared output fails its job, which runs again next time, and its dependents don't run"
    )
    func unproducedOutputFails() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        for attempt in 1...2 {
            let run = try await KilnProcess.run(["run", "app"], in: directory.path)
            #expect(run.status == 1, "attempt \(attempt): \(run)")
            let said = run.standardOutput + run.standardError
            #expect(said.contains("FAILED: lib"), "attempt \(attempt): \(run)")
            #expect(said.contains("didn't produce 'foo.a'"), "attempt \(attempt): \(run)")
            #expect(!said.contains("include/foo.h'"), "only the missing one is named: \(run)")
            #expect(!directory.exists("app"), "the dependent didn't run")
        }
        let status = try await KilnProcess.run(["status", "app", "--exit-code"], in: directory.path)
        #expect(status.status == 1, "\(status)")
        // Once the command keeps its promise, both run and the next run is a no-op.
        try directory.write(
            "Taskfile.yml",
            Self.taskfile.replacingOccurrences(of: "touch include/foo.h", with: "touch include/foo.h foo.a")
        )
        #expect(try await KilnProcess.run(["run", "app"], in: directory.path).status == 0)
        let noOp = try await KilnProcess.run(["run", "app"], in: directory.path)
        #expect(noOp.standardOutput.contains("0 ran"), "\(noOp)")
    }

    @Test("with --keep-going too, a job missing its output is a failure, and the run exits 1")
    func keepGoing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  a:\n    generates: [a.out]\n    cmds: ['true']\n  b:\n    cmds: ['touch b.ran']\n  default:\n    deps: [a, b]\n"
        )
        let run = try await KilnProcess.run(["run", "-k"], in: directory.path)
        #expect(run.status == 1, "\(run)")
        #expect(directory.exists("b.ran"))
    }
}

/// Templated `sources:` patterns are rendered before they are globbed, in every kind of task.
@Suite struct TemplatedSourcesTests {
    @Test("editing a file a templated pattern names reruns the task")
    func templatedPatternIsRendered() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nvars:\n  SRC: src\ntasks:\n  a:\n    sources: ['{{.SRC}}/*.c']\n    generates: [out]\n    cmds: ['cat src/*.c > out']\n"
        )
        try directory.write("src/x.c", "one\n")
        #expect(try await KilnProcess.run(["run", "a"], in: directory.path).status == 0)
        try directory.write("src/x.c", "two\n")
        let run = try await KilnProcess.run(["run", "a"], in: directory.path)
        #expect(run.standardOutput.contains("1 ran"), "\(run)")
        #expect(directory.read("out") == "two\n")
    }
}

/// What may make a run silently stale is said, with its place in the Taskfile.
@Suite struct RunWarningTests {
    static let taskfile = """
        version: '3'
        tasks:
          a:
            sources: ['src/*.c', 'nothing/**/*.c', 'missing.h']
            generates: ['out/*.o']
            depfile: a.d
            cmds: ['true']
        """

    @Test(
        "a sources pattern matching nothing, an output glob matching nothing and an unwritten depfile are located warnings"
    )
    func warnings() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        try directory.write("src/a.c", "")
        let run = try await KilnProcess.run(["run", "a"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        let file = directory.path("Taskfile.yml")
        #expect(
            run.standardOutput.contains(
                "\(file):4:26: warning: 'nothing/**/*.c' in 'sources' of task 'a' matches no file"
            ),
            "\(run)"
        )
        #expect(
            run.standardOutput.contains("\(file):4:44: warning: 'missing.h' in 'sources' of task 'a' matches no file"),
            "\(run)"
        )
        #expect(!run.standardOutput.contains("'src/*.c' in 'sources'"), "\(run)")
        #expect(
            run.standardOutput.contains("\(file):5:17: warning: 'out/*.o' in 'generates' of task 'a' matched no file"),
            "\(run)"
        )
        #expect(
            run.standardOutput.contains(
                "\(file):3:3: warning: task 'a' declares the depfile 'a.d', which 'a' didn't write"
            ),
            "\(run)"
        )
        let json = try await KilnProcess.run(["run", "a", "--json"], in: directory.path)
        #expect(json.standardOutput.contains(#""event":"warning""#), "\(json)")
        #expect(json.standardOutput.contains(#""line":4"#), "\(json)")
    }

    @Test(
        "a sources pattern matching nothing is said on every run, even one the snapshot would find a no-op"
    )
    func warningRepeats() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        try directory.write("src/a.c", "")
        // Files old enough that the snapshot trusts their status at once: nothing but the
        // warning makes the later runs look at them.
        for path in ["Taskfile.yml", "src/a.c", "src", "."] {
            try setModificationTime(directory.path(path), secondsAgo: 120)
        }
        let warning =
            "\(directory.path("Taskfile.yml")):4:26: warning: 'nothing/**/*.c' in 'sources' of task 'a' matches no file"
        for round in 1...3 {
            let run = try await KilnProcess.run(["run", "a"], in: directory.path)
            #expect(run.status == 0, "\(run)")
            #expect(run.standardOutput.contains(warning), "round \(round): \(run)")
            #expect(round == 1 || run.standardOutput.contains("1 up to date"), "round \(round): \(run)")
        }
        // Once the pattern matches, the warning goes, and the snapshot vouches for the job again.
        try directory.write("nothing/deep/b.c", "")
        try directory.write("missing.h", "")
        let matched = try await KilnProcess.run(["run", "a"], in: directory.path)
        #expect(matched.standardOutput.contains("1 ran"), "\(matched)")
        #expect(!matched.standardOutput.contains("matches no file"), "\(matched)")
    }
}

/// `each:` jobs: one per file however many patterns match it, and never two writing one output.
@Suite struct EachJobOwnershipTests {
    @Test("overlapping sources patterns give a file one job")
    func overlappingPatterns() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  c:\n    each: sources\n    sources: ['lvm.c', 'l*.c']\n    generates: ['{{.source_stem}}.o']\n    cmds: ['echo {{.source}} >> compiled.log; touch {{.source_stem}}.o']\n"
        )
        try directory.write("lvm.c", "")
        try directory.write("lapi.c", "")
        let run = try await KilnProcess.run(["run", "c"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        #expect(directory.read("compiled.log")?.split(separator: "\n").sorted() == ["lapi.c", "lvm.c"])
    }

    @Test("two files whose jobs would write one output fail the task before any of its jobs runs, naming both")
    func clashingJobs() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  c:\n    each: sources\n    sources: ['**/*.c']\n    generates: ['build/{{.source_stem}}.o']\n    cmds: ['echo {{.source}} >> compiled.log']\n"
        )
        try directory.write("src/a.c", "")
        try directory.write("lib/a.c", "")
        try directory.write("lib/b.c", "")
        let run = try await KilnProcess.run(["run", "c"], in: directory.path)
        #expect(run.status == 1, "\(run)")
        #expect(
            run.standardOutput.contains("jobs 'c lib/a.c' and 'c src/a.c' both declare the output build/a.o"),
            "\(run)"
        )
        #expect(!directory.exists("compiled.log"))
        // status and --dry-run say so too: they are the run's own scheduler.
        let status = try await KilnProcess.run(["status", "c", "--exit-code"], in: directory.path)
        #expect(status.status == 1, "\(status)")
        #expect(
            status.standardOutput.contains("c: a run would fail it: jobs 'c lib/a.c' and 'c src/a.c' both declare"),
            "\(status)"
        )
        let dryRun = try await KilnProcess.run(["run", "--dry-run", "c"], in: directory.path)
        #expect(dryRun.standardOutput.hasPrefix("c"), "\(dryRun)")
    }
}
