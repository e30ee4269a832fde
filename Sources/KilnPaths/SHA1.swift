/// SHA-1 (FIPS 180-4), fed in pieces: git's object ids (a blob's id is the SHA-1 of
/// `blob <size>\0` and the file's bytes) and go-task's `sha1sum` template function. It names
/// content; it secures nothing. Git itself uses a collision-detecting SHA-1, whose digests differ
/// only for inputs built to collide.
///
/// Threading: a value type; a hasher belongs to one thread at a time.
public struct SHA1: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0
    )
    /// A block not yet full, `pendingCount` bytes of it used.
    private var pending: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var length: UInt64 = 0

    /// A hasher that has been fed nothing.
    public init() {}

    /// The 20-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA1()
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    /// Feeds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var next = bytes.baseAddress, !bytes.isEmpty else { return }
        var remaining = bytes.count
        length &+= UInt64(remaining)
        if pendingCount > 0 {
            let taken = min(64 - pendingCount, remaining)
            withUnsafeMutableBytes(of: &pending) {
                ($0.baseAddress! + pendingCount).copyMemory(from: next, byteCount: taken)
            }
            pendingCount += taken
            next += taken
            remaining -= taken
            guard pendingCount == 64 else { return }
            var block = pending
            withUnsafeBytes(of: &block) { compress($0.baseAddress!) }
            pendingCount = 0
        }
        while remaining >= 64 {
            compress(next)
            next += 64
            remaining -= 64
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: next, byteCount: remaining) }
            pendingCount = remaining
        }
    }

    /// The digest of everything fed: 20 bytes. The hasher is spent.
    public mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        // A 1 bit, zeros up to 56 bytes into a block, then the length in bits, big-endian.
        var padding = [UInt8](repeating: 0, count: pendingCount < 56 ? 64 - pendingCount : 128 - pendingCount)
        padding[0] = 0x80
        for index in 0..<8 { padding[padding.count - 1 - index] = UInt8(truncatingIfNeeded: bits >> (8 * index)) }
        padding.withUnsafeBytes { update($0) }
        return [state.0, state.1, state.2, state.3, state.4].flatMap { word in
            (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) }
        }
    }

    /// One 64-byte block at `block`.
    private mutating func compress(_ block: UnsafeRawPointer) {
        var words:
            (
                UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32,
                UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var (a, b, c, d, e) = state
        withUnsafeMutableBytes(of: &words) { raw in
            let w = raw.bindMemory(to: UInt32.self)
            for index in 0..<16 {
                w[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
            }
            /// Word `index` of the schedule, kept as a ring of 16.
            @inline(__always) func word(_ index: Int) -> UInt32 {
                if index < 16 { return w[index] }
                let mixed = w[(index - 3) & 15] ^ w[(index - 8) & 15] ^ w[(index - 14) & 15] ^ w[index & 15]
                let next = mixed << 1 | mixed >> 31
                w[index & 15] = next
                return next
            }
            @inline(__always) func round(_ f: UInt32, _ k: UInt32, _ word: UInt32) {
                let next = (a << 5 | a >> 27) &+ f &+ e &+ k &+ word
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, next)
            }
            // Four rounds of 20, each with its own function and constant.
            for index in 0..<20 { round(b & c | ~b & d, 0x5A82_7999, word(index)) }
            for index in 20..<40 { round(b ^ c ^ d, 0x6ED9_EBA1, word(index)) }
            for index in 40..<60 { round(b & c | b & d | c & d, 0x8F1B_BCDC, word(index)) }
            for index in 60..<80 { round(b ^ c ^ d, 0xCA62_C1D6, word(index)) }
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e)
    }
}
