import Foundation
import KilnTestSupport
import Testing

/// After a small change a run takes only the part of the plan the change touches, and leaves the
/// rest up to date on the snapshot's word (`BuildPlan.changedPart`). Differential: two copies of
/// a random project get the same edits; one runs as people do (the shortcut allowed), the other
/// with `--json` (every job's events wanted: the whole plan, each job checked). They must run the
/// same jobs, check the same `status:` tests, count the same and leave the same files.
@Suite struct ChangedPartTests {
    /// A random project of plain tasks, groups, early cutoff, depfiles, `status:` tasks and
    /// tasks that always run, over twelve source files: most edits touch a few tasks. (The last
    /// two come last: each is in every run's part, with all that depends on it.)
    static func project(_ random: inout SeededGenerator) -> String {
        var text = "version: '3'\ntasks:\n"
        var names: [String] = []
        var producing: [String] = []
        let count = 14 + random.below(8)
        for index in 0..<count {
            let name = "t\(index)"
            let dependencies = names.filter { _ in random.chance(15) }
            let inputs = Array(Set((0..<(1 + random.below(2))).map { _ in "src/f\(random.below(12)).txt" })).sorted()
            let reads = dependencies.filter(producing.contains).map { "out/\($0).txt" }
            var body = dependencies.isEmpty ? "" : "    deps: [\(dependencies.joined(separator: ", "))]\n"
            let log = "echo \(name) >> ran.log"
            switch random.below(8) {
            case 0:  // group
                guard !dependencies.isEmpty else { fallthrough }
                text += "  \(name):\n" + body
                names.append(name)
                continue
            case 1:  // early cutoff: the line count only
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        cmds: ['\(log); mkdir -p out && cat \(inputs.joined(separator: " ")) | wc -l > out/\(name).txt']

                    """
            case 2:  // a depfile naming a header
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        depfile: out/\(name).d
                        cmds: ['\(log); mkdir -p out && cat \(inputs.joined(separator: " ")) include/h.h \(reads.joined(separator: " ")) > out/\(name).txt && printf "out/\(name).txt: include/h.h\\n" > out/\(name).d']

                    """
            case 3 where index >= count - 5:  // up to date by its `status:` test alone
                body += """
                        status: ['echo \(name) >> checked.log; test -f out/\(name).txt']
                        cmds: ['\(log); mkdir -p out && echo made > out/\(name).txt']

                    """
            case 4 where index >= count - 5:  // always runs
                body += """
                        method: none
                        cmds: ['\(log); mkdir -p out && cat \(inputs.joined(separator: " ")) > out/\(name).txt']

                    """
            default:  // plain
                body += """
                        sources: [\(inputs.joined(separator: ", "))]
                        generates: [out/\(name).txt]
                        cmds: ['\(log); mkdir -p out && cat \(inputs.joined(separator: " ")) \(reads.joined(separator: " ")) > out/\(name).txt']

                    """
            }
            producing.append(name)
            text += "  \(name):\n" + body
            names.append(name)
        }
        text += "  default:\n    deps: [\(names.joined(separator: ", "))]\n"
        return text
    }

    /// One random edit, the same in any copy given the same generator: mostly one source file.
    static func edit(_ directory: TemporaryDirectory, _ random: inout SeededGenerator) throws -> String {
        let file = "src/f\(random.below(12)).txt"
        switch random.below(10) {
        case 0, 1, 2:
            try directory.write(file, (directory.read(file) ?? "") + "line \(random.below(1000))\n")
            return "append a line to \(file)"
        case 3, 4:
            // The same number of lines: early cutoff for the line-count tasks.
            let lines = (directory.read(file) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
            try directory.write(file, lines.map { _ in "x\(random.below(1000))" }.joined(separator: "\n"))
            return "rewrite \(file)"
        case 5:
            try directory.write(file, directory.read(file) ?? "")
            return "rewrite \(file) unchanged"
        case 6:
            try directory.write("include/h.h", "// \(random.below(1000))\n")
            return "edit include/h.h"
        case 7:
            let outputs =
                (try? FileManager.default.contentsOfDirectory(atPath: directory.path("out")))?
                .filter { $0.hasSuffix(".txt") }.sorted() ?? []
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

    /// A log's lines, sorted, and the log removed.
    static func take(_ log: String, in directory: TemporaryDirectory) -> [String] {
        defer { try? FileManager.default.removeItem(atPath: directory.path(log)) }
        return (directory.read(log) ?? "").split(separator: "\n").map(String.init).sorted()
    }

    /// Every file under `out/`, with its contents.
    static func outputs(_ directory: TemporaryDirectory) -> [String: String] {
        var files: [String: String] = [:]
        for path in (try? FileManager.default.subpathsOfDirectory(atPath: directory.path("out"))) ?? [] {
            if let text = directory.read("out/" + path) { files[path] = text }
        }
        return files
    }

    /// `ran` and `up to date` of a run's last line (`kiln: done: 2 ran, 14 up to date …`).
    static func counts(_ output: String) -> (ran: Int, upToDate: Int)? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("kiln: done: ") }) else {
            return nil
        }
        let words = line.split(separator: " ")
        let ran =
            words.firstIndex(of: "ran,").flatMap { Int(words[$0 - 1]) }
            ?? words.firstIndex(of: "ran").flatMap {
                Int(words[$0 - 1])
            }
        let upToDate = words.firstIndex(of: "up").flatMap { Int(words[$0 - 1]) } ?? 0
        return ran.map { ($0, upToDate) }
    }

