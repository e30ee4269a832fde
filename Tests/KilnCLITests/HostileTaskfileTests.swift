import Foundation
import KilnTestSupport
import Testing

/// Each input that once crashed kiln, hung it or made it take gigabytes now ends, through the real
/// binary under a 1 GB address-space limit, with exit status 2 and located errors (each takes
/// well under 10 s; a 60 s watchdog turns a hang into a failure).
@Suite struct HostileTaskfileTests {
    /// The files of each case; the expected message's telling part.
    static let cases: [(name: String, files: [String: String], message: String)] = {
        var doubling = "version: '3'\nvars:\n  V0: ab\n"
        for index in 1..<40 { doubling += "  V\(index): '{{.V\(index - 1)}}{{.V\(index - 1)}}'\n" }
        doubling += "tasks:\n  t: echo {{.V39}}\n"
        var bomb =
            "version: '3'\ntasks:\n  t:\n    plugin: archive\n    with:\n      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for index in 1..<12 {
            bomb +=
                "      a\(index): &a\(index) [" + Array(repeating: "*a\(index - 1)", count: 10).joined(separator: ", ")
                + "]\n"
        }
        let nesting =
            "version: '3'\ntasks:\n  t: " + String(repeating: "[", count: 100_000)
            + String(repeating: "]", count: 100_000) + "\n"
        var deep: [String: String] = ["Taskfile.yml": "version: '3'\nincludes:\n  n: T0.yml\ntasks:\n  default: echo\n"]
        for level in 0..<5_000 {
            deep["T\(level).yml"] = "version: '3'\nincludes:\n  n: T\(level + 1).yml\ntasks:\n  t\(level): echo\n"
        }
        var twice: [String: String] = [
            "Taskfile.yml": "version: '3'\nincludes:\n  a: L0.yml\n  b: L0.yml\ntasks:\n  default: echo\n"
        ]
        for level in 0..<30 {
            twice["L\(level).yml"] =
                "version: '3'\nincludes:\n  a: L\(level + 1).yml\n  b: L\(level + 1).yml\ntasks:\n  x: echo\n"
        }
        twice["L30.yml"] = "version: '3'\ntasks:\n  x: echo\n"
        // Planned (not only loaded): an undefined variable is the planner's to report.
        var undefined = "version: '3'\ntasks:\n  default:\n    cmds:\n"
        for index in 0..<20_000 { undefined += "      - echo {{.U\(index)}}\n" }
        return [
            ("variables that double each other", ["Taskfile.yml": doubling], "over kiln's limit of 1048576"),
            ("a YAML alias bomb under a plugin's with:", ["Taskfile.yml": bomb], "an alias bomb?"),
            ("100,000 nested [", ["Taskfile.yml": nesting], "nested more than 256 deep"),
            ("5,000 nested includes", deep, "includes nested more than 100 deep"),
            ("a file included twice per level, 30 levels", twice, "more than 10000 includes in all"),
            (
                "20,000 undefined variables", ["Taskfile.yml": undefined],
                "Taskfile.yml:20004:14: error: undefined variable 'U19999'"
            ),
        ]
    }()

    @Test("a hostile Taskfile ends with exit 2 and located errors, within 1 GB", arguments: 0..<cases.count)
    func hostileInputEnds(index: Int) async throws {
        let example = Self.cases[index]
        let directory = try TemporaryDirectory(prefix: "kiln-hostile")
        defer { directory.remove() }
        for (name, text) in example.files { try directory.write(name, text) }
        let kiln = try KilnProcess.executable()
        // A watchdog, not a timing assertion: a hang ends as status 124 and fails below.
        let (status, output) = try runProgram(
            "/bin/sh",
            ["-c", "ulimit -v 1048576; exec timeout -s KILL 60 '\(kiln)' run --dry-run"],
            in: directory.path
        )
        #expect(status == 2, "\(example.name): \(output.prefix(2_000))")
        #expect(
            output.range(of: #"\.yml:\d+:\d+: error: "#, options: .regularExpression) != nil,
            "\(example.name): \(output.prefix(2_000))"
        )
        #expect(output.contains(example.message), "\(example.name): \(output.prefix(2_000))")
    }
}
