import Foundation

/// A fresh directory under the system's temporary directory, for one test. Remove it with
/// ``remove()`` (usually in a `defer`).
///
/// The path is resolved (no symbolic links), so it compares equal to what `getcwd` reports from
/// inside it.
///
/// Threading: a value type; its file operations may run from any thread.
public struct TemporaryDirectory: Sendable {
    /// The directory's absolute, resolved path.
    public let path: String

    /// Creates the directory.
    ///
    /// - Parameter prefix: The start of its name, to recognise it in `/tmp`.
    /// - Throws: `POSIXError` if it can't be made.
    public init(prefix: String = "kiln-test") throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let created else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard let resolved = realpath(created, nil) else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { free(resolved) }
        path = String(cString: resolved)
    }

    /// The absolute path of `relative` inside the directory.
    public func path(_ relative: String) -> String {
        path + "/" + relative
    }

    /// Writes a text file (creating its parent directories).
    ///
    /// - Throws: The file system's error.
    @discardableResult
    public func write(_ relative: String, _ text: String) throws -> String {
        let file = path(relative)
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Creates a directory (and its parents).
    ///
    /// - Throws: The file system's error.
    @discardableResult
    public func makeDirectory(_ relative: String) throws -> String {
        let directory = path(relative)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The text of a file in the directory, or `nil` if it can't be read.
    public func read(_ relative: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path(relative)) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether something exists at `relative`.
    public func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: path(relative))
    }

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Sets a file's (or directory's) modification time to `seconds` before now: old enough that a
/// status taken now isn't racy about it.
///
/// Threading: any thread.
public func setModificationTime(_ path: String, secondsAgo seconds: Double) throws {
    try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -seconds)], ofItemAtPath: path)
}
