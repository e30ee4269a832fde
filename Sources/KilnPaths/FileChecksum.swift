#if canImport(Glibc)
    import Glibc
#endif

/// The checksum every file kiln keeps under `.kiln/` ends with (the Taskfile cache, the
/// up-to-date snapshot, the hook plans): 8 bytes over everything before them, so a file damaged
/// by a crash, a full disk or a hand edit is recognised and ignored instead of trusted. It
/// guards against accidents, not an attacker who can write `.kiln/` (who can run commands
/// anyway): a 64-bit multiply-rotate hash over 8-byte words, several GB/s.
///
/// Threading: stateless; any thread.
public enum FileChecksum {
    /// The checksum's size in bytes.
    public static let size = 8

    /// The checksum of `bytes`.
    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var running = Running(count: bytes.count)
        let words = bytes.count & ~7
        running.add(words: UnsafeRawBufferPointer(rebasing: bytes[..<words]))
        return running.finish(tail: UnsafeRawBufferPointer(rebasing: bytes[words...]))
    }

    /// The checksum taken piece by piece, for a file written as it is encoded: ``of(_:)-(UnsafeRawBufferPointer)``
    /// of the pieces one after the other. Its length is known from the start.
    ///
    /// Threading: a value type.
    public struct Running: Sendable {
        private static let first: UInt64 = 0x9E37_79B1_85EB_CA87
        private static let second: UInt64 = 0xC2B2_AE3D_27D4_EB4F
        private var hash: UInt64

        /// Starts the checksum of `count` bytes in all.
        public init(count: Int) {
            hash = 0x27D4_EB2F_1656_67C5 ^ UInt64(count) &* Self.first
        }

        /// Adds the next bytes: a whole number of 8-byte words.
        public mutating func add(words bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count % 8 == 0, "the checksum takes whole words")
            var offset = 0
            while offset < bytes.count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                hash = ((hash ^ (word &* Self.second)) << 31 | (hash ^ (word &* Self.second)) >> 33) &* Self.first
                offset += 8
            }
        }

        /// The checksum, once the last bytes (fewer than 8) are added.
        public func finish(tail bytes: UnsafeRawBufferPointer) -> UInt64 {
            precondition(bytes.count < 8, "the tail is less than a word")
            var hash = hash
            var tail: UInt64 = 0
            for index in 0..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index)) }
            hash ^= tail &* Self.second
            // Final mix, so every input bit reaches every output bit.
            hash ^= hash >> 33
            hash &*= 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 33
            hash &*= 0xC4CE_B9FE_1A85_EC53
            return hash ^ hash >> 33
        }
    }

    /// The checksum of `bytes`.
    public static func of(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBytes(of)
    }

    /// Appends the checksum of `bytes` to them.
    public static func seal(_ bytes: inout [UInt8]) {
        let checksum = bytes.withUnsafeBytes(of)
        withUnsafeBytes(of: checksum.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// The contents of a file kiln sealed (`bytes`, read from `path`) without the checksum; `nil`
    /// when it is another version's (it doesn't start with `magic`) or damaged — which is said
    /// on standard error, since the file is then ignored and written anew.
    ///
    /// `bytes` is consumed: when the caller's array is its only reference, the checksum is cut
    /// off in place instead of the whole file being copied.
    public static func opened(_ bytes: consuming [UInt8], magic: [UInt8], path: String) -> [UInt8]? {
        guard bytes.starts(with: magic) else { return nil }
        guard unseal(&bytes) else {
            let note = Array(
                "kiln: warning: \(path) is damaged (its checksum doesn't match its contents); ignored, and written anew\n"
                    .utf8
            )
            _ = note.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
            return nil
        }
        return bytes
    }

    /// Removes the checksum from the end of `bytes` when it matches what comes before it;
    /// returns whether it did (`false`: the file is damaged, or too short to hold one).
    public static func unseal(_ bytes: inout [UInt8]) -> Bool {
        guard bytes.count >= size else { return false }
        let body = bytes.count - size
        let matches = bytes.withUnsafeBytes { raw in
            of(UnsafeRawBufferPointer(rebasing: raw[..<body]))
                == UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: body, as: UInt64.self))
        }
        guard matches else { return false }
        bytes.removeLast(size)
        return true
    }
}
