import Foundation

/// `kiln-bench incremental`: kiln's incremental runs against ninja and go-task on the generated
/// 10k-task projects, in one run — a no-op run, and a run after one source file changed — with the
/// jobs each tool ran and the state each keeps on disk.
///
/// Projects: 10k independent `cp` tasks, and a 10k-task DAG (100 layers of 100; each task's
/// sources are its own file and the outputs of 3 tasks of the layer before). In the DAG a changed
/// file in the first layer changes one output; its dependents rerun and leave byte-identical
/// outputs, so kiln stops there (early cutoff), while ninja, which compares mtimes, rebuilds
/// everything downstream.
struct IncrementalBenchmark {
    var kiln: String
    var ninja: String
    var task: String
    var quick: Bool
    var workDirectory: String
    /// Another kiln (`--baseline`, the build before a change), taking its turn in the paired
    /// one-changed-file rounds beside this one and ninja.
    var baseline: String? = nil

    private var host: HostBenchmark {
        HostBenchmark(kiln: kiln, ninja: ninja, task: task, quick: quick, workDirectory: workDirectory)
    }

    func run() throws {
        print(
            "kiln-bench incremental — \(ProcessInfo.processInfo.activeProcessorCount) cores, -j2; wall clock, median of 5 (go-task: 1 run)"
        )
        print("each tool builds each project once from clean first; 'ran' is the jobs a tool ran\n")
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        let size = quick ? 1_000 : 10_000
        let projects = [
            (try host.generateIndependent(size), "src/f\(size / 2).txt"),
            (try host.generateDeepDAG(layers: quick ? 10 : 100, width: 100, declaresFiles: true), "src/f50.txt"),
        ]
        var table = Table(headers: [
            "project", "tool", "no-op s", "no-op ÷ ninja", "1 file changed s", "ran", "change ÷ ninja", "state on disk",
        ])
        for (project, changed) in projects {
            var rows: [(String, Double, Double, Int, Int)] = []
            for tool in ["kiln", "kiln (no snapshot)", "ninja", "go-task"] {
                let measured = measure(tool, project: project, changed: changed)
                rows.append((tool, measured.noOp, measured.change, measured.ran, measured.stateBytes))
                FileHandle.standardError.write(Data("  done: \(project.name), \(tool)\n".utf8))
            }
            let ninjaRow = rows.first { $0.0 == "ninja" }
            for (tool, noOp, change, ran, bytes) in rows {
                let noOpRatio = tool == "ninja" || noOp.isNaN ? "" : format(noOp / (ninjaRow?.1 ?? .nan)) + "×"
                let changeRatio = tool == "ninja" || change.isNaN ? "" : format(change / (ninjaRow?.2 ?? .nan)) + "×"
                table.add([
                    project.name, tool, noOp.isNaN ? "failed" : format(noOp, digits: 3), noOpRatio,
                    change.isNaN ? "failed" : format(change, digits: 3), ran < 0 ? "?" : "\(ran)", changeRatio,
                    bytes > 0 ? format(Double(bytes) / 1_048_576, digits: 2) + " MB" : "",
                ])
            }
        }
        print(table.render())
        try printPairedChange()
        print(
            """

            Targets (10k tasks): kiln's no-op ≤ ninja's no-op and ≥ 20× faster than go-task's; one changed file reruns
            exactly 1 job in ≤ 100 ms; state for 10k jobs ≤ 5 MB. 'kiln (no snapshot)': .kiln/snapshot deleted before
            each run, so every job is checked against the build state (content signatures through the stat cache).
            state on disk — kiln: .kiln/state.db + .kiln/snapshot; ninja: .ninja_log + .ninja_deps; go-task: .task
            """
        )
    }

