#if canImport(Glibc)
    import Glibc
#endif

/// One pack file and its version-2 index (`objects/pack/pack-….idx` and `.pack`), mapped.
///
/// The index: a `\377tOc` header and version 2; a fan-out table of 256 counts (objects whose
/// first byte is at most N); the sorted ids; their CRCs; their 31-bit offsets, or with the top
/// bit set, positions in a table of 64-bit offsets. The pack: `PACK`, version, count, then each
/// object as a type-and-size header and zlib data, a delta naming its base by offset or by id.
///
/// Threading: immutable once made; any thread.
final class GitPack: Sendable {
    let path: String
    private let index: MappedFile
    private let pack: MappedFile
    private let count: Int

    /// The pack whose index is at `indexPath`; `nil` for one this reader doesn't know (version 1)
    /// or can't map.
    init?(indexPath: String) {
        guard let index = MappedFile(path: indexPath), index.bytes.count >= 8 + 1024 + 40 else { return nil }
        let raw = index.bytes
        guard raw.loadUnaligned(as: UInt32.self) == UInt32(0xff744f63).bigEndian, Self.be32(raw, 4) == 2 else {
            return nil
        }
        let count = Int(Self.be32(raw, 8 + 255 * 4))
        guard raw.count >= 8 + 1024 + count * 28 + 40 else { return nil }
        path = String(indexPath.dropLast(4)) + ".pack"
        guard let pack = MappedFile(path: path), pack.bytes.count >= 12 + 20,
            pack.bytes.starts(with: Array("PACK".utf8))
        else { return nil }
        self.index = index
        self.pack = pack
        self.count = count
    }

    private static func be32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Where the object `id` starts in the pack, if the pack holds it.
    func offset(of id: GitObjectID) -> Int? {
        let raw = index.bytes
        return id.withBytes { key -> Int? in
            let first = Int(key[0])
            var low = first == 0 ? 0 : Int(Self.be32(raw, 8 + (first - 1) * 4))
            var high = Int(Self.be32(raw, 8 + first * 4))
            guard low <= high, high <= count else { return nil }
            let ids = raw.baseAddress! + 8 + 1024
            while low < high {
                let middle = (low + high) / 2
                let order = memcmp(ids + middle * 20, key.baseAddress!, 20)
                if order == 0 {
                    let small = Self.be32(raw, 8 + 1024 + count * 24 + middle * 4)
                    guard small & 0x8000_0000 != 0 else { return Int(small) }
                    let large = 8 + 1024 + count * 28 + Int(small & 0x7fff_ffff) * 8
                    guard large + 8 <= raw.count else { return nil }
                    return Int(UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: large, as: UInt64.self)))
                }
                if order < 0 { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// An object's header in the pack.
    struct Entry {
        /// 1–4: commit, tree, blob, tag; 6: offset delta; 7: reference delta.
        var type: UInt8
        /// The inflated size (of the delta, for a delta).
        var size: Int
        /// Where the zlib data starts.
        var dataOffset: Int
        /// An offset delta's base.
        var baseOffset: Int = 0
        /// A reference delta's base.
        var baseID: GitObjectID?
    }

    /// The header of the object at `offset`.
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` when it runs past the pack's end.
    func entry(at offset: Int) throws(GitError) -> Entry {
        let raw = pack.bytes
        let end = raw.count - 20
        func damaged() -> GitError {
            GitError(code: .unsupportedRepository, message: "pack \(path) is damaged at \(offset)")
        }
        guard offset >= 12, offset < end else { throw damaged() }
        var position = offset
        var byte = raw[position]
        let type = (byte >> 4) & 7
        var size = Int(byte & 15)
        var shift = 4
        while byte & 0x80 != 0 {
            position += 1
            guard position < end, shift < 57 else { throw damaged() }
            byte = raw[position]
            size |= Int(byte & 0x7f) << shift
            shift += 7
        }
        position += 1
        var entry = Entry(type: type, size: size, dataOffset: position)
        if type == 6 {
            // A big-endian base-128 distance back, each continuation adding one (git's encoding).
            guard position < end else { throw damaged() }
            byte = raw[position]
            var distance = Int(byte & 0x7f)
            while byte & 0x80 != 0 {
                position += 1
                guard position < end, distance < Int.max >> 8 else { throw damaged() }
                byte = raw[position]
                distance = ((distance + 1) << 7) | Int(byte & 0x7f)
            }
            guard distance > 0, distance <= offset else { throw damaged() }
            entry.baseOffset = offset - distance
            entry.dataOffset = position + 1
        } else if type == 7 {
            guard position + 20 <= end else { throw damaged() }
            entry.baseID = GitObjectID(raw.baseAddress! + position)
            entry.dataOffset = position + 20
        }
        return entry
    }

    /// The `size` bytes the zlib stream at `offset` inflates to.
    func inflate(at offset: Int, size: Int) throws(GitError) -> [UInt8] {
        let raw = pack.bytes
        return try KilnGitFormat.inflate(
            UnsafeRawBufferPointer(rebasing: raw[offset..<(raw.count - 20)]),
            size: size,
            what: "pack \(path) at \(offset)"
        )
    }
}

/// Git's delta format: the base's size and the result's (base-128, little-endian), then
/// instructions — copy a range of the base, or insert the next 1–127 bytes.
enum GitDelta {
    /// The object `delta` makes of `base`.
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` when the delta doesn't fit the base.
    static func apply(_ delta: [UInt8], to base: [UInt8], what: @autoclosure () -> String) throws(GitError) -> [UInt8] {
        func damaged() -> GitError {
            GitError(code: .unsupportedRepository, message: "a delta of \(what()) is damaged")
        }
        var position = 0
        func size() throws(GitError) -> Int {
            var value = 0
            var shift = 0
            while true {
                guard position < delta.count, shift < 57 else { throw damaged() }
                let byte = delta[position]
                position += 1
                value |= Int(byte & 0x7f) << shift
                shift += 7
                if byte & 0x80 == 0 { return value }
            }
        }
        guard try size() == base.count else { throw damaged() }
        let resultSize = try size()
        var result: [UInt8] = []
        result.reserveCapacity(resultSize)
        while position < delta.count {
            let instruction = delta[position]
            position += 1
            if instruction & 0x80 != 0 {
                // Copy: which of four offset bytes and three size bytes follow, by the low 7 bits.
                var offset = 0
                var length = 0
                for bit in 0..<7 where instruction & (1 << bit) != 0 {
                    guard position < delta.count else { throw damaged() }
                    let byte = Int(delta[position])
                    position += 1
                    if bit < 4 { offset |= byte << (8 * bit) } else { length |= byte << (8 * (bit - 4)) }
                }
                if length == 0 { length = 0x10000 }
                guard offset + length <= base.count else { throw damaged() }
                result += base[offset..<(offset + length)]
            } else if instruction != 0 {
                let length = Int(instruction)
                guard position + length <= delta.count else { throw damaged() }
                result += delta[position..<(position + length)]
                position += length
            } else {
                throw damaged()
            }
        }
        guard result.count == resultSize else { throw damaged() }
        return result
    }
}
