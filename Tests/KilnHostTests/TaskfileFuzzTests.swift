import Foundation
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// A bounded fuzz pass over the Taskfile loader and planner, with a fixed seed so every run is the
/// same: thousands of generated Taskfiles — valid pieces in random combinations, the hostile
/// constructs that once crashed or hung kiln (variables that double each other, alias bombs,
/// deep nesting, deep and repeated includes, floods of undefined variables, long chains), and
/// random byte mutations of both. Each must load (and plan) or fail with errors that all name
/// their file, line and column, within its watchdog; a crash ends the test run.
@Suite struct TaskfileFuzzTests {
    static let count = 2_400

    @Test("thousands of generated Taskfiles load or fail with located errors, none hangs", arguments: 0..<4)
    func generatedTaskfiles(slice: Int) async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-fuzz")
        defer { directory.remove() }
        var problems: [String] = []
        let runner = ProcessMonitor()
        for index in stride(from: slice, to: Self.count, by: 4) {
            var random = SeededGenerator(seed: 0xF00D + UInt64(index))
            let folder = directory.path("\(index)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (name, text) in TaskfileFuzzer.files(using: &random) {
                try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
            }
            let path = folder + "/Taskfile.yml"
            // The slowest cases take ~3 s in a debug build with the four slices side by side, and
            // over 10 s when the whole suite loads the machine; a hang never ends.
            let outcome = await waitForResult(within: 30) { () -> String? in
                do throws(TaskfileErrors) {
                    let taskfile = try TaskfileLoader(usesCache: false).load(path: path)
                    let project = try Project(taskfile: taskfile, runner: runner)
                    _ = try BuildPlanner(taskfile: taskfile, registry: project.registry).plan(
                        targets: taskfile.tasks.filter { $0.partOf == nil }.map(\.name)
                    )
                    return nil
                } catch {
                    let unlocated = error.errors.filter { $0.location == nil }
                    return unlocated.isEmpty ? nil : "unlocated: \(unlocated.map(\.message))"
                }
            }
            switch outcome {
            case .none: problems.append("#\(index): no answer within 30 s")
            case .some(.some(let problem)): problems.append("#\(index): \(problem)")
            case .some(.none): break
            }
            if problems.count >= 5 { break }
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #expect(usage.ru_maxrss < 1 << 20, "peak RSS \(usage.ru_maxrss) KB")  // under 1 GB
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}

extension TaskfileFuzzTests {
    @Test(
        "a small Taskfile's one pass and a large one's two decode the same: generated Taskfiles, loaded as they are and padded past the one-pass limit, give the same tasks, or both fail"
    )
    func onePassAgreesWithTwo() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-one-pass")
        defer { directory.remove() }
        // A trailing comment changes no line or column of what precedes it.
        let padding = "\n#" + String(repeating: " pad", count: TaskfileLoader.onePassLimit / 4 + 1) + "\n"
        /// The loaded tasks, every field written out (dictionaries in key order), or nil when
        /// the load failed.
        func load(_ path: String) -> String? {
            do throws(TaskfileErrors) {
                return Self.canonical(Array(try TaskfileLoader(usesCache: false).load(path: path).tasks))
            } catch {
                return nil
            }
        }
        // Most generated cases fail to load; these load, with what a one pass must gather just
        // as the streaming pass does: anchors and merge keys among the tasks (the map's own key
        // beside a merged one is a duplicate, as streamed), variables written after the tasks,
        // and a file included under two names (parsed once, its tasks decoded twice).
        let written: [[(String, String)]] = [
            [
                (
                    "Taskfile.yml",
                    """
                    version: '3'
                    tasks:
                      base: &base {cmds: [echo base], silent: true}
                      a: {<<: *base, desc: 'A {{.LATE}}'}
                      b:
                        <<: *base
                        cmds: ['echo {{.LATE}}']
                      <<: {c: {cmds: [echo c]}, d: &d {deps: [a], cmds: [echo d]}}
                      e: *d
                    vars:
                      LATE: after the tasks

                    """
                )
            ],
            [
                (
                    "Taskfile.yml",
                    "version: '3'\nincludes:\n  one: lib.yml\n  two: {taskfile: lib.yml, vars: {X: two}}\ntasks:\n  default: {deps: [one:t, two:t]}\n"
                ),
                ("lib.yml", "version: '3'\ntasks:\n  t: {cmds: ['echo {{.X}}'], sources: ['*.c']}\nvars:\n  X: lib\n"),
            ],
        ]
        let generated = stride(from: 0, to: TaskfileFuzzTests.count, by: 24).map { index in
            var random = SeededGenerator(seed: 0xF00D + UInt64(index))
            return TaskfileFuzzer.files(using: &random)
        }
        var compared = 0
        var loaded = 0
        for (index, files) in (written + generated).enumerated() {
            var paths: [String] = []
            for (variant, suffix) in [("one", ""), ("two", padding)] {
                let folder = directory.path("\(index)-\(variant)")
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for (name, text) in files {
                    try Data((text + suffix).utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
                }
                paths.append(folder + "/Taskfile.yml")
            }
            let (one, two) = (load(paths[0]), load(paths[1]))
            compared += 1
            if one != nil { loaded += 1 }
            // Paths differ by the folder's name: compare with it taken out.
            let clean = { (text: String?, folder: String) in
                text?.replacingOccurrences(of: directory.path(folder), with: "DIR")
            }
            if index < written.count { #expect(one != nil, "written case \(index) doesn't load") }
            #expect(
                clean(one, "\(index)-one") == clean(two, "\(index)-two"),
                "case \(index): \(one == nil ? "one pass failed" : "one pass loaded"), \(two == nil ? "two failed" : "two loaded")"
            )
        }
        #expect(compared == written.count + 100)
        #expect(loaded >= 10, "too few of the cases load to compare their tasks: \(loaded)")
    }