    /// The `run-finished` event's counts of a `--json` run.
    static func jsonCounts(_ output: String) throws -> (ran: Int, upToDate: Int)? {
        for line in output.split(separator: "\n") {
            guard let event = try parseJSON(String(line)) as? [String: Any], event["event"] as? String == "run-finished"
            else { continue }
            return ((event["succeeded"] as? Int) ?? -1, (event["upToDate"] as? Int) ?? -1)
        }
        return nil
    }

    @Test(
        "a run of the changed part runs, checks, counts and leaves what a run of the whole plan does",
        arguments: 0..<8
    )
    func sameAsTheWholePlan(seed: Int) async throws {
        var random = SeededGenerator(seed: UInt64(seed) &* 104_729 &+ 3)
        let part = try TemporaryDirectory()
        let whole = try TemporaryDirectory()
        defer {
            part.remove()
            whole.remove()
        }
        let taskfile = Self.project(&random)
        for directory in [part, whole] {
            try directory.write("Taskfile.yml", taskfile)
            for index in 0..<12 { try directory.write("src/f\(index).txt", "file \(index)\n") }
            try directory.write("include/h.h", "// header\n")
        }
        var history = "seed \(seed)\n\(taskfile)\n"
        var shortcuts = 0
        for step in 0..<7 {
            var edits: [String] = []
            if step > 0 {
                for _ in 0..<(1 + (random.chance(25) ? 1 : 0)) {
                    var same = random
                    edits.append(try Self.edit(part, &random))
                    _ = try Self.edit(whole, &same)
                }
            }
            history += "step \(step): \(edits.joined(separator: ", "))\n"
            let one = try await KilnProcess.run(["run"], in: part.path, environment: ["KILN_DEBUG": "phases"])
            let other = try await KilnProcess.run(["run", "--json"], in: whole.path)
            try #require(one.status == 0, "\(one)\n\(history)")
            try #require(other.status == 0, "\(other)\n\(history)")
            if one.standardError.contains("changed part: ") { shortcuts += 1 }
            let ran = Self.take("ran.log", in: part)
            history += "  ran \(ran)\n"
            #expect(ran == Self.take("ran.log", in: whole), "ran other jobs\n\(history)")
            #expect(Self.take("checked.log", in: part) == Self.take("checked.log", in: whole), "\(history)")
            let counted = Self.counts(one.standardOutput)
            let expected = try Self.jsonCounts(other.standardOutput)
            #expect(counted?.ran == expected?.ran && counted?.upToDate == expected?.upToDate, "\(one)\n\(history)")
            #expect(Self.outputs(part) == Self.outputs(whole), "left other files\n\(history)")
        }
        // Most edits touch a few of the tasks: the shortcut is taken (and, taken, agreed).
        #expect(shortcuts > 0, "the changed part was never run alone\n\(history)")
    }

    /// The start of a Taskfile of `count` plain tasks `t0`…, each copying its source (written
    /// here) to `out/` and noting its name in `ran.log`; with `failingWith`, task `tN` fails while
    /// a file of that name and `N` exists.
    static func plainTasks(_ count: Int, in directory: TemporaryDirectory, failingWith marker: String? = nil) throws
        -> String
    {
        var text = "version: '3'\ntasks:\n"
        for index in 0..<count {
            try directory.write("src/f\(index).txt", "file \(index)\n")
            let test = marker.map { "test ! -e \($0)\(index); " } ?? ""
            text += """
                  t\(index):
                    sources: [src/f\(index).txt]
                    generates: [out/t\(index).txt]
                    cmds: ['echo t\(index) >> ran.log; \(test)mkdir -p out && cp src/f\(index).txt out/t\(index).txt']

                """
        }
        return text
    }

