import Foundation
import KilnTestSupport
import Testing

/// A template kiln can't render never reaches the shell: a mistake the text shows stops the load
/// with its file, line and column; one only rendering shows fails its job, naming the place, and
/// the command doesn't run.
@Suite struct TemplateErrorTests {
    func project(_ taskfile: String) throws -> TemporaryDirectory {
        try taskfileProject(taskfile, prefix: "kiln-template-errors")
    }

    @Test("an unknown function, a malformed action or a wrong argument count stops the load at its place")
    func loadErrors() async throws {
        let cases: [(command: String, message: String, column: Int)] = [
            // Columns count from the line's start: `      - echo ` ends at 13, `{{` is 14.
            ("echo {{.A | uper}} > ran", "template: function \"uper\" not defined; did you mean \"upper\"?", 21),
            ("echo {{.A > ran", "template: unexpected \">\" in action", 19),
            ("echo {{upper .A .A}} > ran", "template: wrong number of args for upper: want 1 got 2", 16),
            ("echo {{if .A}}x > ran", "template: unexpected end of template: {{if}} without {{end}}", 16),
            ("echo '{{' > ran", "template: malformed character constant", 17),
            ("echo {{.A}} {{end}} > ran", "template: unexpected {{end}}", 21),
        ]
        for example in cases {
            let directory = try project(
                "version: '3'\nvars:\n  A: a\ntasks:\n  t:\n    cmds:\n      - \(example.command)\n"
            )
            defer { directory.remove() }
            let result = try await KilnProcess.run(["run", "t"], in: directory.path)
            #expect(result.status == 2, "\(example.command): \(result)")
            let expected = "\(directory.path("Taskfile.yml")):7:\(example.column): error: \(example.message)"
            #expect(result.standardError.contains(expected), "\(example.command): \(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: directory.path("ran")), "the shell ran \(example.command)")
        }
    }

    @Test("printing a value that isn't set fails the job at the action, and nothing runs")
    func renderErrors() async throws {
        let directory = try project(
            "version: '3'\nvars:\n  M:\n    map: {a: 1}\ntasks:\n  t:\n    cmds:\n      - echo {{.M.a}} > first\n      - echo {{.M.typo}} > ran\n"
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "t"], in: directory.path)
        #expect(result.status != 0, "\(result)")
        let output = result.standardOutput + result.standardError
        #expect(output.contains("\(directory.path("Taskfile.yml")):9:16: template: no value to print"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("ran")))
        #expect(
            !FileManager.default.fileExists(atPath: directory.path("first")),
            "a job whose commands can't all be rendered runs none"
        )
    }

    @Test("a generates: template that fails fails its job, which a second run doesn't count up to date")
    func outputTemplateErrors() async throws {
        let directory = try project(
            "version: '3'\nvars:\n  L: [a]\ntasks:\n  t:\n    generates: ['{{index .L 3}}']\n    cmds: ['touch ran']\n"
        )
        defer { directory.remove() }
        for _ in 0..<2 {
            let result = try await KilnProcess.run(["run", "t"], in: directory.path)
            #expect(result.status != 0, "\(result)")
            #expect((result.standardOutput + result.standardError).contains("index out of range: 3"), "\(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("ran")))
    }
}
