import CKilnHost
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// Process-level facts and output, without Foundation.
///
/// Threading: stateless; safe from any thread.
public enum System {
    /// The process environment as a dictionary.
    public static var environment: [String: String] {
        var result: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            cursor += 1
        }
        return result
    }

    /// Marks whether a run is in progress. While one is, an `exit()` called by a plugin ends
    /// kiln with status 70 and a message, never with the status it asked for: a build cut short
    /// is never reported as a success.
    ///
    /// Threading: any thread.
    public static func markRunInProgress(_ running: Bool) {
        ckiln_set_run_in_progress(running ? 1 : 0)
    }

    /// A private view that couldn't be set up (see ``spawn(_:showing:)``).
    ///
    /// Threading: a value type.
    public struct ViewFailure: Error, CustomStringConvertible {
        /// What failed, with the system's reason.
        public var description: String
    }

    /// Starts `argv` (this process's environment) in a mount namespace of its own in which each
    /// `target` file shows the content of its `source` (a bind mount visible to that process and
    /// its children only; the files on disk and every other process's view are unchanged, and
    /// nothing is left once they end, even after SIGKILL). Not root: in a user namespace too,
    /// mapping only this user. SIGINT and SIGQUIT are at their defaults in the child.
    ///
    /// Threading: any thread.
    public static func spawn(_ argv: [String], showing view: [(source: String, target: String)]) -> Result<
        pid_t, ViewFailure
    > {
        let arguments = argv.map { strdup($0) } + [nil]
        let sources = view.map { UnsafePointer(strdup($0.source)) } + [nil]
        let targets = view.map { UnsafePointer(strdup($0.target)) } + [nil]
        defer {
            for pointer in arguments { free(pointer) }
            for pointer in sources + targets { free(UnsafeMutablePointer(mutating: pointer)) }
        }
        var pid = pid_t()
        var step: Int32 = 0
        var index: Int32 = -1
        let error = ckiln_spawn_with_view(
            arguments[0],
            arguments,
            environ,
            sources,
            targets,
            Int32(view.count),
            &pid,
            &step,
            &index
        )
        guard error != 0 else { return .success(pid) }
        let reason = String(cString: strerror(error))
        let what =
            switch step {
            case 1:
                "can't make a private mount namespace (unshare: \(reason)); this system may not allow user namespaces"
            case 2: "can't map the user into a private namespace: \(reason)"
            case 3: "can't make the private namespace's mounts private: \(reason)"
            case 4 where index >= 0 && Int(index) < view.count:
                "can't show \(view[Int(index)].source) at \(view[Int(index)].target): \(reason)"
            case 5: "can't run \(argv[0]): \(reason)"
            default: "can't start \(argv[0]): \(reason)"
            }
        return .failure(ViewFailure(description: what))
    }

    /// One environment variable, or `nil`.
    public static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The running executable's absolute path (`/proc/self/exe`), or `nil`.
    public static var executablePath: String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes {
            readlink("/proc/self/exe", $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count)
        }
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    /// The directory of the running executable, or `nil`.
    public static var executableDirectory: String? {
        executablePath.map(Path.directory(of:))
    }

    /// The current directory.
    public static var currentDirectory: String { Path.currentDirectory }

    /// Writes `text` to standard error, whole.
    public static func writeError(_ text: String) {
        write(text, to: 2)
    }

    /// Writes `text` to a file descriptor, retrying short writes.
    public static func write(_ text: String, to descriptor: Int32) {
        _ = Array(text.utf8).withUnsafeBytes { Files.writeAll(descriptor, $0) }
    }

    /// Writes a whole file (created or truncated, mode 0644).
    ///
    /// - Throws: ``Files/ReadError`` naming the path and the system's reason.
    public static func writeFile(_ path: String, contents: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Files.ReadError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        write(contents, to: descriptor)
    }

    /// Starts a detached thread running `body` (``HostThread/start(_:)``: every signal blocked in
    /// it); stops kiln if the system can't start one.
    ///
    /// Threading: any thread.
    public static func startThread(_ body: @escaping @Sendable () -> Void) {
        precondition(HostThread.start(body), "kiln couldn't start a thread (pthread_create failed)")
    }
}
