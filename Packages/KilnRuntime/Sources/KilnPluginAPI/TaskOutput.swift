import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a job printed: standard output and error together, in order.
///
/// Memory stays bounded whatever a job prints: the first ``memoryLimit`` bytes are kept in
/// memory; past them, when the output was made with a spill directory, everything goes to an
/// anonymous file there (`O_TMPFILE`: never visible, gone when the output is), and only the first
/// ``memoryLimit`` bytes and the last ``tailSize`` stay in memory — enough for ``text(limit:)``
/// and ``tail(lines:)``. ``forEachChunk(_:)`` reads it all back a piece at a time.
///
/// Threading: any thread; guarded by its mutex. Appends from one thread at a time keep their order.
public final class TaskOutput: Sendable {
    /// How much output is kept in memory before it spills to a file.
    public static let memoryLimit = 1 << 20
    /// How much of the end of a spilled output stays in memory.
    public static let tailSize = 64 << 10

    private struct State {
        /// The first bytes (all of them, until the output spills).
        var head: [UInt8] = []
        /// The spill file, or -1.
        var file: Int32 = -1
        /// Bytes in the spill file (everything, once spilled).
        var spilled = 0
        /// The last bytes, once spilled.
        var recent: [UInt8] = []
    }
    private let state = Mutex(State())
    private let spillDirectory: String?

    /// Creates an empty output.
    ///
    /// - Parameter spillDirectory: Where output past ``memoryLimit`` goes (an anonymous file);
    ///   `nil` keeps it all in memory.
    public init(spillDirectory: String? = nil) {
        self.spillDirectory = spillDirectory
    }

    deinit {
        state.withLock { state in
            if state.file >= 0 { close(state.file) }
        }
    }

    /// Appends raw bytes.
    public func append<Bytes: Sequence<UInt8>>(_ data: Bytes) {
        state.withLock { state in
            if state.file < 0 {
                state.head.append(contentsOf: data)
                guard state.head.count > Self.memoryLimit, let file = openSpillFile() else { return }
                // Spill: everything so far to the file; memory keeps the first bytes and the last.
                state.file = file
                guard Self.write(state.head[...], to: file) else {
                    close(file)
                    state.file = -1
                    return
                }
                state.spilled = state.head.count
                state.recent = Array(state.head.suffix(Self.tailSize))
                state.head.removeSubrange(Self.memoryLimit...)
                return
            }
            let bytes = Array(data)
            if Self.write(bytes[...], to: state.file) { state.spilled += bytes.count }
            state.recent.append(contentsOf: bytes)
            if state.recent.count > 2 * Self.tailSize { state.recent.removeFirst(state.recent.count - Self.tailSize) }
        }
    }

    /// Appends a line of text (a newline is added).
    public func write(line: String) {
        append(Array(line.utf8) + [0x0A])
    }

    /// Everything, decoded as UTF-8 (invalid bytes replaced). For a spilled output this reads
    /// the whole file into memory: reporters use ``forEachChunk(_:)`` or ``text(limit:)``.
    public var text: String {
        var bytes: [UInt8] = []
        forEachBytes { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Everything when it is at most `limit` bytes; otherwise its beginning, a line saying how
    /// many bytes were left out, and its end.
    public func text(limit: Int) -> String {
        state.withLock { state in
            let total = state.file >= 0 ? state.spilled : state.head.count
            guard total > limit else {
                if state.file < 0 { return String(decoding: state.head, as: UTF8.self) }
                return nil
            }
            let end = state.file >= 0 ? state.recent.suffix(limit / 2) : state.head.suffix(limit / 2)
            let start = state.head.prefix(limit / 2)
            return String(decoding: start, as: UTF8.self)
                + "\n… [\(total - start.count - end.count) bytes of output left out] …\n"
                + String(decoding: end, as: UTF8.self)
        } ?? text
    }

    /// Calls `body` with the output as text, a piece at a time (never split inside a character),
    /// reading a spilled output back from its file.
    public func forEachChunk(_ body: (String) -> Void) {
        var pending: [UInt8] = []
        forEachBytes { bytes in
            pending += bytes
            // Hold back an incomplete UTF-8 sequence at the end for the next piece: find the
            // last character's first byte, and whether all of its bytes are here.
            var cut = pending.count
            var lead = pending.count - 1
            while lead > 0, pending.count - lead < 4, pending[lead] & 0xC0 == 0x80 { lead -= 1 }
            if lead >= 0 {
                let first = pending[lead]
                let length = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : first >= 0xC0 ? 2 : 1
                if pending.count - lead < length { cut = lead }
            }
            body(String(decoding: pending[..<cut], as: UTF8.self))
            pending.removeSubrange(..<cut)
        }
        if !pending.isEmpty { body(String(decoding: pending, as: UTF8.self)) }
    }

    /// Whether nothing was written.
    public var isEmpty: Bool { byteCount == 0 }

    /// How many bytes were written.
    public var byteCount: Int { state.withLock { $0.file >= 0 ? $0.spilled : $0.head.count } }

    /// Whether the output went to a file (it passed ``memoryLimit``).
    public var isSpilled: Bool { state.withLock { $0.file >= 0 } }

    /// The last `count` lines.
    public func tail(lines count: Int) -> String {
        let end = state.withLock { $0.file >= 0 ? $0.recent : $0.head }
        let lines = String(decoding: end, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let trimmed = lines.last == "" ? lines.dropLast() : lines[...]
        return trimmed.suffix(count).joined(separator: "\n")
    }

    // MARK: - The spill file

    private func openSpillFile() -> Int32? {
        spillDirectory.flatMap(AnonymousFile.open(in:))
    }

    private static func write(_ bytes: ArraySlice<UInt8>, to file: Int32) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Calls `body` with the raw bytes, a piece at a time, reading a spilled output back from its
    /// file.
    public func forEachBytes(_ body: ([UInt8]) -> Void) {
        let (file, size, head) = state.withLock { ($0.file, $0.spilled, $0.head) }
        guard file >= 0 else {
            body(head)
            return
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset = 0
        while offset < size {
            let count = buffer.withUnsafeMutableBytes {
                pread(file, $0.baseAddress, min($0.count, size - offset), off_t(offset))
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            body(Array(buffer[0..<count]))
            offset += count
        }
    }
}
