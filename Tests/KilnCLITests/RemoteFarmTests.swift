import Foundation
import KilnTestSupport
import Testing

/// Remote execution on a real farm: BuildGrid 0.4.4's scheduler on PostgreSQL, with `kiln worker`
/// bots running the leases — started and stopped by `scripts/remote-up` and `remote-down`, each
/// worker in a network namespace of its own when the tests run as root (as in CI).
@Suite("Remote execution on BuildGrid with kiln workers", .serialized)
struct RemoteFarmTests {
    let cache = RemoteCacheTests()

    /// A C project of four compiles (each ~0.4 s, so that one worker can't take them all) and a
    /// link. Every input is declared: a worker sees only what an action lists.
    func cProject(_ directory: TemporaryDirectory) throws {
        let units = ["alpha", "beta", "gamma", "delta"]
        var tasks = ""
        for unit in units {
            tasks += """
                  \(unit):
                    sources: [src/\(unit).c, include/units.h]
                    generates: [build/\(unit).o]
                    cmds:
                      - mkdir -p build
                      - sleep 0.4
                      - cc -O2 -Iinclude -c src/\(unit).c -o build/\(unit).o

                """
            _ = try directory.write(
                "src/\(unit).c",
                "#include \"units.h\"\nint \(unit)(void) { return \(unit.count); }\n"
            )
        }
        _ = try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
            \(tasks)  main:
                sources: [src/main.c, include/units.h]
                generates: [build/main.o]
                cmds:
                  - mkdir -p build
                  - cc -O2 -Iinclude -c src/main.c -o build/main.o
              link:
                deps: [main, \(units.joined(separator: ", "))]
                sources: ['build/*.o']
                generates: [build/calc]
                cmds: ['cc build/*.o -o build/calc']
              default:
                deps: [link]
            """
        )
        _ = try directory.write("include/units.h", units.map { "int \($0)(void);\n" }.joined())
        _ = try directory.write(
            "src/main.c",
            "#include <stdio.h>\n#include \"units.h\"\n"
                + "int main(void) { printf(\"%d\\n\", \(units.map { "\($0)()" }.joined(separator: " + "))); return 0; }\n"
        )
    }

    @Test("a C project built entirely by 2 workers in 2 namespaces is byte-identical to a local build")
    func twoWorkersBuildACProject() async throws {
        let farm = try await BuildFarm.start(workers: 2)
        defer { farm.stop() }
        let remote = try TemporaryDirectory(prefix: "kiln-farm-remote")
        defer { remote.remove() }
        let local = try TemporaryDirectory(prefix: "kiln-farm-local")
        defer { local.remove() }
        try cProject(remote)
        try cProject(local)

        let ran = try await KilnProcess.run(
            ["run", "--json", "--remote-executor", farm.url, "--remote-execute"],
            in: remote.path
        )
        #expect(ran.status == 0, "\(ran)")
        #expect(!ran.standardError.contains("warning"), "\(ran.standardError)")
        let statuses = try cache.finished(ran.standardOutput)
        for job in ["alpha", "beta", "gamma", "delta", "main", "link"] {
            #expect(statuses[job] == "succeeded", "\(job): \(statuses)")
        }
        // Every job ran on a worker, and both workers ran some.
        #expect(
            farm.leasesRun(byWorker: 1) + farm.leasesRun(byWorker: 2) == 6,
            "\(farm.log(ofWorker: 1))\n\(farm.log(ofWorker: 2))"
        )
        #expect(farm.leasesRun(byWorker: 1) >= 1 && farm.leasesRun(byWorker: 2) >= 1)
        if NetworkNamespace.isAvailable {
            // Each worker reached BuildGrid across its namespace's veth, not over loopback.
            for worker in 1...2 {
                #expect(farm.log(ofWorker: worker).contains("joined grpc://10."), "\(farm.log(ofWorker: worker))")
            }
        }

        let built = try await KilnProcess.run(["run"], in: local.path)
        #expect(built.status == 0, "\(built)")
        let remoteFiles = cache.files(under: remote.path, "build")
        let localFiles = cache.files(under: local.path, "build")
        #expect(remoteFiles.count == 6)
        #expect(remoteFiles == localFiles, "the remote build's files differ from the local build's")
        let program = try await runProgram(remote.path("build/calc"))
        #expect(program == "\(5 + 4 + 5 + 5)\n")
    }

    @Test("a worker killed mid-build: its job is retried on the other, and the build succeeds")
    func killedWorkerIsRetried() async throws {
        let farm = try await BuildFarm.start(workers: 2)
        defer { farm.stop() }
        let project = try TemporaryDirectory(prefix: "kiln-farm-kill")
        defer { project.remove() }
        _ = try project.write("in.txt", "hello\n")
        _ = try project.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              a: {sources: [in.txt], generates: [a.out], cmds: ['sleep 3; cat in.txt > a.out; echo a >> a.out']}
              b: {sources: [in.txt], generates: [b.out], cmds: ['sleep 3; cat in.txt > b.out; echo b >> b.out']}
              default: {deps: [a, b]}
            """
        )
        let run = try KilnProcess.start(
            ["run", "--json", "--remote-executor", farm.url, "--remote-execute"],
            in: project.path
        )
        // Both jobs are leased at once, one to each worker (one slot each): kill worker 1 while
        // it runs its lease. Watched from a thread of its own: on a loaded machine the test's
        // tasks may wait seconds for a turn, and once a poll of theirs missed the whole lease.
        let killedWhileBusy = Counter()
        let watcher = Thread {
            for _ in 0..<1200 where killedWhileBusy.count == 0 {
                if farm.isBusy(1) {
                    farm.kill(worker: 1)
                    killedWhileBusy.increment()
                    return
                }
                usleep(50_000)
            }
        }
        watcher.start()

