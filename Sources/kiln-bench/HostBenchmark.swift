import Foundation

/// `kiln-bench host`: kiln against ninja and go-task on generated projects, in one run.
///
/// Projects: N independent `cp` tasks (1k, 10k) and a 10k-task deep DAG (100 layers of 100, each
/// task depending on 3 of the previous layer). Every tool builds every project from clean at -j2;
/// the table shows wall time, the tool's own peak RSS, and kiln's ratios to ninja and go-task.
/// Then: a dry run on the up-to-date 10k-task project (`kiln run --dry-run` beside `ninja -n` and
/// `task --dry`), and the peak RSS of `each:` tasks over growing file counts, which
/// stays flat because jobs are created in batches.
struct HostBenchmark {
    var kiln: String
    var ninja: String
    var task: String
    var quick: Bool
    var workDirectory: String
    /// Another kiln (`--baseline`, the build before a change), run beside this one where a table
    /// has room for it (the `each:` table).
    var baseline: String? = nil

    struct Project {
        var name: String
        var directory: String
        var outputs: String
    }

    func run() throws {
        print("kiln-bench host — \(ProcessInfo.processInfo.activeProcessorCount) cores, -j2, every build from clean")
        print("peak RSS is each tool's own (wait4 ru_maxrss); times are wall clock, median of 3 runs where shown\n")
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        let sizes = quick ? [200, 1_000] : [1_000, 10_000]
        var projects: [Project] = []
        for size in sizes { projects.append(try generateIndependent(size)) }
        projects.append(try generateDeepDAG(layers: quick ? 20 : 100, width: 100))

        var table = Table(headers: [
            "project", "tool", "wall s", "peak RSS MB", "kiln warm / cold ÷ tool (time)",
            "kiln warm / cold ÷ tool (RSS)",
        ])
        for project in projects {
            let repeats = project.name.contains("10000") ? 1 : 3
            // Cold: no Taskfile cache, so kiln parses the YAML; warm: the cache from the run before.
            let coldRun = measureBuild(project, repeats: repeats, keepCache: false) { [kiln] in [kiln, "run", "-j2"] }
            let kilnRun = measureBuild(project, repeats: repeats, keepCache: true) { [kiln] in [kiln, "run", "-j2"] }
            let ninjaRun = measureBuild(project, repeats: repeats) { [ninja] in [ninja, "-j2"] }
            let taskRun = measureBuild(project, repeats: 1, timeout: 300) { [task] in
                [task, "--taskfile", "Taskfile.gotask.yml", "--concurrency", "2", "default"]
            }
            let runs = [("kiln (cold)", coldRun), ("kiln (warm)", kilnRun), ("ninja", ninjaRun), ("go-task", taskRun)]
            for (tool, run) in runs {
                let isKiln = tool.hasPrefix("kiln")
                let ratio =
                    isKiln
                    ? "" : format(kilnRun.seconds / run.seconds) + "× / " + format(coldRun.seconds / run.seconds) + "×"
                let rssRatio =
                    isKiln
                    ? ""
                    : format(kilnRun.peakMegabytes / run.peakMegabytes) + "× / "
                        + format(coldRun.peakMegabytes / run.peakMegabytes) + "×"
                let failed = run.status == 0 ? "" : run.status == 137 ? " (killed at 300 s)" : " (exit \(run.status))"
                table.add([
                    project.name, tool + failed, format(run.seconds), format(run.peakMegabytes, digits: 1), ratio,
                    rssRatio,
                ])
            }
            FileHandle.standardError.write(Data("  done: \(project.name)\n".utf8))
        }
        print(table.render())
        print("\nTargets: kiln's full build ≤ 1.0× ninja's wall time; peak RSS ≤ 2× ninja's.")
        print(
            "cold: no .kiln (kiln parses the YAML, no build state); warm: .kiln from an earlier run (outputs removed: every job runs).\n"
        )

        try printDryRuns(projects)
        try printEach()
    }

