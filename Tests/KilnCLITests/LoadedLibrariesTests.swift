import Foundation
import KilnTestSupport
import Testing

/// What a command maps into memory: kiln's own libraries and the Swift runtime, never Foundation
/// (issue 15, item 3). FoundationEssentials was loaded for ArgumentParser alone and cost a run
/// 2–3 MB of peak RSS; the command line is parsed by `KilnCommandLine` now. Read from the
/// dynamic loader itself (`LD_DEBUG=files`), for the process and everything it loads with dlopen.
@Suite("The libraries a command loads")
struct LoadedLibrariesTests {
    @Test(
        "an everyday command loads the CLI and no Foundation",
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
        // One file per process (`ld.PID`): kiln's, and those of the commands it started.
        var loaded = ""
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where name.hasPrefix("ld.") {
            loaded += try String(contentsOfFile: directory.path(name), encoding: .utf8)
        }
        // The launcher answers only a run with nothing to do: these all load the CLI.
        #expect(loaded.contains("libKilnCLI.so"), "the loader's log doesn't show the CLI loaded")
        let foundation = loaded.split(separator: "\n").filter { $0.contains("libFoundation") }
        #expect(foundation.isEmpty, "\(foundation.prefix(3).joined(separator: "\n"))")
    }
}
