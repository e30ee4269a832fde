#if canImport(Glibc)
    import Glibc
#endif

/// Small file-system reads with `errno`-based messages.
///
/// Threading: stateless.
public enum Files {
    /// A failure to read or write a file.
    ///
    /// Threading: a value type.
    public struct ReadError: Error, CustomStringConvertible {
        /// The file.
        public var path: String
        /// The system's reason.
        public var reason: String
        /// `path: reason`.
        public var description: String { "\(path): \(reason)" }

        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    /// The contents of a file kiln sealed with ``FileChecksum``, without the checksum; `nil` when
    /// it can't be read, when it is another version's (it doesn't start with `magic`), or when it
    /// is damaged — which is said on standard error, since the file is then ignored and written
    /// anew.
    package static func readSealed(_ path: String, magic: [UInt8]) -> [UInt8]? {
        guard let bytes = try? readBytes(path) else { return nil }
        return FileChecksum.opened(consume bytes, magic: magic, path: path)
    }

    /// ``readSealed(_:magic:)``, and the file, still open: it can be read again after the path is
    /// removed or replaced.
    package static func openSealed(_ path: String, magic: [UInt8]) -> (bytes: [UInt8], file: OpenFile)? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        let file = OpenFile(descriptor: descriptor)
        guard let bytes = try? readBytes(descriptor: descriptor, path: path, limit: maximumReadSize),
            let contents = FileChecksum.opened(consume bytes, magic: magic, path: path)
        else { return nil }
        return (contents, file)
    }

    /// Up to the first `count` bytes of a regular file, and whether that is all of it; `nil`
    /// when it can't be read. For a header, without reading (or checksumming) what follows it.
    package static func readPrefix(_ path: String, count: Int) -> (bytes: [UInt8], whole: Bool)? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(filled))
            }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if got == 0 { break }
            filled += got
        }
        bytes.removeLast(count - filled)
        return (bytes, filled < count)
    }

    /// The largest file ``readBytes(_:limit:)`` reads unless told otherwise: Taskfiles, caches,
    /// depfiles — none is anywhere near it.
    public static let maximumReadSize = 1 << 30

    /// The whole file as UTF-8 text.
    ///
    /// - Throws: ``ReadError`` naming the path and the system's reason.
    public static func readText(_ path: String) throws(ReadError) -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    /// The whole file.
    ///
    /// - Throws: ``ReadError`` naming the path and the system's reason.
    public static func readBytes(_ path: String, limit: Int = maximumReadSize) throws(ReadError) -> [UInt8] {
        // Non-blocking: opening a FIFO for reading would otherwise wait for a writer forever.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw ReadError(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        return try readBytes(descriptor: descriptor, path: path, limit: limit)
    }

    /// The whole of the file open at `descriptor` (read from where it is), which is `path`.
    private static func readBytes(descriptor: Int32, path: String, limit: Int) throws(ReadError) -> [UInt8] {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw ReadError(path: path, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(
                path: path,
                reason: "not a regular file (a FIFO, a device or a directory); kiln reads only regular files"
            )
        }
        guard info.st_size <= limit else {
            throw ReadError(path: path, reason: "\(info.st_size) bytes, over kiln's limit of \(limit) for this file")
        }
        let expected = max(0, Int(info.st_size))
        // Read straight into a buffer of the file's size (plus room to notice growth).
        var bytes = [UInt8](repeating: 0, count: expected + 1)
        var filled = 0
        while true {
            if filled == bytes.count {
                guard filled < limit else {
                    throw ReadError(path: path, reason: "grew past kiln's limit of \(limit) bytes while read")
                }
                bytes += [UInt8](repeating: 0, count: max(4096, bytes.count))
            }
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            filled += count
        }
        bytes.removeLast(bytes.count - filled)
        return bytes
    }

    /// Writes `bytes` to a temporary file beside `path` and renames it into place, so a reader
    /// sees the old file or the whole new one. Best effort: returns whether it worked.
    @discardableResult
    package static func writeAtomically(_ path: String, bytes: [UInt8], mode: mode_t = 0o644) -> Bool {
        let temporary = path + ".\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else {
            noteUnwritten(path, errno)
            return false
        }
        let failure = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
        let complete = failure == 0
        close(descriptor)
        guard complete, rename(temporary, path) == 0 else {
            noteUnwritten(path, failure != 0 ? failure : errno)
            unlink(temporary)
            return false
        }
        return true
    }

    /// Writes all of `buffer` to `descriptor`, again after an interruption; returns 0, or the
    /// error that stopped it (`EIO` for a write that wrote nothing).
    package static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) -> Int32 {
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0, errno == EINTR { continue }
            if written <= 0 { return written < 0 ? errno : EIO }
            offset += written
        }
        return 0
    }

    /// Says that one of kiln's own files couldn't be written: only an accelerator is lost (the
    /// next run does more work), but a full disk or a read-only `.kiln` is worth knowing.
    package static func noteUnwritten(_ path: String, _ error: Int32) {
        noteUnwritten(path, reason: String(cString: strerror(error)))
    }

    /// ``noteUnwritten(_:_:)`` for a reason that isn't an `errno`.
    package static func noteUnwritten(_ path: String, reason: String) {
        let note = Array(
            "kiln: warning: can't write \(path): \(reason); the next run does the work it would have saved\n".utf8
        )
        _ = note.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// When the file at `path` (links followed) was last modified; `nil` when it can't be read.
    package static func modificationTime(_ path: String) -> (seconds: Int, nanoseconds: Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec))
    }

    /// Whether something exists at `path`.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` is a directory.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

/// A file kept open for as long as something holds it, closed when released.
///
/// Threading: immutable; any thread (reads at an offset, `pread`, don't move a shared position).
package final class OpenFile: Sendable {
    /// The file's descriptor (close-on-exec).
    package let descriptor: Int32

    /// Takes over `descriptor`: it is closed when this is released.
    package init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// Fills `buffer` from `offset`; whether the file had that many bytes there.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
        var filled = 0
        while filled < buffer.count {
            let count = pread(descriptor, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + filled))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            filled += count
        }
        return true
    }
}