        let result = try await run.wait(within: 120)
        #expect(killedWhileBusy.count == 1, "worker 1 never got a lease:\n\(farm.log(ofWorker: 1))")
        #expect(result.status == 0, "\(result)")
        #expect(!result.standardError.contains("warning"), "\(result.standardError)")
        #expect(project.read("a.out") == "hello\na\n")
        #expect(project.read("b.out") == "hello\nb\n")
        // Worker 1 never finished its lease; worker 2 ran both jobs.
        #expect(farm.leasesRun(byWorker: 1) == 0, "\(farm.log(ofWorker: 1))")
        #expect(farm.leasesRun(byWorker: 2) == 2, "\(farm.log(ofWorker: 2))")
    }

    @Test("kiln worker refuses a bad command line with its usage status, naming the mistake")
    func workerCommandLine() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-worker-usage")
        defer { directory.remove() }
        let cases: [([String], String)] = [
            (["worker"], "needs --server grpc://HOST:PORT"),
            (["worker", "--server", "http://x:1"], "--server must be grpc://HOST:PORT, not 'http://x:1'"),
            (["worker", "--server=grpc://127.0.0.1:1", "--jobs", "0"], "-j/--jobs must be at least 1"),
            (["worker", "--server", "grpc://127.0.0.1:1", "--bogus"], "unknown option '--bogus'"),
            (["worker", "--server", "grpc://127.0.0.1:1", "--dir"], "--dir needs a value"),
            (
                ["worker", "--server", "grpc://127.0.0.1:1", "--buildbox-casd", directory.path("none")],
                "--buildbox-casd \(directory.path("none")) isn't an executable file"
            ),
        ]
        for (arguments, message) in cases {
            let result = try await KilnProcess.run(arguments, in: directory.path)
            #expect(result.status == 64, "\(arguments): \(result)")
            #expect(result.standardError.contains(message), "\(arguments): \(result.standardError)")
        }
        let help = try await KilnProcess.run(["worker", "--help"], in: directory.path)
        #expect(help.status == 0)
        for option in [
            "--server", "--instance", "--bot-id", "--dir", "--jobs", "--buildbox-casd", "--buildbox-run",
            "--runner-arg",
        ] {
            #expect(help.standardOutput.contains(option), "\(option)")
        }
    }

    private func runProgram(_ path: String) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