    /// `value` written out field by field, a dictionary's or a set's entries in sorted order (the
    /// order they iterate in differs between two equal dictionaries).
    static func canonical(_ value: Any, depth: Int = 0) -> String {
        guard depth < 40 else { return "…" }
        let mirror = Mirror(reflecting: value)
        func fields(_ mirror: Mirror) -> [String] {
            mirror.children.map { "\($0.label ?? "-"): \(canonical($0.value, depth: depth + 1))" }
                + (mirror.superclassMirror.map(fields) ?? [])
        }
        switch mirror.displayStyle {
        case .dictionary, .set:
            return "{" + mirror.children.map { canonical($0.value, depth: depth + 1) }.sorted().joined(separator: ", ")
                + "}"
        case .optional:
            return mirror.children.first.map { canonical($0.value, depth: depth + 1) } ?? "nil"
        case .collection, .tuple:
            return "[" + mirror.children.map { canonical($0.value, depth: depth + 1) }.joined(separator: ", ") + "]"
        case .struct, .class, .enum:
            let inner = fields(mirror)
            return inner.isEmpty ? "\(value)" : "\(mirror.subjectType)(" + inner.joined(separator: ", ") + ")"
        default:
            return "\(value)"
        }
    }
}

/// Makes the files of one fuzz case: `Taskfile.yml` and the files it may include.
enum TaskfileFuzzer {
    static func files(using random: inout SeededGenerator) -> [(String, String)] {
        var files = [("Taskfile.yml", taskfile(using: &random, includes: true))]
        for name in ["a.yml", "b.yml"] where Bool.random(using: &random) {
            files.append((name, taskfile(using: &random, includes: Int.random(in: 0..<4, using: &random) == 0)))
        }
        switch Int.random(in: 0..<12, using: &random) {
        case 0: files[0].1 = hostile(using: &random, files: &files)
        case 1, 2: files[0].1 = mutate(files[0].1, using: &random)
        default: break
        }
        return files
    }

    static func pick<T>(_ choices: [T], _ random: inout SeededGenerator) -> T {
        choices[Int.random(in: 0..<choices.count, using: &random)]
    }

