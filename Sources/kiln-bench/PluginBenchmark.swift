import Foundation

/// `kiln-bench plugins`: what loading every bundled plugin adds to kiln's start-up. The same
/// one-task project is listed (`kiln list`: load the Taskfile, register the task kinds) with a
/// Taskfile that names no plugin and with one that names them all; median of 21 runs each,
/// alternating so the machine's noise falls on both alike.
struct PluginBenchmark {
    var kiln: String
    var workDirectory: String

    func run() throws {
        let directory = workDirectory + "/plugins"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let base = "version: '3'\ntasks:\n  default:\n    cmds: [':']\n"
        try base.write(toFile: directory + "/none.yml", atomically: true, encoding: .utf8)
        try ("plugins: [archive, compress, http]\n" + base).write(
            toFile: directory + "/all.yml",
            atomically: true,
            encoding: .utf8
        )
        // Warm the Taskfile caches and the page cache.
        for file in ["none.yml", "all.yml"] { _ = runChild([kiln, "list", "-t", file], in: directory) }
        var none: [Double] = []
        var all: [Double] = []
        for _ in 0..<21 {
            none.append(runChild([kiln, "list", "-t", "none.yml"], in: directory).seconds)
            all.append(runChild([kiln, "list", "-t", "all.yml"], in: directory).seconds)
        }
        let medianNone = none.sorted()[10]
        let medianAll = all.sorted()[10]
        let check = runChild([kiln, "plugins", "--json"], in: directory, captureOutput: true)
        let count = check.output.components(separatedBy: "\"abi\"").count - 1
        print(
            "kiln-bench plugins — kiln list, median of 21 runs each, \(ProcessInfo.processInfo.activeProcessorCount) cores\n"
        )
        var table = Table(headers: ["Taskfile", "plugins loaded", "median ms", "added by plugins ms"])
        table.add(["no plugins", "0", format(medianNone * 1000, digits: 1), ""])
        table.add([
            "plugins: [archive, compress, http]", "\(count)", format(medianAll * 1000, digits: 1),
            format((medianAll - medianNone) * 1000, digits: 1),
        ])
        print(table.render())
        print("\nTarget: loading every bundled plugin adds ≤ 10 ms to kiln's start-up.")
    }
}
