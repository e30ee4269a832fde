import Foundation

/// `kiln-bench host --only critical-path` (and the last table of `kiln-bench host`): a generated C
/// project with uneven compile times — eleven small files and one ten times as heavy, last by
/// name — built at -j2 by kiln, make and ninja, in one run.
///
/// Two builds per tool, both from clean: the first with no history, the second with the history
/// the first left (kiln's recorded durations, which `kiln clean` keeps; ninja's `.ninja_log`;
/// make keeps none). A tool that starts files in name order starts the heavy one last, and the
/// build waits for it alone at the end.
struct CriticalPathBenchmark {
    var kiln: String
    var ninja: String
    var quick: Bool
    var workDirectory: String

    func run() throws {
        let directory = workDirectory + "/uneven-c"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/src", withIntermediateDirectories: true)
        let small = quick ? 5 : 11
        let files = (0...small).map { String(format: "c%02d", $0) }
        var taskfile = "version: '3'\ntasks:\n"
        var makefile = "all: app\n"
        var ninjaFile = "rule cc\n  command = cc -O2 -c $in -o $out\nrule link\n  command = cc -o $out $in\n"
        for (index, name) in files.enumerated() {
            // The heavy one is the last by name: ten times the functions of the others.
            let functions = index == small ? 400 : 40
            var source = "#include <stdint.h>\n" + (index == 0 ? "int main(void) { return 0; }\n" : "")
            for function in 0..<functions {
                source +=
                    "uint64_t \(name)_f\(function)(uint64_t x) { for (int k = 0; k < 50; k++) { x = x * 6364136223846793005ULL + \(function); x ^= x >> 13; } return x; }\n"
            }
            try source.write(toFile: "\(directory)/src/\(name).c", atomically: true, encoding: .utf8)
            taskfile += "  \(name):\n    sources: [src/\(name).c]\n    generates: [build/\(name).o]\n"
            taskfile += "    cmds: ['mkdir -p build', 'cc -O2 -c src/\(name).c -o build/\(name).o']\n"
            makefile +=
                "build/\(name).o: src/\(name).c\n\tmkdir -p build\n\tcc -O2 -c src/\(name).c -o build/\(name).o\n"
            ninjaFile += "build build/\(name).o: cc src/\(name).c\n"
        }
        let objects = files.map { "build/\($0).o" }
        taskfile +=
            "  default:\n    deps: [\(files.joined(separator: ", "))]\n    sources: [\(objects.joined(separator: ", "))]\n"
        taskfile += "    generates: [app]\n    cmds: ['cc -o app \(objects.joined(separator: " "))']\n"
        makefile += "app: \(objects.joined(separator: " "))\n\tcc -o app \(objects.joined(separator: " "))\n"
        ninjaFile += "build app: link \(objects.joined(separator: " "))\ndefault app\n"
        try taskfile.write(toFile: directory + "/Taskfile.yml", atomically: true, encoding: .utf8)
        try makefile.write(toFile: directory + "/Makefile", atomically: true, encoding: .utf8)
        try ninjaFile.write(toFile: directory + "/build.ninja", atomically: true, encoding: .utf8)
        // ninja's own build directory must exist for its rule to write there.
        try FileManager.default.createDirectory(atPath: directory + "/build", withIntermediateDirectories: true)

        func clean(keepingHistory: Bool) {
            try? FileManager.default.removeItem(atPath: directory + "/app")
            try? FileManager.default.removeItem(atPath: directory + "/build")
            try? FileManager.default.createDirectory(atPath: directory + "/build", withIntermediateDirectories: true)
            if !keepingHistory {
                for name in [".kiln", ".ninja_log", ".ninja_deps"] {
                    try? FileManager.default.removeItem(atPath: directory + "/" + name)
                }
            } else {
                // kiln clean forgets what is up to date and keeps the durations.
                _ = runChild([kiln, "clean"], in: directory)
            }
        }
        func build(_ command: [String]) -> (first: ChildRun, second: ChildRun) {
            clean(keepingHistory: false)
            let first = runChild(command, in: directory)
            clean(keepingHistory: true)
            let second = runChild(command, in: directory)
            return (first, second)
        }
        let kilnRuns = build([kiln, "run", "-j2"])
        let makeRuns = build(["make", "-j2", "--no-print-directory", "-s"])
        let ninjaRuns = build([ninja, "-j2"])

        print("Uneven C project: \(small) small files and 1 ten times as heavy (last by name), -j2, from clean")
        var table = Table(headers: [
            "tool", "first build s", "with history s", "kiln ÷ tool (first)", "kiln ÷ tool (with history)",
        ])
        for (tool, runs) in [("kiln", kilnRuns), ("make", makeRuns), ("ninja", ninjaRuns)] {
            let failed = [runs.first.status, runs.second.status].allSatisfy { $0 == 0 } ? "" : " (failed)"
            table.add([
                tool + failed, format(runs.first.seconds), format(runs.second.seconds),
                tool == "kiln" ? "" : format(kilnRuns.first.seconds / runs.first.seconds) + "×",
                tool == "kiln" ? "" : format(kilnRuns.second.seconds / runs.second.seconds) + "×",
            ])
        }
        print(table.render())
        print(
            "\nTarget: kiln ≤ 1.0× make and ninja. With history, kiln starts the task whose job ran longest first"
                + " (make has no history; ninja reads .ninja_log).\n"
        )
    }
}