    /// One changed file in the independent project, kiln and ninja in turns (with `--baseline`,
    /// the baseline kiln too): each in a copy of its own, built once from clean, then 11 rounds of
    /// (a file changed, kiln runs) and (the same file changed in ninja's copy, ninja runs). Taking
    /// turns, both see the same moments of this shared machine, whose speed drifts between the
    /// table above's samples of one tool and the other's; the ratio is the median of the rounds'
    /// ratios. `--only change` prints this table alone.
    func printPairedChange() throws {
        let size = quick ? 1_000 : 10_000
        let rounds = quick ? 5 : 11
        var copies: [(tool: String, command: [String], project: HostBenchmark.Project)] = []
        var tools = [("kiln", [kiln, "run", "-j2"])]
        if let baseline { tools.append(("kiln (baseline)", [baseline, "run", "-j2"])) }
        tools.append(("ninja", [ninja, "-j2"]))
        for (tool, command) in tools {
            let other = HostBenchmark(
                kiln: kiln,
                ninja: ninja,
                task: task,
                quick: quick,
                workDirectory: workDirectory + "/paired-\(tool.filter(\.isLetter))"
            )
            let project = try other.generateIndependent(size)
            for state in [".kiln", ".ninja_log", ".ninja_deps"] {
                try? FileManager.default.removeItem(atPath: project.directory + "/" + state)
            }
            try? FileManager.default.removeItem(atPath: project.outputs)
            try? FileManager.default.createDirectory(atPath: project.outputs, withIntermediateDirectories: true)
            guard runChild(command, in: project.directory, timeout: 600).status == 0 else {
                throw BenchmarkFailure("\(tool) didn't build \(project.directory)")
            }
            // The no-op that follows a build (kiln reads its just-written outputs once more).
            _ = runChild(command, in: project.directory, timeout: 600)
            copies.append((tool, command, project))
        }
        var seconds = [[Double]](repeating: [], count: copies.count)
        for round in 0..<rounds {
            for (index, copy) in copies.enumerated() {
                appendLine(copy.project.directory + "/src/f\(size / 2 + round).txt", "change \(round)")
                let run = runChild(copy.command, in: copy.project.directory, captureOutput: true, timeout: 600)
                guard run.status == 0, jobsRan(run.output, tool: copy.tool) == 1 else {
                    throw BenchmarkFailure("\(copy.tool) didn't rerun exactly one job:\n\(run.output)")
                }
                seconds[index].append(run.seconds)
            }
        }
        let ninjaSeconds = seconds[copies.count - 1]
        var table = Table(headers: ["one file changed, \(size) tasks, in turns", "median s", "÷ ninja"])
        for (index, copy) in copies.enumerated() {
            let ratio = median(zip(seconds[index], ninjaSeconds).map { $0 / $1 })
            table.add([
                copy.tool, format(median(seconds[index]), digits: 3), copy.tool == "ninja" ? "" : format(ratio) + "×",
            ])
        }
        print("\n" + table.render())
        print("\(rounds) rounds; ÷ ninja is the median of the rounds' ratios. Target: ≤ 1.0×.")
    }

    private struct Result {
        var noOp = Double.nan
        var change = Double.nan
        var ran = -1
        var stateBytes = 0
    }

    private func measure(_ tool: String, project: HostBenchmark.Project, changed: String) -> Result {
        let directory = project.directory
        let command: [String]
        switch tool {
        case "ninja": command = [ninja, "-j2"]
        case "go-task": command = [task, "--taskfile", "Taskfile.gotask.yml", "--concurrency", "2", "default"]
        default: command = [kiln, "run", "-j2"]
        }
        let isKiln = tool.hasPrefix("kiln")
        let repeats = tool == "go-task" ? 1 : 5
        let prepare = { if tool == "kiln (no snapshot)" { unlink(directory + "/.kiln/snapshot") } }
        // From clean.
        for state in [".kiln", ".task", ".ninja_log", ".ninja_deps"] {
            try? FileManager.default.removeItem(atPath: directory + "/" + state)
        }
        try? FileManager.default.removeItem(atPath: project.outputs)
        try? FileManager.default.createDirectory(atPath: project.outputs, withIntermediateDirectories: true)
        let build = runChild(command, in: directory, timeout: 600)
        guard build.status == 0 else { return Result() }
        var result = Result()
        var samples: [Double] = []
        for _ in 0..<repeats {
            prepare()
            samples.append(runChild(command, in: directory, timeout: 600).seconds)
        }
        result.noOp = median(samples)
        samples = []
        for round in 0..<repeats {
            appendLine(directory + "/" + changed, "change \(round)")
            prepare()
            let run = runChild(command, in: directory, captureOutput: true, timeout: 600)
            samples.append(run.seconds)
            result.ran = jobsRan(run.output, tool: tool)
        }
        result.change = median(samples)
        if isKiln {
            // The build state and the snapshot (the Taskfile cache is a cache of the Taskfile).
            result.stateBytes = fileSize(directory + "/.kiln/state.db") + fileSize(directory + "/.kiln/snapshot")
        } else if tool == "ninja" {
            result.stateBytes = fileSize(directory + "/.ninja_log") + fileSize(directory + "/.ninja_deps")
        } else {
            result.stateBytes = directorySize(directory + "/.task")
        }
        return result
    }

    /// The jobs a run reports it ran: kiln's summary, ninja's `[n/m]` lines, go-task's `task: [name]` lines.
    private func jobsRan(_ output: String, tool: String) -> Int {
        let lines = output.split(separator: "\n")
        if tool.hasPrefix("kiln") {
            guard let summary = lines.last(where: { $0.hasPrefix("kiln: done: ") }) else { return -1 }
            return Int(summary.dropFirst("kiln: done: ".count).prefix { $0.isNumber }) ?? -1
        }
        if tool == "ninja" { return lines.filter { $0.hasPrefix("[") }.count }
        return lines.filter { $0.hasPrefix("task: [") }.count
    }

    private func appendLine(_ path: String, _ text: String) {
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        handle.seekToEndOfFile()
        handle.write(Data((text + "\n").utf8))
        handle.closeFile()
    }

    private func fileSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    private func directorySize(_ path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let child = path + "/" + name
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: child, isDirectory: &isDirectory)
            return total + (isDirectory.boolValue ? directorySize(child) : fileSize(child))
        }
    }
}
