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
struct RemoteBenchmark {
    var kiln: String
    var ninja: String
    var casd: String
    var quick: Bool
    var workDirectory: String

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

        let (server, url) = try startServer()
        defer {
            server.terminate()
            server.waitUntilExit()
        }
        print(
            "kiln-bench remote — \(ProcessInfo.processInfo.activeProcessorCount) cores, -j2, \(count) independent cp tasks"
        )
        print("remote: buildbox-casd on \(url); every build from clean (no outputs, no .kiln); median of 5\n")

        func clean(_ project: HostBenchmark.Project) {
            try? FileManager.default.removeItem(atPath: project.outputs)
            try? FileManager.default.createDirectory(atPath: project.outputs, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: project.directory + "/.kiln")
            try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_log")
            try? FileManager.default.removeItem(atPath: project.directory + "/.ninja_deps")
        }
        func median(_ runs: Int = 5, before: () -> Void = {}, _ body: () -> ChildRun) -> ChildRun {
            var samples: [ChildRun] = []
            for _ in 0..<runs {
                before()
                samples.append(body())
            }
            samples.sort { $0.seconds < $1.seconds }
            return samples[samples.count / 2]
        }

        let local = median(before: { clean(first) }) { runChild([kiln, "run", "-j2"], in: first.directory) }
        let ninjaRun = median(before: { clean(first) }) { runChild([ninja, "-j2"], in: first.directory) }
        // Filling: a fresh cache each time would need a fresh server; the first run fills it, and
        // only that one is timed.
        clean(first)
        let filling = runChild([kiln, "run", "-j2", "--remote-cache", url], in: first.directory)
        let warm = median(before: { clean(second) }) {
            runChild([kiln, "run", "-j2", "--remote-cache", url, "--json"], in: second.directory, captureOutput: true)
        }
        let hits =
            warm.output.split(separator: "\n").last { $0.contains("run-finished") }
            .flatMap { line in line.range(of: "\"remoteHits\":").map { line[$0.upperBound...].prefix { $0.isNumber } } }
            .map(String.init) ?? "?"

        var table = Table(headers: ["build", "wall s", "peak RSS MB", "÷ kiln local", "÷ ninja"])
        for (name, run) in [
            ("kiln, local full build (A)", local), ("ninja, local full build (A)", ninjaRun),
            ("kiln, A with an empty cache (runs, stores)", filling),
            ("kiln, B with a warm cache (\(hits) hits)", warm),
        ] {
            let failed = run.status == 0 ? "" : " (exit \(run.status))"
            table.add([
                name + failed, format(run.seconds, digits: 3), format(run.peakMegabytes, digits: 1),
                format(run.seconds / local.seconds) + "×", format(run.seconds / ninjaRun.seconds) + "×",
            ])
        }
        print(table.render())
        print("\nTarget: B's build from a warm cache ≤ 0.25× kiln's local full build.")
    }

    /// Starts buildbox-casd on a free port; returns it and its `grpc://` address.
    private func startServer() throws -> (Process, String) {
        for _ in 0..<20 {
            let port = Int.random(in: 20_000..<60_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: casd)
            process.arguments = ["--bind=127.0.0.1:\(port)", workDirectory + "/casd"]
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
