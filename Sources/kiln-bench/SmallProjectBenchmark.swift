import Foundation

/// `kiln-bench incremental`'s last table: the no-op of a small C project — 30 sources and 5
/// headers compiled with depfiles, and a link: 36 files — beside make and ninja, in one run.
///
/// What a person waits for after typing `kiln` in a project that is up to date. kiln's launcher
/// answers it from the snapshot (`kiln run`); `kiln run --wait` is the same no-op through the
/// full command, which loads the CLI library first, as every no-op did before the launcher took
/// them.
struct SmallProjectBenchmark {
    var kiln: String
    var ninja: String
    var workDirectory: String
    var rounds = 101
    /// Rounds of the no-op right after a rebuild (each rebuilds one object with every tool).
    var rebuildRounds = 11

    func run() throws {
        let directory = workDirectory + "/small-c"
        try? FileManager.default.removeItem(atPath: directory)
        try generate(directory)
        // Each with the directory its objects go to.
        let tools: [(name: String, command: [String], outputs: String)] = [
            ("make", ["/usr/bin/make", "-s", "-j2"], "make-out"),
            ("ninja", [ninja, "-j2"], "ninja-out"),
            ("kiln (launcher)", [kiln, "run"], "kiln-out"),
            ("kiln (full command)", [kiln, "run", "--wait"], "kiln-out"),
        ]
        // Each builds once from clean (make and ninja share the objects' names, so each builds into
        // its own directory), then one no-op settles what a build just wrote.
        for tool in tools {
            let build = runChild(tool.command, in: directory, captureOutput: true)
            guard build.status == 0 else { throw BenchmarkError("\(tool.name) failed to build: \(build.output)") }
            _ = timeDirect(tool.command, in: directory)
        }
        // Rounds interleave the tools, so the machine's noise falls on each alike.
        var samples = [[Double]](repeating: [], count: tools.count)
        for _ in 0..<rounds {
            for (index, tool) in tools.enumerated() { samples[index].append(timeDirect(tool.command, in: directory)) }
        }
        let medians = samples.map(median)
        // The no-op a person meets first: right after a build wrote outputs. One object is deleted
        // and rebuilt by each tool (untimed), then its next run is timed. kiln reads back what the
        // build just wrote (a status that fresh can't vouch for it), files and directories alike.
        var afterRebuild = [[Double]](repeating: [], count: tools.count)
        for round in 0..<rebuildRounds {
            for (index, tool) in tools.enumerated() {
                let object =
                    directory + "/" + tool.outputs + "/f\(String(format: "%02d", round % 30 + 1)).o"
                try? FileManager.default.removeItem(atPath: object)
                let rebuild = runChild(tool.command, in: directory, captureOutput: true)
                guard rebuild.status == 0 else {
                    throw BenchmarkError("\(tool.name) failed to rebuild: \(rebuild.output)")
                }
                afterRebuild[index].append(timeDirect(tool.command, in: directory))
            }
        }
        let firstMedians = afterRebuild.map(median)
        let make = medians[0]
        var table = Table(headers: [
            "tool", "no-op ms (median)", "÷ make", "÷ ninja", "right after a rebuild ms", "÷ make",
        ])
        for (index, tool) in tools.enumerated() {
            table.add([
                tool.name, format(medians[index] * 1000, digits: 2),
                index == 0 ? "" : format(medians[index] / make) + "×",
                index == 1 ? "" : format(medians[index] / medians[1]) + "×",
                format(firstMedians[index] * 1000, digits: 2),
                index == 0 ? "" : format(firstMedians[index] / firstMedians[0]) + "×",
            ])
        }
        print(
            "\nNo-op of a small C project (30 sources, 5 headers, depfiles, a link: 36 files), median of \(rounds) runs;"
                + " right after a rebuild of one object, median of \(rebuildRounds)"
        )
        print(table.render())
        print(
            "\nTarget: kiln's no-op ≤ make's. 'kiln (full command)': --wait sends the same no-op through libKilnCLI.so."
        )
    }

    /// The project: one Makefile, one build.ninja, one Taskfile, over the same sources.
    private func generate(_ directory: String) throws {
        let manager = FileManager.default
        for sub in ["src", "include"] {
            try manager.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true)
        }
        for header in 1...5 {
            try "#define H\(header) \(header)\n".write(
                toFile: directory + "/include/h\(header).h",
                atomically: true,
                encoding: .utf8
            )
        }
        let names = (1...30).map { String(format: "f%02d", $0) }
        for (index, name) in names.enumerated() {
            try "#include \"h\(index % 5 + 1).h\"\nint \(name)(int x) { return x + H\(index % 5 + 1) + \(index); }\n"
                .write(toFile: directory + "/src/\(name).c", atomically: true, encoding: .utf8)
        }
        var makefile = "all: make-out/libsmall.so\n"
        var ninjaFile =
            "rule cc\n  command = cc -Iinclude -fPIC -MMD -MF $out.d -c $in -o $out\n  depfile = $out.d\n  deps = gcc\n"
        ninjaFile += "rule link\n  command = cc -shared -o $out $in\n"
        for name in names {
            makefile += "make-out/\(name).o: src/\(name).c\n\t@mkdir -p make-out\n"
            makefile += "\tcc -Iinclude -fPIC -MMD -MF make-out/\(name).d -c src/\(name).c -o make-out/\(name).o\n"
            ninjaFile += "build ninja-out/\(name).o: cc src/\(name).c\n"
        }
        makefile += "make-out/libsmall.so: \(names.map { "make-out/\($0).o" }.joined(separator: " "))\n"
        makefile += "\tcc -shared -o $@ $^\n-include make-out/*.d\n"
        ninjaFile += "build ninja-out/libsmall.so: link \(names.map { "ninja-out/\($0).o" }.joined(separator: " "))\n"
        let taskfile = """
            version: '3'
            tasks:
              compile:
                each: sources
                sources: ['src/*.c']
                generates: ['kiln-out/{{.source_stem}}.o']
                depfile: 'kiln-out/{{.source_stem}}.d'
                cmds:
                  - mkdir -p kiln-out
                  - cc -Iinclude -fPIC -MMD -MF kiln-out/{{.source_stem}}.d -c {{.source}} -o {{.output}}
              default:
                deps: [compile]
                sources: ['kiln-out/*.o']
                generates: [kiln-out/libsmall.so]
                cmds: ['cc -shared -o kiln-out/libsmall.so kiln-out/*.o']

            """
        try makefile.write(toFile: directory + "/Makefile", atomically: true, encoding: .utf8)
        try ninjaFile.write(toFile: directory + "/build.ninja", atomically: true, encoding: .utf8)
        try taskfile.write(toFile: directory + "/Taskfile.yml", atomically: true, encoding: .utf8)
    }
}

/// A benchmark that couldn't run, and why.
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
