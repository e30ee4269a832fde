import Foundation
import KilnTestSupport
import Testing

/// A job is known by its task and file, never by its printed label.
@Suite struct JobIdentityTests {
    /// A plain task named `lint docs` and the file `docs` of an `each:` task `lint`: both print
    /// as `lint docs`.
    static let taskfile = """
        version: '3'
        tasks:
          lint docs:
            sources: [guide.md]
            generates: [plain.out]
            cmds: ['cat guide.md > plain.out']
          lint:
            sources: [docs]
            each: sources
            generates: ['{{.source}}.out']
            cmds: ['cat {{.source}} > {{.source}}.out']
          after:
            deps: [lint docs]
            sources: [plain.out]
            generates: [after.out]
            cmds: ['cat plain.out > after.out']
          default:
            deps: [after, lint]
        """

    @Test(
        "a plain task and an each: job with the same label keep separate records: each reruns exactly when its own input changes"
    )
    func labelsThatPrintAlikeDontCollide() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        try directory.write("guide.md", "guide\n")
        try directory.write("docs", "docs\n")
        let first = try await KilnProcess.run(["run", "--json"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        #expect(Self.ran(first).count == 3, "\(first)")

        // Nothing changed: nothing runs (with the two records under one key, one always reran).
        for arguments in [["run"], ["run", "--dry-run"]] {
            let again = try await KilnProcess.run(arguments + ["--json"], in: directory.path)
            #expect(Self.ran(again).isEmpty, "\(arguments): \(again)")
        }
        let status = try await KilnProcess.run(["status", "--exit-code"], in: directory.path)
        #expect(status.status == 0, "\(status)")

        // The each: job's input: only it reruns; `after` (which depends on the plain task) doesn't.
        try directory.write("docs", "docs 2\n")
        let eachOnly = try await KilnProcess.run(["run", "--json"], in: directory.path)
        #expect(Self.ran(eachOnly) == ["lint docs"], "\(eachOnly)")
        #expect(directory.read("docs.out") == "docs 2\n")
        #expect(!directory.exists("after.out") || directory.read("after.out") == "guide\n")

        // The plain task's input: it and its dependent rerun, the each: job doesn't.
        try directory.write("guide.md", "guide 2\n")
        let plain = try await KilnProcess.run(["run", "--json"], in: directory.path)
        #expect(Self.ranTasks(plain) == ["after", "lint docs"], "\(plain)")
        #expect(directory.read("after.out") == "guide 2\n")
    }

    @Test("a task name with a NUL character is refused at its place in the Taskfile")
    func nulInTaskNameIsRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  \"a\\0b\":\n    cmds: ['true']\n")
        let result = try await KilnProcess.run(["list"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(result.standardError.contains("Taskfile.yml:3:3"), "\(result)")
        #expect(result.standardError.contains("NUL"), "\(result)")
    }

    /// The labels of the jobs that ran.
    static func ran(_ result: KilnProcess.Result) -> [String] {
        events(result).compactMap { $0["status"] as? String == "succeeded" ? $0["job"] as? String : nil }.sorted()
    }

    /// The tasks of the jobs that ran.
    static func ranTasks(_ result: KilnProcess.Result) -> [String] {
        events(result).compactMap { $0["status"] as? String == "succeeded" ? $0["task"] as? String : nil }.sorted()
    }

    static func events(_ result: KilnProcess.Result) -> [[String: Any]] {
        result.standardOutput.split(separator: "\n").compactMap { line in
            guard let event = try? parseJSON(String(line)) as? [String: Any], event["event"] as? String == "finished"
            else { return nil }
            return event
        }
    }
}
