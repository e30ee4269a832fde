import Foundation
import KilnTestSupport
import Testing

/// One verdict, reached one way: on random projects, after random edits and for random targets,
/// `kiln status`, `kiln run --dry-run` and the jobs the next real run runs agree — with the
/// snapshot and without it, and after switching targets.
@Suite struct VerdictPropertyTests {
    /// A random project: plain tasks, `each:` tasks, groups, a depfile, a task whose output
    /// hides most edits of its input (so its dependents see early cutoff).
    static func project(_ random: inout SeededGenerator) -> (taskfile: String, tasks: [String]) {
        var text = "version: '3'\ntasks:\n"
        var names: [String] = []
        var producing: [String] = []  // tasks with an output file a dependent may read
        let count = 4 + random.below(4)
        for index in 0..<count {
            let name = "t\(index)"
            let dependencies = names.filter { _ in random.chance(30) }
            let inputs = Array(Set((0..<(1 + random.below(2))).map { _ in "src/f\(random.below(4)).txt" })).sorted()
            let reads = dependencies.filter(producing.contains).map { "out/\($0).txt" }
            var body = dependencies.isEmpty ? "" : "    deps: [\(dependencies.joined(separator: ", "))]\n"
            switch random.below(5) {
            case 0:  // group
                guard !dependencies.isEmpty else { fallthrough }
                text += "  \(name):\n" + body
                names.append(name)
                continue
            case 1:  // each: one job per file
                body += """
                        sources: ['src/e/*.c']
                        each: sources
                        generates: ['out/\(name)/{{.source_stem}}.o']
                        cmds: ['mkdir -p out/\(name) && cat {{.source}} \(reads.joined(separator: " ")) > out/\(name)/{{.source_stem}}.o']

                    """
            case 2:  // early cutoff: the line count only
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        cmds: ['mkdir -p out && cat \(inputs.joined(separator: " ")) | wc -l > out/\(name).txt']

                    """
                producing.append(name)
            case 3:  // a depfile naming a header
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        depfile: out/\(name).d
                        cmds: ['mkdir -p out && cat \(inputs.joined(separator: " ")) include/h.h \(reads.joined(separator: " ")) > out/\(name).txt && printf "out/\(name).txt: include/h.h\\n" > out/\(name).d']

                    """
                producing.append(name)
            default:  // plain
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        cmds: ['mkdir -p out && cat \(inputs.joined(separator: " ")) \(reads.joined(separator: " ")) > out/\(name).txt']

                    """
                producing.append(name)
            }
            text += "  \(name):\n" + body
            names.append(name)
        }
        text += "  default:\n    deps: [\(names.joined(separator: ", "))]\n"
        return (text, names)
    }

    /// One random edit of the project's files (or of what a run left).
    static func edit(_ directory: TemporaryDirectory, _ random: inout SeededGenerator) throws -> String {
        let file = "src/f\(random.below(4)).txt"
        switch random.below(8) {
        case 0:
            let text = directory.read(file) ?? ""
            try directory.write(file, text + "line \(random.below(1000))\n")
            return "append a line to \(file)"
        case 1:
            // Same number of lines, different text: early cutoff for the line-count tasks.
            let lines = (directory.read(file) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
            try directory.write(file, lines.map { _ in "x\(random.below(1000))" }.joined(separator: "\n"))
            return "rewrite \(file)"
        case 2:
            let text = directory.read(file) ?? ""
            try directory.write(file, text)
            return "rewrite \(file) unchanged"
        case 3:
            let name = "src/e/\(random.pick(["a", "b", "c", "d"])).c"
            if directory.exists(name) {
                try FileManager.default.removeItem(atPath: directory.path(name))
                return "remove \(name)"
            }
            try directory.write(name, "int \(random.below(100));\n")
            return "add \(name)"
        case 4:
            try directory.write("include/h.h", "// \(random.below(1000))\n")
            return "edit include/h.h"
        case 5:
            let outputs =
                (try? FileManager.default.subpathsOfDirectory(atPath: directory.path("out")))?
                .filter { $0.hasSuffix(".txt") || $0.hasSuffix(".o") }.sorted() ?? []
            guard !outputs.isEmpty else { return "nothing" }
            let output = "out/" + random.pick(outputs)
            if random.chance(50) {
                try FileManager.default.removeItem(atPath: directory.path(output))
                return "delete \(output)"
            }
            try directory.write(output, "tampered\n")
            return "tamper with \(output)"
        default:
            return "nothing"
        }
    }

    /// The outputs a clean build of `targets` leaves, from a copy of the project's sources.
    static func cleanBuild(of directory: TemporaryDirectory, targets: [String]) async throws -> [String: String] {
        let clean = try TemporaryDirectory()
        defer { clean.remove() }
        for item in ["Taskfile.yml", "src", "include"] where directory.exists(item) {
            try FileManager.default.copyItem(atPath: directory.path(item), toPath: clean.path(item))
        }
        _ = try await Self.run(targets, in: clean)
        var outputs: [String: String] = [:]
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: clean.path("out"))) ?? [] {
            if let text = clean.read("out/" + path), !path.hasSuffix(".d") { outputs["out/" + path] = text }
        }
        return outputs
    }

    /// The jobs `kiln status` lists as out of date, by label, with their reasons.
    static func status(_ targets: [String], in directory: TemporaryDirectory) async throws -> [String: String] {
        let result = try await KilnProcess.run(["status", "--json"] + targets, in: directory.path)
        try #require(result.status == 0, "\(result)")
        let object = try #require(try parseJSON(result.standardOutput) as? [String: Any])
        let jobs = try #require(object["outOfDate"] as? [[String: Any]])
        var reasons: [String: String] = [:]
        for job in jobs { reasons[job["job"] as? String ?? "?"] = job["reason"] as? String ?? "?" }
        return reasons
    }

    /// The jobs `kiln run --dry-run` would run, by label.
    static func dryRun(_ targets: [String], in directory: TemporaryDirectory) async throws -> Set<String> {
        let result = try await KilnProcess.run(["run", "--dry-run"] + targets, in: directory.path)
        try #require(result.status == 0, "\(result)")
        // `label: command`; a label has no ": ".
        return Set(
            result.standardOutput.split(separator: "\n").map { line in
                String(line.components(separatedBy: ": ").first ?? String(line))
            }
        )
    }

    /// Runs the targets; the jobs that ran, by label.
    static func run(_ targets: [String], in directory: TemporaryDirectory) async throws -> Set<String> {
        let result = try await KilnProcess.run(["run", "--json"] + targets, in: directory.path)
        try #require(result.status == 0, "\(result)")
        var ran = Set<String>()
        for line in result.standardOutput.split(separator: "\n") {
            guard let event = try parseJSON(String(line)) as? [String: Any], event["event"] as? String == "finished",
                event["status"] as? String == "succeeded", let job = event["job"] as? String
            else { continue }
            ran.insert(job)
        }
        return ran
    }

    @Test(
        "status, --dry-run and the next run agree, with and without the snapshot, as targets switch",
        arguments: 0..<12
    )
    func agree(seed: Int) async throws {
        var random = SeededGenerator(seed: UInt64(seed) &* 7919 &+ 17)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (taskfile, tasks) = Self.project(&random)
        try directory.write("Taskfile.yml", taskfile)
        for index in 0..<4 { try directory.write("src/f\(index).txt", "file \(index)\n") }
        for name in ["a", "b"] { try directory.write("src/e/\(name).c", "int \(name);\n") }
        try directory.write("include/h.h", "// header\n")
        var history = "seed \(seed)\n\(taskfile)\n"

        for step in 0..<6 {
            let edits = try (0..<(1 + random.below(2))).map { _ in try Self.edit(directory, &random) }
            let targets =
                random.chance(40)
                ? [] : Array(Set((0..<(1 + random.below(2))).map { _ in random.pick(tasks) })).sorted()
            let withoutSnapshot = random.chance(40)
            history +=
                "step \(step): \(edits.joined(separator: ", ")); targets \(targets); snapshot \(!withoutSnapshot)\n"

            // Status with the snapshot (when there is one) and without it: the same verdicts.
            let status = try await Self.status(targets, in: directory)
            let snapshot = directory.path(".kiln/snapshot")
            let aside = directory.path(".kiln/snapshot.aside")
            let hadSnapshot = FileManager.default.fileExists(atPath: snapshot)
            if hadSnapshot { try FileManager.default.moveItem(atPath: snapshot, toPath: aside) }
            let statusWithout = try await Self.status(targets, in: directory)
            let dryRun = try await Self.dryRun(targets, in: directory)
            if hadSnapshot {
                if withoutSnapshot {
                    try FileManager.default.removeItem(atPath: aside)
                } else {
                    try FileManager.default.moveItem(atPath: aside, toPath: snapshot)
                }
            }
            #expect(status == statusWithout, "status with and without the snapshot differ\n\(history)")
            #expect(
                Set(status.keys) == dryRun,
                "status \(status.keys.sorted()) vs --dry-run \(dryRun.sorted())\n\(history)"
            )

            let ran = try await Self.run(targets, in: directory)
            history += "  status \(status.sorted { $0.key < $1.key }); ran \(ran.sorted())\n"
            // What ran was listed; what was listed for a reason of its own ran. A job listed only
            // because a dependency runs may be spared by early cutoff.
            #expect(ran.isSubset(of: Set(status.keys)), "ran what status didn't list\n\(history)")
            for (job, reason) in status where !reason.hasPrefix("dependency ") || !reason.hasSuffix(" runs first") {
                #expect(ran.contains(job), "status said \(job) runs (\(reason)), the run didn't run it\n\(history)")
            }
            // And once it ran, nothing is out of date: the run recorded what it did.
            let after = try await Self.status(targets, in: directory)
            #expect(after.isEmpty, "out of date right after a run: \(after)\n\(history)")
            let noOp = try await Self.run(targets, in: directory)
            #expect(noOp.isEmpty, "a second run ran \(noOp.sorted())\n\(history)")
            // The oracle: what the incremental run left is what a clean build of the same files leaves.
            for (path, text) in try await Self.cleanBuild(of: directory, targets: targets) {
                #expect(directory.read(path) == text, "\(path) differs from a clean build's\n\(history)")
            }
        }
    }
}

/// Small draws for the generated projects.
extension SeededGenerator {
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
