import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `kiln` executable that `swift build --build-tests` puts beside the test bundle, run as a
/// child process with its output in files (so nothing it leaves behind can hold a pipe open).
///
/// Threading: a value type; its methods may run from any task.
struct KilnProcess: Sendable {
    /// How a finished `kiln` ended, and what it printed.
    struct Result: Sendable, CustomStringConvertible {
        /// The exit status, or `nil` if a signal killed it.
        var status: Int32?
        /// The signal that killed it, if one did.
        var signal: Int32?
        var standardOutput: String
        var standardError: String

        var description: String {
            "status \(status.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-")\n"
                + "--- stdout\n\(standardOutput)--- stderr\n\(standardError)"
        }
    }

    /// The executable's path.
    static func executable(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let testBinary = try #require(
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            "can't read /proc/self/exe",
            sourceLocation: sourceLocation
        )
        let path = (testBinary as NSString).deletingLastPathComponent + "/kiln"
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "the kiln executable is not built at \(path); run `swift build --build-tests` first",
            sourceLocation: sourceLocation
        )
        return path
    }

    /// Runs `kiln arguments` in `directory` and waits for it at most `seconds`.
    static func run(
        _ arguments: [String],
        in directory: String,
        within seconds: Double = 180,
        environment extra: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Result {
        let process = try start(arguments, in: directory, environment: extra, sourceLocation: sourceLocation)
        return try await process.wait(within: seconds, sourceLocation: sourceLocation)
    }

    /// Starts `kiln arguments` in `directory` with default signal dispositions and an empty
    /// signal mask (whatever the test runner has), standard input from /dev/null.
    static func start(
        _ arguments: [String],
        in directory: String,
        environment extra: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> KilnProcess {
        try start(program: try executable(sourceLocation: sourceLocation), arguments, in: directory, environment: extra)
    }

    /// ``start(_:in:environment:sourceLocation:)`` for another program (a peer such as go-task).
    static func start(
        program executable: String,
        _ arguments: [String],
        in directory: String,
        environment extra: [String: String] = [:]
    ) throws -> KilnProcess {
        let output = try TemporaryDirectory(prefix: "kiln-cli-output")
        let outputPath = output.path("stdout"), errorPath = output.path("stderr")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        // Glibc's posix_spawn_file_actions_addchdir_np isn't visible to Swift: a shell changes
        // directory and replaces itself with kiln (same process id, same signal settings).
        let shell = ["/bin/sh", "-c", #"cd -- "$1" || exit 127; shift; exec "$@""#, "sh", directory, executable]
        let argv: [UnsafeMutablePointer<CChar>?] = (shell + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "dumb"
        environment.merge(extra) { $1 }
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        guard status == 0 else {
            output.remove()
            throw SpawnError(message: "posix_spawn \(executable): \(String(cString: strerror(status)))")
        }
        return KilnProcess(pid: pid, output: OutputFiles(output))
    }

    /// The directory of the child's output, removed when the last copy of the process value goes
    /// (also when a test stops before it waits).
    ///
    /// Threading: immutable; any thread.
    private final class OutputFiles: Sendable {
        let directory: TemporaryDirectory
        init(_ directory: TemporaryDirectory) { self.directory = directory }
        func read(_ name: String) -> String? { directory.read(name) }
        deinit { directory.remove() }
    }

    /// The child's process id.
    let pid: pid_t
    private let output: OutputFiles

    /// What it has written to standard output so far (while it runs).
    var standardOutputSoFar: String { output.read("stdout") ?? "" }

    /// What it has written to standard error so far (while it runs).
    var standardErrorSoFar: String { output.read("stderr") ?? "" }

    /// Sends `signal` to `kiln` (only: not to its process group).
    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// Waits at most `seconds` for `kiln` to exit; kills it and fails if it doesn't.
    func wait(within seconds: Double, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result {
        var status: Int32 = 0
        let exited = await waitUntil(within: seconds) { waitpid(pid, &status, WNOHANG) == pid }
        if !exited {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            let result = readResult(status: status)
            Issue.record("kiln did not exit within \(seconds) s; killed it\n\(result)", sourceLocation: sourceLocation)
            throw SpawnError(message: "kiln did not exit within \(seconds) s")
        }
        return readResult(status: status)
    }

    private func readResult(status: Int32) -> Result {
        let signaled = (status & 0x7f) != 0
        return Result(
            status: signaled ? nil : (status >> 8) & 0xff,
            signal: signaled ? status & 0x7f : nil,
            standardOutput: output.read("stdout") ?? "",
            standardError: output.read("stderr") ?? ""
        )
    }
}

/// `kiln` could not be started or did not end.
struct SpawnError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Processes whose command line contains `marker` (zombies, which have none, excepted).
func processes(containing marker: String) -> [(pid: Int32, commandLine: String)] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    var found: [(Int32, String)] = []
    for entry in entries {
        guard let pid = Int32(entry), pid != getpid(),
            let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"), !data.isEmpty
        else { continue }
        let commandLine = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        if commandLine.contains(marker) { found.append((pid, commandLine)) }
    }
    return found
}

/// A copy of `Taskfiles/example` (without build products) in `directory`.
func copyExampleProject(to directory: TemporaryDirectory) throws -> String {
    let example = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Taskfiles/example").path
    let copy = directory.path("example")
    try FileManager.default.copyItem(atPath: example, toPath: copy)
    for product in ["build", "dist", ".kiln"] { try? FileManager.default.removeItem(atPath: copy + "/" + product) }
    return copy
}

/// Parses one JSON document.
func parseJSON(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
}