    /// Full builds with the tools in turns (`--only full`): each round builds each project from
    /// clean outputs with kiln, the baseline kiln (`--baseline`) when given, and ninja, one after
    /// another, so a slow moment of the machine falls on all of them. kiln keeps its build state
    /// (warm). Prints the medians and the median of the rounds' ratios, with their spread.
    func runFullInTurns() throws {
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        print(
            "kiln-bench host --only full — \(ProcessInfo.processInfo.activeProcessorCount) cores, -j2, tools in turns"
        )
        var projects: [(Project, rounds: Int)] = []
        for size in quick ? [200, 1_000] : [1_000, 10_000] {
            projects.append((try generateIndependent(size), size >= 10_000 ? 3 : 7))
        }
        projects.append((try generateDeepDAG(layers: quick ? 20 : 100, width: 100), 3))
        var headers = ["project", "rounds", "kiln s", "ninja s", "kiln ÷ ninja", "spread", "peak RSS MB kiln / ninja"]
        if baseline != nil {
            headers += ["baseline s", "baseline ÷ ninja", "kiln ÷ baseline", "peak RSS MB baseline"]
        }
        var table = Table(headers: headers)
        for (project, rounds) in projects {
            var tools: [(name: String, command: [String])] = [("kiln", [kiln, "run", "-j2"])]
            if let baseline { tools.append(("baseline", [baseline, "run", "-j2"])) }
            tools.append(("ninja", [ninja, "-j2"]))
            // A first build each, so every kiln starts warm.
            for tool in tools where tool.name != "ninja" { _ = runChild(tool.command, in: project.directory) }
            var seconds: [String: [Double]] = [:]
            var peakMegabytes: [String: Double] = [:]
            for _ in 0..<rounds {
                for tool in tools {
                    let run = measureBuild(project, repeats: 1) { tool.command }
                    seconds[tool.name, default: []].append(run.seconds)
                    peakMegabytes[tool.name] = max(peakMegabytes[tool.name] ?? 0, run.peakMegabytes)
                }
            }
            let peak = { (tool: String) in format(peakMegabytes[tool] ?? 0) }
            let ratios = { (top: String, bottom: String) -> [Double] in
                zip(seconds[top] ?? [], seconds[bottom] ?? []).map { $0 / $1 }
            }
            let kilnToNinja = ratios("kiln", "ninja")
            var row = [
                project.name, "\(rounds)", format(median(seconds["kiln"] ?? [0]), digits: 3),
                format(median(seconds["ninja"] ?? [0]), digits: 3), format(median(kilnToNinja)) + "×",
                format(kilnToNinja.min() ?? 0) + "–" + format(kilnToNinja.max() ?? 0) + "×",
                "\(peak("kiln")) / \(peak("ninja"))",
            ]
            if baseline != nil {
                row += [
                    format(median(seconds["baseline"] ?? [0]), digits: 3),
                    format(median(ratios("baseline", "ninja"))) + "×", format(median(ratios("kiln", "baseline"))) + "×",
                    peak("baseline"),
                ]
            }
            table.add(row)
            FileHandle.standardError.write(Data("  done: \(project.name)\n".utf8))
        }
        print(table.render())
        print(
            "\nRatios: the median of the rounds' ratios (spread: their lowest and highest). Target: kiln ≤ 1.0× ninja; ≤ 0.9× on the deep DAG. Peak RSS: the highest of the rounds."
        )
        if baseline != nil {
            print(
                "kiln and the baseline share each project's .kiln: a baseline with another state format starts both without state."
            )
        }
    }

    /// Batching: peak memory of an `each:` task as the file count grows (`--only each` alone).
    func printEach() throws {
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        var headers = ["each: files", "kiln wall s", "kiln peak RSS MB", "peak live jobs"]
        if baseline != nil { headers += ["baseline wall s", "baseline peak RSS MB", "RSS ÷ baseline"] }
        var batching = Table(headers: headers)
        for files in quick ? [1_000, 5_000] : [10_000, 50_000, 100_000] {
            let directory = try generateEach(files)
            // A real run: without state every file's job runs.
            try? FileManager.default.removeItem(atPath: directory + "/.kiln")
            let result = runChild([kiln, "run", "-j2", "--json"], in: directory, captureOutput: true)
            let peak =
                result.output.split(separator: "\n").last { $0.contains("run-finished") }
                .flatMap { line in
                    line.range(of: "\"peakLiveEachJobs\":").map { line[$0.upperBound...].prefix { $0.isNumber } }
                }
                .map(String.init) ?? "?"
            var row = ["\(files)", format(result.seconds), format(result.peakMegabytes, digits: 1), peak]
            if let baseline {
                try? FileManager.default.removeItem(atPath: directory + "/.kiln")
                let before = runChild([baseline, "run", "-j2"], in: directory)
                row += [
                    format(before.seconds), format(before.peakMegabytes, digits: 1),
                    format(result.peakMegabytes / before.peakMegabytes, digits: 2) + "×",
                ]
            }
            batching.add(row)
        }
        print(batching.render())
        print("\nBatches of 256, two in flight: live jobs stay ≤ 512. Target: ≤ 35 MB peak RSS at 100k files.")
    }

