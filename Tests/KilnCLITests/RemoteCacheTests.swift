import Foundation
import KilnTestSupport
import Testing

/// The remote cache against a real REAPI server, buildbox-casd: results stored by one checkout
/// and fetched by another (in another network namespace), what is never stored, a corrupted
/// blob, a server that goes away, and how a run is told where the cache is.
@Suite("Remote cache (buildbox-casd)", .serialized)
struct RemoteCacheTests {
    /// The `finished` events of a `--json` run, by job.
    func finished(_ output: String) throws -> [String: String] {
        var statuses: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let event = try parseJSON(String(line)) as? [String: Any], event["event"] as? String == "finished",
                let job = event["job"] as? String, let status = event["status"] as? String
            else { continue }
            statuses[job] = status
        }
        return statuses
    }

    /// The files under `directory/relative`, by path.
    func files(under directory: String, _ relative: String) -> [String: Data] {
        var found: [String: Data] = [:]
        let base = directory + "/" + relative
        let enumerator = FileManager.default.enumerator(atPath: base)
        while let item = enumerator?.nextObject() as? String {
            if let data = FileManager.default.contents(atPath: base + "/" + item), !item.hasSuffix("/") {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: base + "/" + item, isDirectory: &isDirectory),
                    !isDirectory.boolValue
                {
                    found[relative + "/" + item] = data
                }
            }
        }
        return found
    }

    @Test(
        "checkout B, at another path and in another network namespace, gets every cacheable job from what A stored: no command runs, the outputs are byte-identical"
    )
    func secondCheckoutHitsEverything() async throws {
        let namespace = NetworkNamespace.isAvailable ? try NetworkNamespace() : nil
        defer { namespace?.remove() }
        let server = try await CASServer.start(alsoOn: namespace.map { [$0.hostAddress] } ?? [])
        defer { server.remove() }
        let first = try TemporaryDirectory(prefix: "kiln-remote-a")
        defer { first.remove() }
        let second = try TemporaryDirectory(prefix: "kiln-remote-b-other-path")
        defer { second.remove() }
        let a = try copyExampleProject(to: first)
        let b = try copyExampleProject(to: second)

        let stored = try await KilnProcess.run(["run", "--remote-cache", server.url, "--json"], in: a)
        #expect(stored.status == 0, "\(stored)")
        let ranInA = try finished(stored.standardOutput)
        #expect(ranInA["link"] == "succeeded")

        var arguments = ["run", "--json", "--remote-cache"]
        let result: KilnProcess.Result
        if let namespace {
            arguments.append("grpc://\(namespace.hostAddress):\(server.port)")
            let kiln = try KilnProcess.executable()
            result = try await KilnProcess.start(
                program: namespace.prefix[0],
                Array(namespace.prefix.dropFirst()) + [kiln] + arguments,
                in: b
            )
            .wait(within: 120)
        } else {
            // Not root: the same, without a namespace of its own.
            arguments.append(server.url)
            result = try await KilnProcess.run(arguments, in: b)
        }
        #expect(result.status == 0, "\(result)")
        let statuses = try finished(result.standardOutput)
        let cacheable = ["compile src/lexer.c", "compile src/main.c", "compile src/parser.c", "link"]
        for job in cacheable { #expect(statuses[job] == "remote-hit", "\(job): \(statuses)") }
        // The plugins' jobs and `test` (no sources) are never looked up: they ran.
        #expect(statuses["test"] == "succeeded")
        #expect(!result.standardError.contains("warning"), "\(result.standardError)")
        let built = files(under: a, "build")
        #expect(built.count >= 7)  // three objects, their depfiles, the program
        #expect(files(under: b, "build") == built)

        // What B fetched is recorded as built: the next run there is a no-op, without the cache.
        let again = try await KilnProcess.run(["run", "--json"], in: b)
        let statusesAgain = try finished(again.standardOutput)
        for job in cacheable { #expect(statusesAgain[job] == nil || statusesAgain[job] == "up-to-date", "\(job)") }
    }

    @Test("a failing job, and one that doesn't leave its declared output, are never stored")
    func failuresAreNeverStored() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let taskfile = """
            version: '3'
            tasks:
              fails:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['cp in.txt out.txt', 'exit 3']
              forgets:
                sources: [in.txt]
                generates: [never.txt]
                cmds: ['cp in.txt other.txt']
              works:
                sources: [in.txt]
                generates: [copy.txt]
                cmds: ['cp in.txt copy.txt']
            """
        var projects: [TemporaryDirectory] = []
        defer { for project in projects { project.remove() } }
        for _ in 0..<2 {
            let project = try TemporaryDirectory(prefix: "kiln-remote-fail")
            _ = try project.write("Taskfile.yml", taskfile)
            _ = try project.write("in.txt", "input\n")
            projects.append(project)
        }
        let first = try await KilnProcess.run(
            ["run", "-k", "--json", "--remote-cache", server.url, "fails", "forgets", "works"],
            in: projects[0].path
        )
        #expect(first.status != 0)
        #expect(try finished(first.standardOutput)["fails"] == "failed")
        #expect(try finished(first.standardOutput)["forgets"] == "failed")
        #expect(server.storedResults == 1, "only 'works' is stored")

        let second = try await KilnProcess.run(
            ["run", "-k", "--json", "--remote-cache", server.url, "fails", "forgets", "works"],
            in: projects[1].path
        )
        let statuses = try finished(second.standardOutput)
        #expect(statuses["fails"] == "failed")
        #expect(statuses["forgets"] == "failed")
        #expect(statuses["works"] == "remote-hit")
    }

    @Test("a blob corrupted on the server is detected: nothing is written from it, and the job runs here")
    func corruptedBlobIsNeverWritten() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let taskfile = """
            version: '3'
            tasks:
              copy:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['cp in.txt out.txt']
            """
        let content = "the content a corrupted blob must never replace\n"
        var projects: [TemporaryDirectory] = []
        defer { for project in projects { project.remove() } }
        for _ in 0..<2 {
            let project = try TemporaryDirectory(prefix: "kiln-remote-corrupt")
            _ = try project.write("Taskfile.yml", taskfile)
            _ = try project.write("in.txt", content)
            projects.append(project)
        }
        let first = try await KilnProcess.run(["run", "--remote-cache", server.url, "copy"], in: projects[0].path)
        #expect(first.status == 0, "\(first)")

        // The output's blob, as the server stores it: flip a byte, keep the size.
        let hash = sha256(Data(content.utf8))
        let blob = server.blobPath(hash)
        var bytes = try #require(FileManager.default.contents(atPath: blob))
        bytes[3] ^= 0xFF
        chmod(blob, 0o644)
        try bytes.write(to: URL(fileURLWithPath: blob))

        let second = try await KilnProcess.run(
            ["run", "--json", "--remote-cache", server.url, "copy"],
            in: projects[1].path
        )
        #expect(second.status == 0, "\(second)")
        #expect(try finished(second.standardOutput)["copy"] == "succeeded")
        #expect(second.standardError.contains("didn't match its digest twice"), "\(second.standardError)")
        #expect(projects[1].read("out.txt") == content)
    }

    @Test("with the server stopped in the middle of a build, the build completes here with one warning")
    func serverStoppedMidBuild() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let project = try TemporaryDirectory(prefix: "kiln-remote-stop")
        defer { project.remove() }
        // Step 4 says it has begun and waits until the server is gone (a minute at most): the
        // server is stopped in the middle however slowly either side runs (a fixed sleep here
        // once outlasted the whole build on a loaded machine).
        var taskfile = "version: '3'\ntasks:\n"
        for step in 1...12 {
            let wait =
                step == 4 ? "'touch begun', 'for i in $(seq 1200); do [ -e stopped ] && break; sleep 0.05; done', " : ""
            taskfile += """
                  step\(step):
                    \(step > 1 ? "deps: [step\(step - 1)]" : "")
                    sources: [\(step > 1 ? "out\(step - 1).txt" : "in.txt")]
                    generates: [out\(step).txt]
                    cmds: [\(wait)'sleep 0.2', 'cp \(step > 1 ? "out\(step - 1).txt" : "in.txt") out\(step).txt']

                """
        }
        _ = try project.write("Taskfile.yml", taskfile)
        _ = try project.write("in.txt", "chain\n")
        let run = try KilnProcess.start(["run", "--remote-cache", server.url, "step12"], in: project.path)
        for _ in 0..<1200 where !FileManager.default.fileExists(atPath: project.path("begun")) {
            try await Task.sleep(for: .milliseconds(50))
        }
        server.stop()
        _ = try project.write("stopped", "")
        let result = try await run.wait(within: 60)
        #expect(result.status == 0, "\(result)")
        #expect(project.read("out12.txt") == "chain\n")
        let warnings = result.standardError.split(separator: "\n").filter { $0.contains("warning: remote cache") }
        #expect(warnings.count == 1, "\(result.standardError)")
    }

    @Test("a cache that isn't there is one warning, and the build runs here")
    func cacheDownFromTheStart() async throws {
        let project = try TemporaryDirectory(prefix: "kiln-remote-down")
        defer { project.remove() }
        _ = try project.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  copy:\n    sources: [in.txt]\n    generates: [out.txt]\n    cmds: ['cp in.txt out.txt']\n"
        )
        _ = try project.write("in.txt", "x\n")
        // A port nothing listens on: refused at once.
        let result = try await KilnProcess.run(
            ["run", "--remote-cache", "grpc://127.0.0.1:1", "copy"],
            in: project.path
        )
        #expect(result.status == 0, "\(result)")
        #expect(project.read("out.txt") == "x\n")
        #expect(
            result.standardError.split(separator: "\n").filter { $0.contains("warning") }.count == 1,
            "\(result.standardError)"
        )
    }

    @Test("read-only: results are looked up and never stored")
    func readOnlyStoresNothing() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let example = try TemporaryDirectory(prefix: "kiln-remote-ro")
        defer { example.remove() }
        let project = try copyExampleProject(to: example)
        let result = try await KilnProcess.run(
            ["run", "--remote-cache", server.url, "--remote-cache-read-only"],
            in: project
        )
        #expect(result.status == 0, "\(result)")
        #expect(server.storedResults == 0)
    }

    @Test(
        "the Taskfile's 'remote:' section and KILN_REMOTE_CACHE name the cache; a mistake in the section is refused at its line"
    )
    func configuredByTaskfileAndEnvironment() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let task = "  copy:\n    sources: [in.txt]\n    generates: [out.txt]\n    cmds: ['cp in.txt out.txt']\n"
        let first = try TemporaryDirectory(prefix: "kiln-remote-config")
        defer { first.remove() }
        _ = try first.write("Taskfile.yml", "version: '3'\nremote:\n  cache: \(server.url)\ntasks:\n" + task)
        _ = try first.write("in.txt", "configured\n")
        let stored = try await KilnProcess.run(["run", "copy"], in: first.path)
        #expect(stored.status == 0, "\(stored)")
        #expect(server.storedResults == 1)

        let second = try TemporaryDirectory(prefix: "kiln-remote-config")
        defer { second.remove() }
        _ = try second.write("Taskfile.yml", "version: '3'\ntasks:\n" + task)
        _ = try second.write("in.txt", "configured\n")
        let fetched = try await KilnProcess.run(
            ["run", "--json", "copy"],
            in: second.path,
            environment: ["KILN_REMOTE_CACHE": server.url]
        )
        #expect(try finished(fetched.standardOutput)["copy"] == "remote-hit", "\(fetched)")

        _ = try second.write(
            "Taskfile.yml",
            "version: '3'\nremote:\n  cache: \(server.url)\n  readonly: true\ntasks:\n" + task
        )
        let refused = try await KilnProcess.run(["run", "copy"], in: second.path)
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("Taskfile.yml:4:3"), "\(refused.standardError)")
        #expect(refused.standardError.contains("readonly"), "\(refused.standardError)")

        let badURL = try await KilnProcess.run(["run", "--remote-cache", "http://example.com", "copy"], in: first.path)
        #expect(badURL.status != 0)
        #expect(badURL.standardError.contains("grpc://HOST:PORT"), "\(badURL.standardError)")
    }

    @Test(
        "a run where nothing changed never loads the remote library (its jobs that always run included), nor does a run without a remote"
    )
    func noOpLeavesTheLibraryUnloaded() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let example = try TemporaryDirectory(prefix: "kiln-remote-noop")
        defer { example.remove() }
        let project = try copyExampleProject(to: example)
        let loads = ["LD_DEBUG": "files"]
        let first = try await KilnProcess.run(["run", "--remote-cache", server.url], in: project, environment: loads)
        #expect(first.status == 0)
        #expect(first.standardError.contains("libKilnRemote.so"), "the build loads it")
        // The example's `test` task always runs (it declares no sources). The run after the
        // build finds a path changed since its snapshot, so it connects early (EarlyConnection);
        // from then on nothing has changed: only `test` runs, and the cache can't answer it.
        _ = try await KilnProcess.run(["run", "--remote-cache", server.url], in: project)
        for _ in 0..<2 {
            let noOp = try await KilnProcess.run(
                ["run", "--remote-cache", server.url],
                in: project,
                environment: loads
            )
            #expect(noOp.status == 0)
            #expect(!noOp.standardError.contains("libKilnRemote.so"))
        }
        try FileManager.default.removeItem(atPath: project + "/build")
        let withoutRemote = try await KilnProcess.run(["run"], in: project, environment: loads)
        #expect(withoutRemote.status == 0)
        #expect(!withoutRemote.standardError.contains("libKilnRemote.so"))
    }

    @Test("the cache the command line names is connected while the Taskfile loads, and let go unused when no job asks")
    func connectsWhileTheTaskfileLoads() async throws {
        let server = try await CASServer.start()
        defer { server.remove() }
        let project = try TemporaryDirectory(prefix: "kiln-remote-early")
        defer { project.remove() }
        // The load counts kiln's connections to the server (waiting up to 10 s for one): the
        // dynamic variable runs while the Taskfile loads, before any job.
        let count =
            "for i in $(seq 200); do n=$(ss -Htn state established '( dport = :\(server.port) )' | wc -l);"
            + " [ \"$n\" -gt 0 ] && break; sleep 0.05; done; echo $n"
        try project.write(
            "Taskfile.yml",
            """
            version: '3'
            vars:
              CONNECTIONS:
                sh: "\(count.replacingOccurrences(of: "\"", with: "\\\""))"
            tasks:
              default:
                cmds: ['echo connections={{.CONNECTIONS}}']

            """
        )
        let run = try await KilnProcess.run(["run", "--remote-cache", server.url], in: project.path)
        #expect(run.status == 0, "\(run)")
        #expect(!run.standardOutput.contains("connections=0"), "\(run)")
        #expect(run.standardOutput.contains("connections="), "\(run)")
        #expect(!run.standardError.contains("warning"), "\(run)")
    }

    /// `sha256sum`'s hex digest of `data`.
    func sha256(_ data: Data) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(data)
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return String(text.prefix(64))
    }
}
