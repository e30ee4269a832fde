import Foundation
import KilnTestSupport
import Testing

/// Which ready job starts first: the one with the longest remaining path, weighted by the
/// durations the build state recorded, and by depth on a first build.
@Suite("The critical path first")
struct CriticalPathTests {
    /// A task that logs its name when it starts, sleeps `seconds`, then writes its output.
    static func task(_ name: String, sleeping seconds: String = "0", deps: [String] = []) -> String {
        var text = "  \(name):\n"
        if !deps.isEmpty { text += "    deps: [\(deps.joined(separator: ", "))]\n" }
        text += "    sources: [src/\(name).txt]\n    generates: [out/\(name).txt]\n"
        text +=
            "    cmds: ['echo \(name) >> order.log', 'sleep \(seconds)', 'mkdir -p out', 'cp src/\(name).txt out/\(name).txt']\n"
        return text
    }

    static func order(_ directory: TemporaryDirectory) -> [String] {
        (directory.read("order.log") ?? "").split(separator: "\n").map(String.init)
    }

    @Test(
        "the task that took longest last time starts first, though it comes last in the plan; kiln clean keeps the times"
    )
    func longestRecordedStartsFirst() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-critical")
        defer { directory.remove() }
        for name in ["a", "b", "c", "z"] { try directory.write("src/\(name).txt", name) }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n" + Self.task("a") + Self.task("b") + Self.task("c")
                + Self.task("z", sleeping: "0.3")
                + "  default:\n    deps: [a, b, c, z]\n"
        )
        // First build: nothing timed, every task as deep as the others: plan order.
        var result = try await KilnProcess.run(["run", "-j1"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(Self.order(directory) == ["a", "b", "c", "z"])
        try directory.write("order.log", "")
        result = try await KilnProcess.run(["run", "-j1", "--force"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(Self.order(directory).first == "z", "\(Self.order(directory))")
        // After kiln clean (which forgets what is up to date, not how long things take).
        result = try await KilnProcess.run(["clean"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        try directory.write("order.log", "")
        result = try await KilnProcess.run(["run", "-j1"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(Self.order(directory).first == "z", "\(Self.order(directory))")
    }

    @Test("on a first build, the head of the deepest chain starts before a shallow task listed first")
    func firstBuildGoesByDepth() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-critical")
        defer { directory.remove() }
        for name in ["shallow", "deep1", "deep2", "deep3"] { try directory.write("src/\(name).txt", name) }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n" + Self.task("shallow") + Self.task("deep1")
                + Self.task("deep2", deps: ["deep1"]) + Self.task("deep3", deps: ["deep2"])
                + "  default:\n    deps: [shallow, deep3]\n"
        )
        let result = try await KilnProcess.run(["run", "-j1"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(Self.order(directory).first == "deep1", "\(Self.order(directory))")
        #expect(Set(Self.order(directory)) == ["shallow", "deep1", "deep2", "deep3"])
    }
}