    /// A dry run of each tool on the up-to-date 10k-task project: start-up, loading the build
    /// description and state, and deciding that nothing needs to run.
    func printDryRuns(_ projects: [Project]) throws {
        var startup = Table(headers: ["10k-task project, up to date", "command", "median ms", "peak RSS MB"])
        if let big = projects.first(where: {
            $0.name.hasPrefix("independent") && $0.name.contains(quick ? "1000" : "10000")
        }) {
            // Each tool brings the project up to date its own way first.
            _ = runChild([kiln, "run", "-j2"], in: big.directory)
            _ = runChild([ninja, "-j2"], in: big.directory)
            _ = runChild(
                [task, "--taskfile", "Taskfile.gotask.yml", "--concurrency", "2", "default"],
                in: big.directory,
                timeout: 300
            )
            for (label, arguments) in [
                ("kiln", [kiln, "run", "--dry-run"]), ("ninja", [ninja, "-n"]),
                ("go-task", [task, "--taskfile", "Taskfile.gotask.yml", "--dry", "default"]),
            ] {
                var samples: [ChildRun] = []
                for _ in 0..<5 { samples.append(runChild(arguments, in: big.directory)) }
                let median = samples.map(\.seconds).sorted()[2]
                startup.add([
                    big.name, "\(label) " + arguments.dropFirst().joined(separator: " "),
                    format(median * 1000, digits: 1),
                    format(samples.map(\.peakMegabytes).max() ?? 0, digits: 1),
                ])
            }
        }
        print(startup.render())
        print(
            "\nTarget: kiln's start-up plus graph construction for 10k tasks ≤ 50 ms (here: plus deciding that nothing runs).\n"
        )
    }

    /// Only the dry-run table (`kiln-bench host --only dry-run`).
    func runDryRunsOnly() throws {
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        try printDryRuns([try generateIndependent(quick ? 1_000 : 10_000)])
    }

    func resetNinja(_ project: Project) {
        try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_log")
        try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_deps")
    }

    /// Median of `repeats` clean builds.
    private func measureBuild(
        _ project: Project,
        repeats: Int,
        timeout: Int = 600,
        keepCache: Bool = true,
        command: () -> [String]
    ) -> ChildRun {
        var runs: [ChildRun] = []
        for _ in 0..<repeats {
            if !keepCache { try? FileManager.default.removeItem(atPath: project.directory + "/.kiln") }
            try? FileManager.default.removeItem(atPath: project.outputs)
            try? FileManager.default.createDirectory(atPath: project.outputs, withIntermediateDirectories: true)
            resetNinja(project)
            try? FileManager.default.removeItem(atPath: project.directory + "/.task")
            runs.append(runChild(command(), in: project.directory, timeout: timeout))
        }
        runs.sort { $0.seconds < $1.seconds }
        return runs[runs.count / 2]
    }

    // MARK: Generated projects

    func generateIndependent(_ count: Int) throws -> Project {
        let directory = workDirectory + "/independent-\(count)"
        try makeSources(directory, count)
        var taskfile = "version: '3'\ntasks:\n"
        var ninjaFile = "rule cp\n  command = cp $in $out\n"
        var names: [String] = []
        for index in 0..<count {
            taskfile +=
                "  t\(index):\n    sources: [src/f\(index).txt]\n    generates: [out/f\(index).txt]\n    cmds: ['cp src/f\(index).txt out/f\(index).txt']\n"
            ninjaFile += "build out/f\(index).txt: cp src/f\(index).txt\n"
            names.append("t\(index)")
        }
        taskfile += "  default:\n    deps: [\(names.joined(separator: ", "))]\n"
        try writeTaskfiles(taskfile, in: directory)
        try ninjaFile.write(toFile: directory + "/build.ninja", atomically: true, encoding: .utf8)
        return Project(name: "independent \(count)", directory: directory, outputs: directory + "/out")
    }