    /// A project of eight plain tasks and `extra`; one source edited after a first run.
    static func edited(extra: String, files: [String: String] = [:], arguments: [String] = [])
        async throws -> (result: KilnProcess.Result, ran: [String], directory: TemporaryDirectory)
    {
        let directory = try TemporaryDirectory()
        var text = try plainTasks(8, in: directory)
        text += extra + "  default:\n    deps: [t0, t1, t2, t3, t4, t5, t6, t7, extra]\n"
        try directory.write("Taskfile.yml", text)
        for (path, contents) in files { try directory.write(path, contents) }
        let first = try await KilnProcess.run(["run"] + arguments, in: directory.path)
        try #require(first.status == 0, "\(first)")
        _ = take("ran.log", in: directory)
        _ = take("checked.log", in: directory)
        try directory.write("src/f3.txt", "file 3, changed\n")
        let result = try await KilnProcess.run(
            ["run"] + arguments,
            in: directory.path,
            environment: ["KILN_DEBUG": "phases"]
        )
        return (result, take("ran.log", in: directory), directory)
    }

    @Test(
        "the whole plan runs when the snapshot can't answer for the rest alone",
        arguments: [
            // One job per file: a file that appears under the glob is no job's path yet.
            (
                "each:", "  extra:\n    each: sources\n    sources: ['src/e/*.c']\n    cmds: ['true']\n",
                ["src/e/a.c": "a"], []
            ),
            // A call: its order is its caller's commands'.
            ("a call", "  extra:\n    cmds: ['true', {task: t0}]\n", [:], []),
            // Every prompt is asked before a run: of every task of the plan.
            ("prompt:", "  extra:\n    prompt: Go on?\n    cmds: ['true']\n", [:], ["--yes"]),
        ] as [(String, String, [String: String], [String])]
    )
    func wholePlan(construct: String, extra: String, files: [String: String], arguments: [String]) async throws {
        let (result, ran, directory) = try await Self.edited(extra: extra, files: files, arguments: arguments)
        defer { directory.remove() }
        #expect(result.status == 0, "\(result)")
        #expect(!result.standardError.contains("changed part: "), "\(construct): \(result)")
        #expect(ran == ["t3"], "\(construct): \(ran)")
    }

    @Test("a task with status: tests is always in the changed part: its tests run as in a whole run")
    func statusTestsStillRun() async throws {
        let (result, ran, directory) = try await Self.edited(
            extra:
                "  extra:\n    status: ['echo extra >> checked.log; test -f out/extra.txt']\n    cmds: ['mkdir -p out && touch out/extra.txt']\n"
        )
        defer { directory.remove() }
        #expect(result.status == 0, "\(result)")
        #expect(result.standardError.contains("changed part: 3 of 10 tasks"), "\(result)")
        #expect(ran == ["t3"])
        #expect(Self.take("checked.log", in: directory) == ["extra"])
        #expect(result.standardOutput.contains("kiln: done: 1 ran, 8 up to date"), "\(result)")
    }

    @Test("after a failed run the snapshot is incomplete: the next run takes the whole plan")
    func afterAFailure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var text = try Self.plainTasks(6, in: directory, failingWith: "fail")
        text += "  default:\n    deps: [t0, t1, t2, t3, t4, t5]\n"
        try directory.write("Taskfile.yml", text)
        try directory.write("fail5", "")
        var result = try await KilnProcess.run(["run", "-k"], in: directory.path)
        #expect(result.status != 0, "\(result)")
        try FileManager.default.removeItem(atPath: directory.path("fail5"))
        _ = Self.take("ran.log", in: directory)
        try directory.write("src/f1.txt", "file 1, changed\n")
        result = try await KilnProcess.run(["run"], in: directory.path, environment: ["KILN_DEBUG": "phases"])
        #expect(result.status == 0, "\(result)")
        #expect(!result.standardError.contains("changed part: "), "\(result)")
        #expect(Self.take("ran.log", in: directory) == ["t1", "t5"])
        // Complete again: the next small change runs alone.
        try directory.write("src/f2.txt", "file 2, changed\n")
        result = try await KilnProcess.run(["run"], in: directory.path, environment: ["KILN_DEBUG": "phases"])
        #expect(result.standardError.contains("changed part: 2 of 7 tasks"), "\(result)")
        #expect(Self.take("ran.log", in: directory) == ["t2"])
        #expect(result.standardOutput.contains("kiln: done: 1 ran, 5 up to date"), "\(result)")
    }
}
