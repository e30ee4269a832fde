import Foundation

/// `kiln-bench remote`: a second checkout's full build from a warm remote cache, beside a local
/// full build and ninja's, in one run.
///
/// It starts buildbox-casd (a real REAPI CAS and action cache) on 127.0.0.1, generates the
/// 1k-task project of `kiln-bench host` (independent `cp` tasks) at two paths — checkouts A and
/// B — and times, each from clean (no outputs, no `.kiln`):
/// - kiln's local full build of A, and ninja's;
/// - kiln's build of A with the remote cache when the cache is empty (every job runs and its
///   result is stored): what filling the cache costs;
/// - kiln's build of B with the cache warm: every job a hit, nothing runs.
///
/// Target: the warm second checkout ≤ 0.25× the local full build.
///
/// With `--baseline PATH` — another kiln, an earlier build with its libraries beside it — that
/// kiln's warm build of B is timed too, in the same run: before and after, side by side.
struct RemoteBenchmark {
    var kiln: String
    /// An earlier kiln whose warm build is timed beside this one's, or `nil`.
    var baseline: String?
    var ninja: String
    var casd: String
    /// The repository's scripts directory: `remote-up` and `remote-down` start and stop the farm.
    var scripts: String
    var quick: Bool
    /// Only the cache table (`--cache-only`): no farm is started.
    var cacheOnly: Bool
    var workDirectory: String
    /// How many rounds of the cache table's builds, each build once a round, in turns.
    var rounds = 7

    func run() throws {
        try? FileManager.default.removeItem(atPath: workDirectory)
        try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
        let count = quick ? 200 : 1_000
        let host = HostBenchmark(kiln: kiln, ninja: ninja, task: "", quick: quick, workDirectory: workDirectory + "/a")
        let first = try host.generateIndependent(count)
        let other = HostBenchmark(
            kiln: kiln,
            ninja: ninja,
            task: "",
            quick: quick,
            workDirectory: workDirectory + "/b-elsewhere"
        )
        let second = try other.generateIndependent(count)

        let (server, url) = try startServer(storage: workDirectory + "/casd")
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        print(
            "kiln-bench remote — \(ProcessInfo.processInfo.activeProcessorCount) cores, -j2, \(count) independent cp tasks"
        )
        print(
            "remote: buildbox-casd on \(url); every build from clean (no outputs, no .kiln); \(rounds) rounds, the builds in turns\n"
        )

        func clean(_ project: HostBenchmark.Project) {
            try? FileManager.default.removeItem(atPath: project.outputs)
            try? FileManager.default.createDirectory(atPath: project.outputs, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: project.directory + "/.kiln")
            try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_log")
            try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_deps")
        }
        // Filling: a fresh cache each time would need a fresh server; the first run fills it, and
        // only that one is timed.
        clean(first)
        let filling = runChild([kiln, "run", "-j2", "--remote-cache", url], in: first.directory)
        // The builds in turns, round after round: this machine's speed drifts within a minute, and
        // a row timed minutes after the one it is divided by would carry the drift. Each ratio is
        // the median of the rounds' own ratios.
        //
        // In the console's output, as the local build: `--json` costs kiln ~90K instructions a job
        // (its event writer), which the local build doesn't pay. The hits are read from the
        // summary line ("… N from the remote cache …").
        var builds: [(name: String, run: () -> ChildRun)] = [
            (
                "kiln, local full build (A)",
                {
                    clean(first)
                    return runChild([kiln, "run", "-j2"], in: first.directory)
                }
            ),
            (
                "ninja, local full build (A)",
                {
                    clean(first)
                    return runChild([ninja, "-j2"], in: first.directory)
                }
            ),
            (
                "kiln, B with a warm cache",
                {
                    clean(second)
                    return runChild(
                        [kiln, "run", "-j2", "--remote-cache", url],
                        in: second.directory,
                        captureOutput: true
                    )
                }
            ),
        ]
        if let baseline {
            builds.append(
                (
                    "baseline kiln, B with a warm cache",
                    {
                        clean(second)
                        return runChild([baseline, "run", "-j2", "--remote-cache", url], in: second.directory)
                    }
                )
            )
        }
        var samples = Array(repeating: [ChildRun](), count: builds.count)
        for _ in 0..<rounds {
            for (index, build) in builds.enumerated() { samples[index].append(build.run()) }
        }
        let warm = samples[2].last!
        let hits =
            warm.output.split(separator: "\n").last { $0.hasPrefix("kiln: ") }
            .flatMap { line in
                line.range(of: " from the remote cache").map { line[..<$0.lowerBound].split(separator: " ").last }
            }
            .flatMap { $0.map(String.init) } ?? "0"

        var table = Table(headers: [
            "build", "wall s (median)", "peak RSS MB", "÷ kiln local (median of rounds)", "÷ ninja (median of rounds)",
        ])
        func row(_ name: String, _ runs: [ChildRun]) {
            let failed = runs.contains { $0.status != 0 } ? " (exit \(runs.first { $0.status != 0 }!.status))" : ""
            table.add([
                name + failed, format(median(runs.map(\.seconds)), digits: 3),
                format(runs.map(\.peakMegabytes).max() ?? 0, digits: 1),
                format(median(zip(runs, samples[0]).map { $0.seconds / $1.seconds })) + "×",
                format(median(zip(runs, samples[1]).map { $0.seconds / $1.seconds })) + "×",
            ])
        }
        row(builds[0].name, samples[0])
        row(builds[1].name, samples[1])
        table.add([
            "kiln, A with an empty cache (runs, stores)" + (filling.status == 0 ? "" : " (exit \(filling.status))"),
            format(filling.seconds, digits: 3), format(filling.peakMegabytes, digits: 1),
            format(filling.seconds / median(samples[0].map(\.seconds))) + "× (once)",
            format(filling.seconds / median(samples[1].map(\.seconds))) + "× (once)",
        ])
        row("kiln, B with a warm cache (\(hits) hits)", samples[2])
        if builds.count > 3 { row(builds[3].name, samples[3]) }
        print(table.render())
        print("\nTarget: B's build from a warm cache ≤ 0.25× kiln's local full build.\n")
        if !cacheOnly { try runExecution() }
    }

