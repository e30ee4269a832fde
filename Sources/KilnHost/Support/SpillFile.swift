import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// Append-only bytes kept out of memory: what a run records for every job, read back once when
/// the run ends. They go to an anonymous file in a directory (`.kiln/`; see
/// ``AnonymousFile/open(in:)``) through a 64 KiB buffer, and are read back at the offsets
/// ``append(_:)`` returned: going forward, through a 64 KiB window; one piece at a time when the
/// reader jumps back or far ahead. Without a directory, or when the file can't be made, they stay in memory.
///
/// Nothing is lost quietly: a failed write or read sets ``failed`` (and a read that failed gives
/// zeros), and the owner must then not trust what it read.
///
/// Threading: none of its own. Its owner's lock guards it while a run records; one thread reads
/// it afterwards.
final class SpillFile {
    static let bufferSize = 64 * 1024

    /// The file, or -1: the bytes are all in ``pending``.
    private var file: Int32
    /// How many bytes are in the file.
    private var written = 0
    /// Bytes appended after the file's (all of them, without a file).
    private var pending: [UInt8] = []
    /// The bytes of the file from ``windowStart`` (a sequential reader's).
    private var window: [UInt8] = []
    private var windowStart = 0
    /// Whether a write or read failed.
    private(set) var failed = false

    /// A store in an anonymous file in `directory` (in memory when `nil`, or when the file can't
    /// be made).
    init(directory: String?) {
        file = directory.flatMap(AnonymousFile.open(in:)) ?? -1
        if file >= 0 { pending.reserveCapacity(Self.bufferSize) }
    }

    /// A store in `descriptor`, an empty file of the caller's (closed with the store): a seam
    /// for tests, which hand it one that can't be read to see a failure said.
    init(descriptor: Int32) {
        file = descriptor
        pending.reserveCapacity(Self.bufferSize)
    }

    deinit {
        if file >= 0 { close(file) }
    }

    /// Whether the bytes are in a file.
    var isFileBacked: Bool { file >= 0 }

    /// How many bytes were appended.
    var count: Int { written + pending.count }

    /// Appends `bytes`; returns their offset. A piece never straddles what was written and what is
    /// pending.
    @discardableResult
    func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        if file >= 0, !failed, !pending.isEmpty, pending.count + bytes.count > Self.bufferSize { flush() }
        let offset = count
        pending.append(contentsOf: bytes)
        return offset
    }

    /// Appends a string's UTF-8 bytes; returns their offset.
    @discardableResult
    func append(utf8Of string: String) -> Int {
        var string = string
        return string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `count` bytes that `body` fills in (zeros until it does); returns their offset.
    @discardableResult
    func append(count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) -> Int {
        withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { bytes in
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            body(bytes)
            return append(UnsafeRawBufferPointer(bytes))
        }
    }

    /// Writes what is pending to the file. After a write fails, the rest stays in memory (the
    /// store says it failed, and its owner throws it all away).
    private func flush() {
        var done = 0
        while done < pending.count {
            let result = pending[done...].withUnsafeBytes {
                pwrite(file, $0.baseAddress, $0.count, off_t(written + done))
            }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                failed = true
                break
            }
            done += result
        }
        written += done
        pending.removeFirst(done)
    }

    /// Calls `body` with the `count` bytes at `offset` (from ``append(_:)``).
    func withBytes<Result>(at offset: Int, count: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if offset >= written {
            let start = offset - written
            guard start >= 0, start + count <= pending.count else { return zeros(count, body) }
            return pending.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
        }
        let inWindow = offset >= windowStart && offset + count <= windowStart + window.count
        // Ahead, within a window's length past it: a reader going forward (perhaps skipping
        // pieces it doesn't need) moves the window on to start here.
        let ahead = offset >= windowStart && offset < windowStart + window.count + Self.bufferSize
        if !inWindow, ahead || window.isEmpty {
            let size = min(max(Self.bufferSize, count), written - offset)
            window = [UInt8](repeating: 0, count: size)
            windowStart = offset
            if !readFile(into: &window, at: offset, count: size) { return zeros(count, body) }
        } else if !inWindow {
            // A jump: just these bytes.
            var piece = [UInt8](repeating: 0, count: count)
            if !readFile(into: &piece, at: offset, count: count) { return zeros(count, body) }
            return piece.withUnsafeBytes(body)
        }
        let start = offset - windowStart
        guard start + count <= window.count else { return zeros(count, body) }
        return window.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    private func readFile(into buffer: inout [UInt8], at offset: Int, count: Int) -> Bool {
        var done = 0
        while done < count {
            let result = buffer.withUnsafeMutableBytes {
                pread(file, $0.baseAddress! + done, count - done, off_t(offset + done))
            }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                failed = true
                return false
            }
            done += result
        }
        return true
    }

    private func zeros<Result>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        failed = true
        return [UInt8](repeating: 0, count: count).withUnsafeBytes(body)
    }
}