    /// A DAG of `layers` × `width` `cp` tasks, each depending on 3 of the layer before. With
    /// `declaresFiles`, each task also declares its sources (its file and its dependencies'
    /// outputs) and its output, so every tool can tell what is up to date (the incremental
    /// benchmark); without, tasks declare only their dependencies.
    func generateDeepDAG(layers: Int, width: Int, declaresFiles: Bool = false) throws -> Project {
        let count = layers * width
        let directory = workDirectory + (declaresFiles ? "/incremental-dag-\(count)" : "/dag-\(count)")
        try makeSources(directory, count)
        var taskfile = "version: '3'\ntasks:\n"
        var ninjaFile = "rule cp\n  command = cp $in $out\n"
        for index in 0..<count {
            let layer = index / width
            var dependencies: [Int] = []
            if layer > 0 {
                let base = (layer - 1) * width
                dependencies = [0, 7, 31].map { base + (index % width + $0) % width }
            }
            taskfile += "  t\(index):\n"
            if !dependencies.isEmpty {
                taskfile += "    deps: [\(dependencies.map { "t\($0)" }.joined(separator: ", "))]\n"
            }
            if declaresFiles {
                let sources = ["src/f\(index).txt"] + dependencies.map { "out/f\($0).txt" }
                taskfile += "    sources: [\(sources.joined(separator: ", "))]\n    generates: [out/f\(index).txt]\n"
            }
            taskfile += "    cmds: ['cp src/f\(index).txt out/f\(index).txt']\n"
            let implicit =
                dependencies.isEmpty ? "" : " | " + dependencies.map { "out/f\($0).txt" }.joined(separator: " ")
            ninjaFile += "build out/f\(index).txt: cp src/f\(index).txt\(implicit)\n"
        }
        let last = ((layers - 1) * width..<count).map { "t\($0)" }
        taskfile += "  default:\n    deps: [\(last.joined(separator: ", "))]\n"
        try writeTaskfiles(taskfile, in: directory)
        try ninjaFile.write(toFile: directory + "/build.ninja", atomically: true, encoding: .utf8)
        let name = (declaresFiles ? "DAG \(count)" : "deep DAG \(count)") + " (\(layers) layers)"
        return Project(name: name, directory: directory, outputs: directory + "/out")
    }

    private func generateEach(_ count: Int) throws -> String {
        let directory = workDirectory + "/each-\(count)"
        try makeSources(directory, count)
        let taskfile = """
            version: '3'
            tasks:
              default:
                each: sources
                sources: ['src/*.txt']
                cmds: [':']

            """
        try taskfile.write(toFile: directory + "/Taskfile.yml", atomically: true, encoding: .utf8)
        return directory
    }

    /// The same tasks for kiln (`Taskfile.yml`) and go-task (`Taskfile.gotask.yml`, with
    /// `run: once`: by default go-task reruns a dependency for every task that depends on it, which
    /// is exponential on a deep DAG — 23 GB and killed after five minutes on 2,000 tasks here).
    func writeTaskfiles(_ taskfile: String, in directory: String) throws {
        try taskfile.write(toFile: directory + "/Taskfile.yml", atomically: true, encoding: .utf8)
        let gotask = taskfile.replacingOccurrences(of: "version: '3'\n", with: "version: '3'\nrun: once\n")
        try gotask.write(toFile: directory + "/Taskfile.gotask.yml", atomically: true, encoding: .utf8)
    }

    func makeSources(_ directory: String, _ count: Int) throws {
        let sources = directory + "/src"
        if FileManager.default.fileExists(atPath: sources + "/f\(count - 1).txt") { return }
        try FileManager.default.createDirectory(atPath: sources, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: true)
        for index in 0..<count {
            try "\(index)\n".write(toFile: sources + "/f\(index).txt", atomically: false, encoding: .utf8)
        }
    }
}