    static func taskfile(using random: inout SeededGenerator, includes: Bool) -> String {
        var text = pick(["version: '3'\n", "version: 3\n", "", "version: [3]\n"], &random)
        if Bool.random(using: &random) {
            text += "vars:\n"
            for index in 0..<Int.random(in: 1...5, using: &random) {
                text +=
                    "  V\(index): "
                    + pick(
                        [
                            "plain", "'{{.V0}}-x'", "\"{{.NOPE}}\"", "{sh: echo}", "[1, 2]", "'{{.V0}}{{.V0}}'", "'{{'",
                            "~",
                        ],
                        &random
                    ) + "\n"
            }
        }
        if includes, Bool.random(using: &random) {
            text += "includes:\n"
            text +=
                "  one: "
                + pick(
                    [
                        "a.yml", "./b.yml", "{taskfile: a.yml, optional: true}", "missing.yml", "Taskfile.yml",
                        "{dir: x}", "'{{.V0}}.yml'",
                    ],
                    &random
                ) + "\n"
        }
        if Int.random(in: 0..<5, using: &random) == 0 {
            text += pick(
                [
                    "resources:\n  link: 1\n", "resources: {gpu: -1}\n", "hooks:\n  pre-commit: [t0]\n",
                    "plugins: [nope]\n", "output: group\n",
                ],
                &random
            )
        }
        text += "tasks:\n"
        let count = Int.random(in: 0...6, using: &random)
        for index in 0..<count {
            text += "  t\(index):\n"
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                text +=
                    "    "
                    + pick(
                        [
                            "cmds: ['echo {{.V0}}', 'true']", "cmds: [{cmd: 'echo x'}, {task: t0}]", "cmd: echo",
                            "deps: [t\(Int.random(in: 0...count, using: &random))]",
                            "sources: ['src/**/*.c', {exclude: 'x.c'}]", "sources: ['!x', '$HOME/y']",
                            "generates: ['out/{{.source_stem}}.o']",
                            "generates: [shared.txt]", "each: sources", "batch: 0", "batch: 99999999999999999999",
                            "dir: '..'", "dir: sub",
                            "resources: [cpu, link]", "resources: [net:]", "plugin: archive",
                            "with: {format: tgz, output: x.tgz, files: [a]}",
                            "depfile: '../x.d'", "silent: true", "internal: yes", "desc: '{{.UNDEFINED}}'",
                            "env: {A: '{{.V1}}'}", "vars: {L: '{{.V0}}'}",
                            "allow-outside-root: maybe", "status: [test -f x]", "unknownkey: 1",
                            "deps: [{task: t0, vars: {A: 1}}]",
                            "cmds: [echo a, {task: 't{{.V0}}', vars: {A: '{{.V0}}'}}, echo b]",
                            "cmds: [{for: [a, b], task: t0, vars: {X: '{{.ITEM}}'}}, {task: t1}]",
                            "cmds: [{task: t\(index), vars: {N: '{{.N | default 0 | add 1}}'}}]",
                            "deps: [{for: {var: V0}, task: t0}]",
                            "run: once", "cmds: [{task: t0, vars: 7}]",
                        ],
                        &random
                    ) + "\n"
            }
            if Int.random(in: 0..<4, using: &random) == 0 { text += "    cmds: [echo]\n" }
        }
        if count == 0, Bool.random(using: &random) { text += "  default: echo\n" }
        return text
    }

    /// One of the constructs that once crashed or hung kiln, at a size that still would.
    static func hostile(using random: inout SeededGenerator, files: inout [(String, String)]) -> String {
        switch Int.random(in: 0..<7, using: &random) {
        case 0:
            var text = "version: '3'\nvars:\n  V0: ab\n"
            for index in 1..<40 { text += "  V\(index): '{{.V\(index - 1)}}{{.V\(index - 1)}}'\n" }
            return text + "tasks:\n  t: echo {{.V39}}\n"
        case 1:
            var text =
                "version: '3'\ntasks:\n  t:\n    plugin: archive\n    with:\n      a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
            for index in 1..<14 {
                text +=
                    "      a\(index): &a\(index) ["
                    + Array(repeating: "*a\(index - 1)", count: 9).joined(separator: ", ") + "]\n"
            }
            return text
        case 2:
            let depth = Int.random(in: 300...5_000, using: &random)
            return "version: '3'\ntasks:\n  t: " + String(repeating: "[", count: depth)
                + String(repeating: "]", count: depth) + "\n"
        case 3:
            for level in 0..<150 {
                files.append(("n\(level).yml", "version: '3'\nincludes:\n  i: n\(level + 1).yml\ntasks:\n  t: echo\n"))
            }
            return "version: '3'\nincludes:\n  i: n0.yml\ntasks:\n  default: echo\n"
        case 4:
            for level in 0..<22 {
                files.append(
                    (
                        "d\(level).yml",
                        "version: '3'\nincludes:\n  a: d\(level + 1).yml\n  b: d\(level + 1).yml\ntasks:\n  t: echo\n"
                    )
                )
            }
            return "version: '3'\nincludes:\n  a: d0.yml\n  b: d0.yml\ntasks:\n  default: echo\n"
        case 5:
            var text = "version: '3'\ntasks:\n  t:\n    cmds:\n"
            for index in 0..<3_000 { text += "      - echo {{.U\(index)}}\n" }
            return text
        default:
            var text = "version: '3'\ntasks:\n  t0: echo\n"
            for index in 1..<3_000 { text += "  t\(index): {deps: [t\(index - 1)], cmds: [echo]}\n" }
            return text
        }
    }

    /// `text` with a few random bytes inserted, removed or replaced, among them the characters
    /// YAML and templates give meaning to, tabs, NULs and broken UTF-8.
    static func mutate(_ text: String, using random: inout SeededGenerator) -> String {
        var bytes = Array(text.utf8)
        let alphabet = Array("[]{}:&*!|>-'\"#%@`\t\n ,?{{}}.$".utf8) + [0, 0xC3, 0xFF, 0x80]
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.insert(pick(alphabet, &random), at: position)
            case 1: if !bytes.isEmpty { bytes.remove(at: position) }
            default: if !bytes.isEmpty { bytes[position] = pick(alphabet, &random) }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
