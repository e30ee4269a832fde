import Foundation
import KilnTestSupport
import Testing

/// Remote execution against a real REAPI execution service: buildbox-casd running actions with
/// buildbox-run in bubblewrap sandboxes.
@Suite("Remote execution (buildbox-casd with buildbox-run)", .serialized)
struct RemoteExecutionTests {
    let cache = RemoteCacheTests()

    /// A small C project whose tasks claim `remote`, and declare every input (the server sees
    /// only what an action lists), plus a task that says where it ran.
    func cProject(_ directory: TemporaryDirectory) throws {
        _ = try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              main:
                sources: [src/main.c, include/value.h]
                generates: [build/main.o]
                resources: [remote]
                cmds:
                  - mkdir -p build
                  - cc -O2 -Iinclude -c src/main.c -o build/main.o
              value:
                sources: [src/value.c, include/value.h]
                generates: [build/value.o]
                resources: [remote]
                cmds:
                  - mkdir -p build
                  - cc -O2 -Iinclude -c src/value.c -o build/value.o
              link:
                deps: [main, value]
                sources: ['build/*.o']
                generates: [build/calc]
                resources: [remote]
                cmds: ['cc build/*.o -o build/calc']
              where:
                sources: [src/main.c]
                generates: [where.txt]
                resources: [remote]
                cmds: ['pwd > where.txt']
              default:
                deps: [link, where]
            """
        )
        _ = try directory.write("include/value.h", "int value(void);\n")
        _ = try directory.write("src/value.c", "#include \"value.h\"\nint value(void) { return 42; }\n")
        _ = try directory.write(
            "src/main.c",
            "#include <stdio.h>\n#include \"value.h\"\nint main(void) { printf(\"%d\\n\", value()); return 0; }\n"
        )
    }

    @Test("jobs that claim 'remote' run on the executor, and its outputs are byte-identical to a local build's")
    func remoteBuildMatchesLocal() async throws {
        let server = try await CASServer.start(executing: true)
        defer { server.remove() }
        let remote = try TemporaryDirectory(prefix: "kiln-exec-remote")
        defer { remote.remove() }
        let local = try TemporaryDirectory(prefix: "kiln-exec-local")
        defer { local.remove() }
        try cProject(remote)
        try cProject(local)

        let ran = try await KilnProcess.run(["run", "--json", "--remote-executor", server.url], in: remote.path)
        #expect(ran.status == 0, "\(ran)")
        #expect(!ran.standardError.contains("warning"), "\(ran.standardError)")
        let statuses = try cache.finished(ran.standardOutput)
        for job in ["main", "value", "link", "where"] {
            #expect(statuses[job] == "succeeded", "\(job): \(statuses)")
        }
        // It ran in the server's sandbox, not in the project.
        let whereItRan = try #require(remote.read("where.txt"))
        #expect(!whereItRan.hasPrefix(remote.path), "\(whereItRan)")

        let built = try await KilnProcess.run(["run", "link"], in: local.path)
        #expect(built.status == 0, "\(built)")
        for file in ["build/main.o", "build/value.o", "build/calc"] {
            let remoteBytes = FileManager.default.contents(atPath: remote.path(file))
            #expect(
                remoteBytes != nil && remoteBytes == FileManager.default.contents(atPath: local.path(file)),
                "\(file)"
            )
        }
        // The program the server linked runs here.
        let program = Process()
        program.executableURL = URL(fileURLWithPath: remote.path("build/calc"))
        let output = Pipe()
        program.standardOutput = output
        try program.run()
        program.waitUntilExit()
        #expect(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "42\n")
    }

    @Test("a command that fails remotely fails its job, with what it printed; it doesn't run again here")
    func remoteFailureIsTheJobsFailure() async throws {
        let server = try await CASServer.start(executing: true)
        defer { server.remove() }
        let project = try TemporaryDirectory(prefix: "kiln-exec-fail")
        defer { project.remove() }
        _ = try project.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              fails:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['echo the remote says no; pwd > out.txt; exit 5']
            """
        )
        _ = try project.write("in.txt", "x\n")
        let result = try await KilnProcess.run(
            ["run", "--remote-executor", server.url, "--remote-execute", "fails"],
            in: project.path
        )
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.contains("the remote says no"), "\(result)")
        #expect(result.standardOutput.contains("exit status 5, run remotely"), "\(result)")
        #expect(!project.exists("out.txt"), "nothing of a failed remote run is written, and it didn't run here")
    }

    @Test("with the executor gone, the jobs run here, with one warning")
    func executorDownRunsHere() async throws {
        let project = try TemporaryDirectory(prefix: "kiln-exec-down")
        defer { project.remove() }
        try cProject(project)
        let result = try await KilnProcess.run(["run", "--remote-executor", "grpc://127.0.0.1:1"], in: project.path)
        #expect(result.status == 0, "\(result)")
        #expect(
            project.read("where.txt") == project.path + "\n"
                || project.read("where.txt")?.hasSuffix(project.path + "\n") == true
        )
        #expect(
            result.standardError.split(separator: "\n").filter { $0.contains("warning") }.count == 1,
            "\(result.standardError)"
        )
    }
}
