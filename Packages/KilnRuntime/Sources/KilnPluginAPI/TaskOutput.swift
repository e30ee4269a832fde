import Synchronization

/// A job's captured output (standard output and standard error together, in arrival order).
///
/// Threading: any member from any thread; guarded by its mutex.
public final class TaskOutput: Sendable {
    private let bytes = Mutex<[UInt8]>([])

    /// Creates an empty output.
    public init() {}

    /// Appends raw bytes.
    public func append<Bytes: Sequence<UInt8>>(_ data: Bytes) {
        bytes.withLock { $0.append(contentsOf: data) }
    }

    /// Appends a line of text (a newline is added).
    public func write(line: String) {
        append(Array(line.utf8) + [0x0A])
    }

    /// Everything so far, decoded as UTF-8 (invalid bytes replaced).
    public var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Whether nothing was written.
    public var isEmpty: Bool { bytes.withLock { $0.isEmpty } }

    /// The last `count` lines.
    public func tail(lines count: Int) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let trimmed = lines.last == "" ? lines.dropLast() : lines[...]
        return trimmed.suffix(count).joined(separator: "\n")
    }
}