    /// Remote execution: a CPU-heavy C project (compiles of ~0.5 s each) built locally at -j2, and
    /// on a farm of `scripts/remote-up` — BuildGrid 0.4.4 with 1, then 2 `kiln worker` bots of one
    /// slot each, every worker in its own network namespace and on a CPU of its own (`--pin`: one
    /// machine of one core each) — each farm new (an empty cache).
    func runExecution() throws {
        let files = quick ? 8 : 16
        let directory = workDirectory + "/heavy-c"
        try FileManager.default.createDirectory(atPath: directory + "/src", withIntermediateDirectories: true)
        var taskfile = "version: '3'\ntasks:\n"
        var names: [String] = []
        for file in 0..<files {
            var source = "#include <stdint.h>\n"
            for function in 0..<55 {
                source +=
                    "uint64_t f\(function)(uint64_t x) { for (int k = 0; k < 50; k++) { x = x * 6364136223846793005ULL + \(file * 100 + function); x ^= x >> 13; } return x; }\n"
            }
            source +=
                "uint64_t total\(file)(uint64_t x) { return " + (0..<55).map { "f\($0)(x)" }.joined(separator: " + ")
                + "; }\n"
            try source.write(toFile: directory + "/src/c\(file).c", atomically: true, encoding: .utf8)
            taskfile +=
                "  c\(file):\n    sources: [src/c\(file).c]\n    generates: [build/c\(file).o]\n    resources: [remote]\n"
            taskfile += "    cmds: ['mkdir -p build', 'cc -O2 -c src/c\(file).c -o build/c\(file).o']\n"
            names.append("c\(file)")
        }
        taskfile += "  default:\n    deps: [\(names.joined(separator: ", "))]\n"
        try taskfile.write(toFile: directory + "/Taskfile.yml", atomically: true, encoding: .utf8)
        func clean() {
            try? FileManager.default.removeItem(atPath: directory + "/build")
            try? FileManager.default.removeItem(atPath: directory + "/.kiln")
        }
        clean()
        let local = runChild([kiln, "run", "-j2"], in: directory)
        var runs: [(String, ChildRun)] = [("kiln, local -j2", local)]
        for workers in [1, 2] {
            let farm = workDirectory + "/farm-\(workers)"
            try? FileManager.default.removeItem(atPath: farm)
            let up = runChild(
                ["/bin/bash", scripts + "/remote-up", "--workers", String(workers), "--pin", "--dir", farm],
                in: workDirectory,
                captureOutput: true,
                environment: ["KILN": kiln]
            )
            let line = up.output.split(separator: "\n").last ?? ""
            guard up.status == 0, line.hasPrefix("KILN_REMOTE_EXECUTOR=") else {
                _ = runChild(["/bin/bash", scripts + "/remote-down", "--dir", farm], in: workDirectory)
                throw BenchmarkFailure("scripts/remote-up failed:\n\(up.output)")
            }
            let url = String(line.dropFirst("KILN_REMOTE_EXECUTOR=".count))
            clean()
            runs.append(
                (
                    "kiln, BuildGrid with \(workers) worker\(workers == 1 ? "" : "s")",
                    runChild([kiln, "run", "--remote-executor", url], in: directory)
                )
            )
            _ = runChild(["/bin/bash", scripts + "/remote-down", "--dir", farm, "--clean"], in: workDirectory)
        }
        var table = Table(headers: ["\(files) compiles of ~0.5 s", "wall s", "÷ local -j2", "speed-up over 1 worker"])
        let one = runs[1].1.seconds
        for (name, run) in runs {
            let failed = run.status == 0 ? "" : " (exit \(run.status))"
            table.add([
                name + failed, format(run.seconds), format(run.seconds / local.seconds) + "×",
                format(one / run.seconds) + "×",
            ])
        }
        print(table.render())
        print(
            "\nTarget: 2 workers ≥ 1.6× one. Worker N runs on CPU N-1 only; BuildGrid and kiln run on either."
        )
    }

    /// Starts buildbox-casd (a CAS and action cache) on a free port; returns it and its
    /// `grpc://` address.
    private func startServer(storage: String) throws -> (Process, String) {
        for _ in 0..<20 {
            let port = Int.random(in: 20_000..<60_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: casd)
            process.arguments = ["--bind=127.0.0.1:\(port)", storage]
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<200 {
                if !process.isRunning { break }
                if Self.canConnect(port: port) { return (process, "grpc://127.0.0.1:\(port)") }
                usleep(25_000)
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        throw BenchmarkFailure("buildbox-casd didn't start listening")
    }

    private static func canConnect(port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// A benchmark that couldn't run.
struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
