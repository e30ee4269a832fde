import Foundation
import KilnTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Task plugins through the real `kiln`, loading the real `.so` files `swift build` made: the
/// bundled archive, compress and http plugins, and test plugins that misbehave.
@Suite("Task plugins")
struct PluginTests {
    /// The directory holding `kiln` and the plugin libraries.
    func buildDirectory() throws -> String {
        (try KilnProcess.executable() as NSString).deletingLastPathComponent
    }

    func project(_ taskfile: String) throws -> TemporaryDirectory {
        try taskfileProject(taskfile, prefix: "kiln-plugins")
    }

    /// `tar tzf` of an archive.
    func listing(_ archive: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/tar")
        process.arguments = ["tzf", archive]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map(String.init)
    }

    @Test("kiln plugins lists each bundled plugin with its file, version, ABI and kinds")
    func pluginsCommand() async throws {
        let directory = try project("version: '3'\ntasks:\n  default:\n    cmds: [':']\n")
        defer { directory.remove() }
        let result = try await KilnProcess.run(["plugins", "--json"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        let plugins = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [[String: Any]]
        )
        let byName = Dictionary(
            uniqueKeysWithValues: plugins.compactMap { plugin in (plugin["name"] as? String).map { ($0, plugin) } }
        )
        #expect(Set(byName.keys) == ["archive", "compress", "http"], "\(result)")
        for (name, plugin) in byName {
            #expect(plugin["kinds"] as? [String] == [name])
            #expect(plugin["abi"] as? Int == 1)
            #expect((plugin["file"] as? String)?.hasSuffix("/libkiln-\(name).so") == true)
            #expect(plugin["version"] as? String == "1.0.0")
        }
    }

    @Test("archive and compress tasks run from the bundled plugins, found by kind, and are incremental")
    func archiveAndCompress() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              assets:
                plugin: compress
                each: sources
                sources: ['web/*.js']
                generates: ['dist/{{.source}}.gz']
              package:
                plugin: archive
                deps: [assets]
                sources: ['dist/**/*.gz', README]
                generates: [out/site.tar.gz]
                with:
                  output: out/site.tar.gz
                  files: [dist, README]
                  prefix: site-1.0
              default:
                deps: [package]

            """
        )
        defer { directory.remove() }
        try directory.write("web/app.js", String(repeating: "console.log('kiln');\n", count: 200))
        try directory.write("web/util.js", "export const x = 1;\n")
        try directory.write("README", "read me\n")
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("kiln: done: 3 ran"), "\(result)")
        let compressed = try Data(contentsOf: URL(fileURLWithPath: directory.path("dist/web/app.js.gz")))
        #expect(compressed.count < 200, "gzip -9 of a repetitive file is small: \(compressed.count) bytes")
        #expect(
            try listing(directory.path("out/site.tar.gz")) == [
                "site-1.0/README", "site-1.0/dist/", "site-1.0/dist/web/", "site-1.0/dist/web/app.js.gz",
                "site-1.0/dist/web/util.js.gz",
            ]
        )
        result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.standardOutput.contains("kiln: done: 0 ran, 3 up to date"), "\(result)")
        // A changed input recompresses that file; the archive is rebuilt with it.
        try directory.write("web/util.js", "export const x = 2;\n")
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.standardOutput.contains("kiln: done: 2 ran, 1 up to date"), "\(result)")
    }

    @Test("kiln list and kiln graph, which load plugins and return, exit cleanly every time")
    func listAndGraphExitCleanly() async throws {
        // Their process monitor was once freed under its running thread at exit: a crash about
        // one run in thirty.
        let directory = try project(
            "version: '3'\ntasks:\n  pack:\n    plugin: archive\n    with: {output: a.tar.gz, files: [Taskfile.yml]}\n"
        )
        defer { directory.remove() }
        for _ in 0..<25 {
            for command in [["list"], ["graph", "--format", "json"]] {
                let result = try await KilnProcess.run(command, in: directory.path)
                #expect(result.status == 0, "\(command): \(result)")
                if result.status != 0 { return }
            }
        }
    }

    @Test("a kind's plugin is found by name through --plugin-path and KILN_PLUGIN_PATH")
    func searchPath() async throws {
        let build = try buildDirectory()
        let directory = try project(
            """
            version: '3'
            tasks:
              late:
                plugin: later
                generates: [late.txt]
                with: {output: late.txt, seconds: 0.01}

            """
        )
        defer { directory.remove() }
        // A plugin directory of our own, holding the test plugin under the kind's name.
        let plugins = directory.path("my-plugins")
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        symlink(build + "/libkilntest-behaviours.so", plugins + "/libkiln-later.so")
        var result = try await KilnProcess.run(["run", "late"], in: directory.path)
        #expect(result.status == 2, "not found without the path: \(result)")
        #expect(
            result.standardError.contains(
                "uses task kind 'later', which no plugin provides (no libkiln-later.so on the plugin path"
            ),
            "\(result)"
        )
        result = try await KilnProcess.run(["run", "--plugin-path", "my-plugins", "late"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("late.txt") == "written later\n")
        try FileManager.default.removeItem(atPath: directory.path("late.txt"))
        result = try await KilnProcess.run(
            ["run", "late"],
            in: directory.path,
            environment: ["KILN_PLUGIN_PATH": "/nonexistent:" + plugins]
        )
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("late.txt") == "written later\n")
        result = try await KilnProcess.run(["plugins"], in: directory.path, environment: ["KILN_PLUGIN_PATH": plugins])
        #expect(
            result.standardOutput.contains(
                "behaviours 0.1.0  ABI 1  \(plugins)/libkiln-later.so\n    kinds: fail, later"
            ),
            "\(result)"
        )
    }

    @Test("a plugin file that changes keeps the next run from being a no-op on the snapshot's word")
    func changedPluginIsNoNoOp() async throws {
        let build = try buildDirectory()
        let directory = try project(
            """
            version: '3'
            plugins: [./plugins/libkilntest-behaviours.so]
            tasks:
              late:
                plugin: later
                sources: [Taskfile.yml]
                generates: [late.txt]
                with: {output: late.txt, seconds: 0.01}

            """
        )
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path("plugins"), withIntermediateDirectories: true)
        let copy = directory.path("plugins/libkilntest-behaviours.so")
        try FileManager.default.copyItem(atPath: build + "/libkilntest-behaviours.so", toPath: copy)
        _ = try await KilnProcess.run(["run", "late"], in: directory.path)
        try await Task.sleep(for: .milliseconds(120))  // past the racy window: statuses can vouch
        _ = try await KilnProcess.run(["run", "late"], in: directory.path)
        var result = try await KilnProcess.run(
            ["run", "late"],
            in: directory.path,
            environment: ["KILN_DEBUG": "phases"]
        )
        // Answered by the launcher (`quick run`), or by the full command's own scan.
        #expect(
            (result.standardError.contains("kiln: phases (ms): snapshot")
                || result.standardError.contains("kiln: phases (ms): quick run"))
                && !Self.planned(result),
            "a no-op on the snapshot's word: \(result)"
        )
        // A rebuilt plugin (here: the same code, one byte longer) must be loaded again.
        let handle = try #require(FileHandle(forWritingAtPath: copy))
        handle.seekToEndOfFile()
        handle.write(Data([0]))
        handle.closeFile()
        result = try await KilnProcess.run(["run", "late"], in: directory.path, environment: ["KILN_DEBUG": "phases"])
        #expect(result.status == 0, "\(result)")
        #expect(Self.planned(result), "the plugins were loaded again: \(result)")
    }

    /// Whether the run's phases (`KILN_DEBUG=phases`) say it loaded and planned: after the
    /// snapshot's scan, beside it, or on the word of the launcher's look.
    static func planned(_ result: KilnProcess.Result) -> Bool {
        result.standardError.contains("load and plan")
            || result.standardError.contains("snapshot and load")
            || result.standardError.contains("load (the launcher looked)")
    }

    @Test("a configuration the plugin rejects stops the run at its Taskfile line and column")
    func rejectedConfiguration() async throws {
        let directory = try project(
            """
            version: '3'
            tasks:
              package:
                plugin: archive
                with:
                  output: out.tar.gz
                  files: [a]
                  level: 12

            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "package"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.standardError.contains(
                "Taskfile.yml:8:14: error: task 'package': 'level' must be 1 (fastest) to 9 (smallest), not 12 (task kind 'archive')"
            ),
            "\(result)"
        )
    }

    @Test("every plugin loading error is a clear message at the plugins: entry, and exit status 2")
    func loadingErrors() async throws {
        let build = try buildDirectory()
        let directory = try project(
            """
            version: '3'
            plugins:
              - archive
              - \(build)/libkilntest-oldabi.so
              - \(build)/libkilntest-duplicate.so
              - nosuch
              - \(build)/libKilnJobs.so
              - ./not-a-library.so
            tasks:
              default:
                cmds: [':']

            """
        )
        defer { directory.remove() }
        try directory.write("not-a-library.so", "just text\n")
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        let errors = result.standardError
        #expect(
            errors.contains(
                "Taskfile.yml:4:5: error: plugin \(build)/libkilntest-oldabi.so was built against plugin ABI 999, but this kiln has plugin ABI 1; rebuild the plugin"
            ),
            "\(result)"
        )
        #expect(
            errors.contains(
                "Taskfile.yml:5:5: error: plugin \(build)/libkilntest-duplicate.so: task kind 'archive' from \(build)/libkilntest-duplicate.so is already registered by"
            ),
            "\(result)"
        )
        #expect(errors.contains("libkiln-archive.so; remove one of the two plugins or rename the kind"), "\(result)")
        #expect(errors.contains("Taskfile.yml:6:5: error: plugin 'nosuch' not found; looked for"), "\(result)")
        #expect(errors.contains("libkiln-nosuch.so"), "\(result)")
        #expect(
            errors.contains(
                "Taskfile.yml:7:5: error: \(build)/libKilnJobs.so is not a kiln plugin: it has no 'kiln_plugin_entry' entry point"
            ),
            "\(result)"
        )
        #expect(
            errors.contains("Taskfile.yml:8:5: error: can't load plugin \(directory.path)/not-a-library.so: "),
            "\(result)"
        )
        #expect(
            errors.contains("invalid ELF header") || errors.contains("file too short"),
            "the dlerror text: \(result)"
        )
    }

    @Test("a plugin file or directory others can write is refused unless --allow-insecure-plugins")
    func insecurePlugins() async throws {
        let build = try buildDirectory()
        let directory = try project(
            """
            version: '3'
            plugins: [./open/libkilntest-behaviours.so]
            tasks:
              late:
                plugin: later
                generates: [late.txt]
                with: {output: late.txt, seconds: 0.05}

            """
        )
        defer { directory.remove() }
        // A directory anyone may write to, holding a link to the real plugin.
        try FileManager.default.createDirectory(atPath: directory.path("open"), withIntermediateDirectories: true)
        chmod(directory.path("open"), 0o777)
        symlink(build + "/libkilntest-behaviours.so", directory.path("open/libkilntest-behaviours.so"))
        var result = try await KilnProcess.run(["run", "late"], in: directory.path)
        #expect(result.status == 2, "\(result)")
        #expect(
            result.standardError.contains(
                "refusing to load \(directory.path)/open/libkilntest-behaviours.so: the plugin directory \(directory.path)/open is writable by others (mode 777)"
            ),
            "\(result)"
        )
        #expect(
            result.standardError.contains("run 'chmod go-w \(directory.path)/open', or pass --allow-insecure-plugins"),
            "\(result)"
        )
        result = try await KilnProcess.run(["run", "--allow-insecure-plugins", "late"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("late.txt") == "written later\n")
    }

    @Test("a plugin job that throws fails only its task; an asynchronous plugin job finishes from another thread")
    func throwingJobFailsOnlyItsTask() async throws {
        let build = try buildDirectory()
        let directory = try project(
            """
            version: '3'
            plugins: [\(build)/libkilntest-behaviours.so]
            tasks:
              broken:
                plugin: fail
                with: {message: 'the widget is broken'}
              after-broken:
                deps: [broken]
                cmds: ['touch after-broken.txt']
              late:
                plugin: later
                generates: [late.txt]
                with: {output: late.txt, seconds: 0.2}
              fine:
                cmds: ['touch fine.txt']
              each-after-broken:
                deps: [broken]
                each: sources
                sources: ['*.yml']
                cmds: ['touch each-{{.source_stem}}.txt']
              default:
                deps: [after-broken, late, fine, each-after-broken]

            """
        )
        defer { directory.remove() }
        // `default` (a group) and `each-after-broken` are created after `broken` already failed:
        // they must not wait for it forever.
        let result = try await KilnProcess.run(["run", "-k"], in: directory.path, within: 60)
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.contains("FAILED: broken"), "\(result)")
        #expect(result.standardOutput.contains("the widget is broken"), "\(result)")
        #expect(directory.read("fine.txt") != nil)
        #expect(directory.read("late.txt") == "written later\n")
        #expect(directory.read("after-broken.txt") == nil)
        #expect(directory.read("each-Taskfile.txt") == nil)
        #expect(result.standardOutput.contains("2 ran, 1 failed, 1 did not run"), "\(result)")
    }
}

