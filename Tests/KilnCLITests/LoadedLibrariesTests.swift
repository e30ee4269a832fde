import Foundation
import KilnTestSupport
import Testing

/// What a command maps into memory: kiln's own libraries and the Swift runtime, never Foundation,
/// Dispatch or Swift's concurrency runtime (issue 15, item 3). FoundationEssentials was loaded for
/// ArgumentParser alone and cost a run 2–3 MB of peak RSS; the command line is parsed by
/// `KilnCommandLine` now. Dispatch's overlay brought the string processing libraries (1 MB);
/// kiln's threads are its own (`KilnPaths/Threads.swift`, `KilnJobs.CountingSemaphore`), and so
/// are the template functions' regular expressions (`KilnTemplate/GoRegexp.swift`). No module a
/// run loads uses async functions (the engine's suspending waits are in `KilnJobsAsync`), so the
/// concurrency runtime and the libdispatch it needs (0.9 MB) stay out too. Read from the
/// dynamic loader itself (`LD_DEBUG=files`), for the process and everything it loads with dlopen.
@Suite("The libraries a command loads")
struct LoadedLibrariesTests {
    @Test(
        "an everyday command loads the CLI and no Foundation, Dispatch, concurrency or Regex library",
        arguments: [["run"], ["status"], ["list"], ["graph", "--format", "json"], ["--help"], ["run", "--no-such"]]
    )
    func noFoundation(arguments: [String]) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let log = directory.path("ld")
        let result = try await KilnProcess.run(
            arguments,
            in: project,
            environment: ["LD_DEBUG": "files", "LD_DEBUG_OUTPUT": log]
        )
        #expect(result.status == (arguments.last == "--no-such" ? 64 : 0), "\(result)")
        let libraries = try Self.loaded(in: directory.path)
        // The launcher answers only a run with nothing to do: these all load the CLI.
        #expect(libraries.contains { $0.contains("libKilnCLI.so") }, "the loader's log doesn't show the CLI loaded")
        let unwanted = [
            "libFoundation", "libdispatch", "libswiftDispatch", "libswift_Concurrency", "libswift_StringProcessing",
            "libswift_RegexParser",
        ]
        for unwanted in unwanted {
            let found = libraries.filter { $0.contains(unwanted) }
            #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
        }
    }

    /// The libraries the loader's logs in `directory` (`ld.PID`, one per process: kiln's, and those
    /// of the commands it started) say it loaded: their `file=` lines.
    static func loaded(in directory: String) throws -> [Substring] {
        var lines: [Substring] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasPrefix("ld.") {
            let log = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
            lines += log.split(separator: "\n").filter { $0.contains("file=") }
        }
        return lines
    }
}
