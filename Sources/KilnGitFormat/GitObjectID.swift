import KilnPaths

/// A git object id (SHA-1, 20 bytes), as the index, trees and libgit2 hold it.
///
/// Threading: a value type.
public struct GitObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The 20 bytes, in order.
    var bytes: (UInt64, UInt64, UInt32)

    /// The id whose 20 bytes start at `raw`.
    package init(_ raw: UnsafeRawPointer) {
        bytes = (
            raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self)
        )
    }

    /// The id spelt by 40 hex digits (either case); `nil` for anything else.
    public init?<Digits: Collection<UInt8>>(hex digits: Digits) {
        guard digits.count == 40 else { return nil }
        var raw = [UInt8](repeating: 0, count: 20)
        var position = 0
        var high: UInt8?
        for character in digits {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                raw[position] = first << 4 | value
                position += 1
                high = nil
            } else {
                high = value
            }
        }
        self = raw.withUnsafeBytes { GitObjectID($0.baseAddress!) }
    }

    /// The id spelt by 40 hex digits; `nil` for anything else.
    public init?(hex text: String) {
        self.init(hex: text.utf8)
    }

    /// Calls `body` with the 20 bytes.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var copy = bytes
        return try withUnsafeBytes(of: &copy) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<20])) }
    }

    /// The first 16 bytes as two big-endian halves: a 128-bit prefix of the id, which prints as
    /// the id's first 32 hex digits.
    public var prefix128: (high: UInt64, low: UInt64) {
        (UInt64(bigEndian: bytes.0), UInt64(bigEndian: bytes.1))
    }

    /// 40 lowercase hex digits.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        return withBytes { raw in
            String(decoding: raw.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
        }
    }

    /// Whether two ids are the same 20 bytes.
    public static func == (left: GitObjectID, right: GitObjectID) -> Bool {
        left.bytes.0 == right.bytes.0 && left.bytes.1 == right.bytes.1 && left.bytes.2 == right.bytes.2
    }

    /// Feeds the 20 bytes to `hasher`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.0)
        hasher.combine(bytes.1)
        hasher.combine(bytes.2)
    }
}

extension GitObjectID {
    /// The id git gives a blob of `bytes` (`git hash-object --stdin`): the SHA-1 of
    /// `blob <count>\0` and the bytes.
    ///
    /// Threading: any thread.
    public static func blob(of bytes: UnsafeRawBufferPointer) -> GitObjectID {
        var hasher = SHA1()
        Array("blob \(bytes.count)\0".utf8).withUnsafeBytes { hasher.update($0) }
        hasher.update(bytes)
        return hasher.finalize().withUnsafeBytes { GitObjectID($0.baseAddress!) }
    }

    /// The blob id git gives the bytes of the regular file at `path` now (`git hash-object
    /// --no-filters`), read as ``FileContent/read(_:size:bytes:)`` reads any file kiln hashes;
    /// `nil` when it can't be read, isn't a regular file (a FIFO is never waited on), or changed
    /// size while it was read.
    ///
    /// Threading: any thread, concurrently.
    public static func blob(ofFileAt path: String) -> GitObjectID? {
        var hasher = SHA1()
        var expected = 0
        var total = 0
        do {
            try FileContent.read(
                path,
                size: { size in
                    expected = size
                    Array("blob \(size)\0".utf8).withUnsafeBytes { hasher.update($0) }
                },
                bytes: { piece in
                    hasher.update(piece)
                    total += piece.count
                }
            )
        } catch {
            return nil
        }
        guard total == expected else { return nil }
        return hasher.finalize().withUnsafeBytes { GitObjectID($0.baseAddress!) }
    }
}