/// The http plugin against a real HTTP server on 127.0.0.1.
@Suite("The http plugin")
struct HTTPPluginTests {
    let plugins = PluginTests()

    func taskfile(url: String, extra: String = "") -> String {
        """
        version: '3'
        tasks:
          fetch:
            plugin: http
            generates: [got/data.txt]
            with:
              url: \(url)
        \(extra)

        """
    }

    @Test("a download writes the body to the output; an upload sends the file")
    func success() async throws {
        let server = try TestHTTPServer { request in
            request.method == "GET" ? .init(status: 200, body: "payload from the server\n") : .init(status: 201)
        }
        defer { server.stop() }
        let directory = try plugins.project(
            """
            version: '3'
            tasks:
              fetch:
                plugin: http
                generates: [got/data.txt]
                with: {url: '\(server.url("/data.txt"))'}
              publish:
                plugin: http
                sources: [report.txt]
                with: {url: '\(server.url("/upload/report.txt"))', method: PUT}

            """
        )
        defer { directory.remove() }
        try directory.write("report.txt", "a report to upload\n")
        let result = try await KilnProcess.run(["run", "fetch", "publish"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("got/data.txt") == "payload from the server\n")
        let upload = try #require(server.requests.first { $0.method == "PUT" })
        #expect(upload.path == "/upload/report.txt")
        #expect(String(decoding: upload.body, as: UTF8.self) == "a report to upload\n")
    }

    @Test("a 404 fails the job with the status, and leaves no file")
    func notFound() async throws {
        let server = try TestHTTPServer { _ in .init(status: 404, body: "no such thing") }
        defer { server.stop() }
        let directory = try plugins.project(taskfile(url: server.url("/missing.txt")))
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "fetch"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.contains("GET \(server.url("/missing.txt")): HTTP 404 Not Found"), "\(result)")
        #expect(server.requests.count == 1, "a 404 is not retried")
        #expect(!FileManager.default.fileExists(atPath: directory.path("got/data.txt")))
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: directory.path("got")))?.isEmpty ?? true,
            "no temporary file left"
        )
    }

    @Test("a refused connection is retried with backoff, then fails saying so")
    func connectionRefused() async throws {
        let port = try TestHTTPServer.closedPort()
        let directory = try plugins.project(
            """
            version: '3'
            tasks:
              fetch:
                plugin: http
                generates: [got/data.txt]
                with: {url: 'http://127.0.0.1:\(port)/data.txt', retries: 2, backoff: 0.05}

            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "fetch"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(
            result.standardOutput.contains("GET http://127.0.0.1:\(port)/data.txt: connection refused"),
            "\(result)"
        )
        #expect(result.standardOutput.contains("retrying in 0.05 s (attempt 2 of 3)"), "\(result)")
        #expect(result.standardOutput.contains("(after 3 attempts)"), "\(result)")
    }

    @Test("a 503 is retried and a later success counts")
    func retriedServerError() async throws {
        let calls = Mutex(0)
        let server = try TestHTTPServer { _ in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return call < 3 ? .init(status: 503) : .init(status: 200, body: "third time lucky\n")
        }
        defer { server.stop() }
        let directory = try plugins.project(
            taskfile(url: server.url("/flaky"), extra: "      retries: 3\n      backoff: 0.05")
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "fetch"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("got/data.txt") == "third time lucky\n")
        #expect(server.requests.count == 3)
    }

    @Test("a server that doesn't answer in time fails the job with a timeout")
    func timeout() async throws {
        // The server would answer (200) after two minutes: only a timeout that fired fails the job.
        let server = try TestHTTPServer { _ in .init(status: 200, body: "too late", delay: 120) }
        defer { server.stop() }
        let directory = try plugins.project(
            taskfile(url: server.url("/slow"), extra: "      timeout: 0.3\n      retries: 0")
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "fetch"], in: directory.path, within: 60)
        #expect(result.status == 1, "\(result)")
        #expect(result.standardOutput.contains("GET \(server.url("/slow")): timed out after 0.3 s"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("got/data.txt")))
    }

    @Test("Ctrl-C during a transfer stops it at once: exit 130, no file left")
    func cancellationInFlight() async throws {
        // The server would answer after two minutes: kiln ending within the wait below means the
        // transfer was stopped, not waited for.
        let server = try TestHTTPServer { _ in .init(status: 200, body: "never seen", delay: 120) }
        defer { server.stop() }
        let directory = try plugins.project(taskfile(url: server.url("/forever")))
        defer { directory.remove() }
        let process = try KilnProcess.start(["run", "fetch"], in: directory.path)
        #expect(await waitUntil(within: 30) { !server.requests.isEmpty }, "the request reached the server")
        process.send(SIGINT)
        let result = try await process.wait(within: 60)
        #expect(result.status == 130, "\(result)")
        #expect(
            (try? FileManager.default.contentsOfDirectory(atPath: directory.path("got")))?.isEmpty ?? true,
            "no partial download left"
        )
    }
}
