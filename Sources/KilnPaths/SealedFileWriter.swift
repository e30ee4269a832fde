#if canImport(Glibc)
    import Glibc
#endif

/// Writes one of kiln's sealed files (its bytes, then ``FileChecksum``'s checksum of them) as it
/// is encoded, a buffer's worth at a time, to a temporary file beside its path that ``finish(_:)``
/// renames into place: a reader sees the old file or the whole new one, and a big file (the
/// snapshot of an `each:` task over 100k files, 14 MB) is never whole in memory.
///
/// The encoder writes into a ``BinaryWriter`` of its own and hands it to ``drain(_:)`` between
/// entries; the length of the whole is given at the start (the checksum begins with it).
///
/// Threading: one thread at a time (a class only so the encoder's drain closure can hold it).
package final class SealedFileWriter {
    private var checksum: FileChecksum.Running
    private let path: String
    private let temporary: String
    private var descriptor: Int32
    /// The bytes promised, and those written so far.
    private let count: Int
    private var written = 0
    /// The first error, once a write failed.
    private var failure: Int32 = 0
    /// How many bytes the writer holds before ``drain(_:)`` writes them.
    package let bufferSize: Int

    /// Opens the temporary file for a sealed file of `count` bytes (the checksum not counted)
    /// at `path`; `nil` when it can't be made, said on standard error as any of kiln's own
    /// files that can't be written.
    package init?(path: String, count: Int, mode: mode_t = 0o644, bufferSize: Int = 64 * 1024) {
        self.path = path
        temporary = path + ".\(getpid()).tmp"
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard descriptor >= 0 else {
            Files.noteUnwritten(path, errno)
            return nil
        }
        self.count = count
        self.bufferSize = bufferSize
        checksum = FileChecksum.Running(count: count)
    }

    /// A writer to encode into, with room for a buffer's worth and an entry more.
    package func makeBuffer() -> BinaryWriter {
        var writer = BinaryWriter()
        writer.reserve(bufferSize + 4096)
        return writer
    }

    deinit {
        // Not finished (an encoder that threw): nothing is put in place.
        if descriptor >= 0 {
            close(descriptor)
            unlink(temporary)
        }
    }

    /// Writes out what the writer holds once it is a buffer's worth, but for the last few bytes
    /// of a word the checksum hasn't taken yet.
    package func drain(_ writer: inout BinaryWriter) {
        guard writer.bytes.count >= bufferSize else { return }
        write(&writer, words: writer.bytes.count & ~7)
    }

    /// Writes the rest and the checksum, and renames the file into place. Returns whether it
    /// worked; when it didn't, nothing is left behind but a note on standard error.
    @discardableResult
    package func finish(_ writer: inout BinaryWriter) -> Bool {
        let words = writer.bytes.count & ~7
        write(&writer, words: words)
        let tail = writer.bytes
        let sum = tail.withUnsafeBytes { checksum.finish(tail: $0) }
        withUnsafeBytes(of: sum.littleEndian) { writer.bytes.append(contentsOf: $0) }
        let total = written + tail.count
        put(writer.bytes)
        writer.bytes.removeAll()
        close(descriptor)
        descriptor = -1
        // A length other than the one promised is the encoder's mistake: its checksum would be
        // wrong, and no reader would take the file.
        var failed = true
        if failure != 0 {
            Files.noteUnwritten(path, failure)
        } else if total != count {
            Files.noteUnwritten(
                path,
                reason: "\(total) bytes were encoded where \(count) were promised (a bug in kiln)"
            )
        } else if rename(temporary, path) != 0 {
            Files.noteUnwritten(path, errno)
        } else {
            failed = false
        }
        if failed { unlink(temporary) }
        return !failed
    }

    /// Checksums and writes the writer's first `words` bytes (a multiple of 8), keeping the rest.
    private func write(_ writer: inout BinaryWriter, words: Int) {
        guard words > 0 else { return }
        writer.bytes.withUnsafeBytes { raw in
            let chunk = UnsafeRawBufferPointer(rebasing: raw[..<words])
            checksum.add(words: chunk)
            if failure == 0 { put(chunk) }
        }
        written += words
        writer.bytes.removeFirst(words)
    }

    private func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { put($0) }
    }

    private func put(_ buffer: UnsafeRawBufferPointer) {
        if failure == 0 { failure = Files.writeAll(descriptor, buffer) }
    }
}
