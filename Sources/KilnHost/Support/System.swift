import CKilnHost

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

    /// One environment variable, or `nil`.
    public static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The running executable's absolute path (`/proc/self/exe`), or `nil`.
    public static var executablePath: String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { readlink("/proc/self/exe", $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
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
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            if written <= 0 { return }
            bytes = bytes.dropFirst(written)
        }
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

    /// Starts a detached thread running `body`.
    ///
    /// Threading: any thread.
    public static func startThread(_ body: @escaping @Sendable () -> Void) {
        final class Box {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let status = pthread_create(&thread, &attributes, { argument in
            guard let argument else { return nil }
            Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, box)
        precondition(status == 0, "pthread_create failed: \(status)")
    }
}
