// The compact binary form of kiln's own files (the Taskfile cache, the up-to-date snapshot):
// LEB128 integers, length-prefixed UTF-8 strings, fixed-width 64-bit words.

/// Appends values in a compact binary form: LEB128 integers, length-prefixed UTF-8 strings, and
/// a table so each distinct file path (repeated in every location) is written once.
///
/// Threading: a value type.
package struct BinaryWriter {
    package var bytes: [UInt8] = []
    private var strings: [String: Int] = [:]
    /// The strings ``writeShared(_:)`` wrote, by the position each is written as: what the
    /// writer's owner writes as a table ahead of the bytes (``BinaryReader/init(bytes:sharedStrings:)``).
    package private(set) var sharedStrings: [String] = []

    package init() {}

    package mutating func append(_ raw: [UInt8]) { bytes += raw }

    /// Makes room for `count` bytes in all, so a writer that knows its size grows no buffer.
    package mutating func reserve(_ count: Int) { bytes.reserveCapacity(count) }

    /// `value` zigzag-encoded: small magnitudes, negative or not, become small unsigned numbers.
    private static func zigzag(_ value: Int) -> UInt64 {
        UInt64(bitPattern: Int64(value)) << 1 ^ UInt64(bitPattern: Int64(value) >> 63)
    }

    /// How many bytes ``write(_:)-(Int)`` appends for `value`.
    package static func size(of value: Int) -> Int {
        var value = zigzag(value)
        var count = 1
        while value >= 0x80 {
            value >>= 7
            count += 1
        }
        return count
    }

    /// How many bytes ``write(_:)-(String)`` appends for `value`.
    package static func size(of value: String) -> Int {
        let count = value.utf8.count
        return size(of: count) + count
    }

    package mutating func write(_ value: Int) {
        var value = Self.zigzag(value)
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    package mutating func write(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Eight 64-bit words in a row, the bytes eight calls of `write(_: UInt64)` would append, in
    /// one append: each append costs about 100 instructions whatever its length.
    package mutating func write(
        words a: UInt64,
        _ b: UInt64,
        _ c: UInt64,
        _ d: UInt64,
        _ e: UInt64,
        _ f: UInt64,
        _ g: UInt64,
        _ h: UInt64
    ) {
        let words = (
            a.littleEndian, b.littleEndian, c.littleEndian, d.littleEndian, e.littleEndian, f.littleEndian,
            g.littleEndian, h.littleEndian
        )
        withUnsafeBytes(of: words) { bytes.append(contentsOf: $0) }
    }

    package mutating func write(_ value: Bool) { bytes.append(value ? 1 : 0) }

    package mutating func write(byte: UInt8) { bytes.append(byte) }

    /// A string, in full: its length, then its bytes, copied from the string's own storage (its
    /// `utf8` view, appended, costs three times as much: a snapshot writes tens of thousands).
    package mutating func write(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            write(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    /// A string that repeats (a file path), written as its position in ``sharedStrings``: any
    /// part of what is written can then be read alone, given the table.
    package mutating func writeShared(_ value: String) {
        if let index = strings[value] {
            write(index)
            return
        }
        strings[value] = sharedStrings.count
        write(sharedStrings.count)
        sharedStrings.append(value)
    }

    /// How many bytes ``write(key:source:)`` appends.
    package static func size(ofKey name: String, source: String?) -> Int {
        guard let source else { return size(of: name) }
        let count = name.utf8.count + 1 + source.utf8.count
        return size(of: count) + count
    }

    /// A key as ``write(_:)-(String)`` writes `name`, or `name` NUL `source` (a job key's
    /// stored form), without making the string.
    package mutating func write(key name: String, source: String?) {
        guard let source else {
            write(name)
            return
        }
        var (first, second) = (name, source)
        first.withUTF8 { first in
            second.withUTF8 { second in
                write(first.count + 1 + second.count)
                bytes.append(contentsOf: first)
                bytes.append(0)
                bytes.append(contentsOf: second)
            }
        }
    }

    package mutating func write(_ value: String?) {
        write(value != nil)
        if let value { write(value) }
    }
}

/// Reads what ``BinaryWriter`` wrote; every read returns `nil` on truncated or malformed input.
///
/// Threading: a value type.
package struct BinaryReader {
    package let bytes: [UInt8]
    package var offset = 0
    private var strings: [String] = []

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// A reader of `bytes` whose shared strings (``readSharedString()``) are `sharedStrings`,
    /// the table the writer's ``BinaryWriter/sharedStrings`` held.
    package init(bytes: [UInt8], sharedStrings: [String]) {
        self.bytes = bytes
        strings = sharedStrings
    }

    /// Reads shared strings from now on from `table` (read from the bytes before).
    package mutating func useSharedStrings(_ table: [String]) { strings = table }

    package mutating func readByte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func readBytes(count: Int) -> [UInt8]? {
        guard count >= 0, offset + count <= bytes.count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    package mutating func readInteger() -> Int? {
        // Most integers written are small (lengths, counts, positions below 64): one byte, read
        // without the loop. Half a million are read when a 10k-task project's cache and snapshot
        // are decoded.
        guard offset < bytes.count else { return nil }
        let first = bytes[offset]
        guard first >= 0x80 else {
            offset += 1
            return Self.unzigzag(UInt64(first))
        }
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return Self.unzigzag(value) }
            shift += 7
        }
        return nil
    }

    /// The integer a zigzag encoding stands for: 0, -1, 1, -2… for 0, 1, 2, 3…
    private static func unzigzag(_ value: UInt64) -> Int {
        Int(Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1))))
    }

    package mutating func readUInt64() -> UInt64? {
        guard offset + 8 <= bytes.count else { return nil }
        let value = bytes.withUnsafeBytes {
            UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        offset += 8
        return value
    }

    package mutating func readBool() -> Bool? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset] != 0
    }

    package mutating func readString() -> String? {
        guard let length = readInteger(), length >= 0, offset + length <= bytes.count else { return nil }
        let string = decodeString(at: offset, length: length)
        offset += length
        return string
    }

    /// The UTF-8 bytes at `start` as a string: from the buffer itself, not through an array
    /// slice (which costs a retain, a release and generic slicing per string: the Taskfile
    /// cache holds tens of thousands).
    private func decodeString(at start: Int, length: Int) -> String {
        bytes.withUnsafeBufferPointer { buffer in
            String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<start + length]), as: UTF8.self)
        }
    }

    /// A string written with ``BinaryWriter/writeShared(_:)``: its position in the table.
    package mutating func readSharedString() -> String? {
        guard let index = readInteger(), index >= 0, index < strings.count else { return nil }
        return strings[index]
    }

    package mutating func readOptionalString() -> String?? {
        guard let present = readBool() else { return nil }
        return present ? readString().map { Optional($0) } : .some(nil)
    }
}
