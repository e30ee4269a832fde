#if canImport(Glibc)
    import Glibc
#endif

/// The git index (`.git/index`, or `$GIT_INDEX_FILE`) read directly, as git reads it: versions
/// 2, 3 and 4 (prefix-compressed paths), and the cache-tree extension, which says which
/// directories the index holds exactly as a known tree.
///
/// libgit2 reads the index too, but verifies its SHA-1 trailer and builds a hash map of every
/// entry, about 60 ms for 100k files on a slow machine; this is one pass over the mapped bytes
/// (about 8 ms decoding every entry, 1.5 ms only finding where each starts, ``Decoding``), and
/// lookups are binary searches of the sorted entries. The trailer is not checked: git writes the
/// index to a lock file and renames it into place, so a reader never sees half of one.
///
/// Threading: immutable once read; every member from any thread.
public final class GitIndex: Sendable {
    /// One entry: a path at one merge stage, with the `stat` data git recorded for it.
    ///
    /// Threading: a value type.
    public struct Entry: Sendable {
        /// Status-change time, seconds and nanoseconds.
        public var changed: (seconds: UInt32, nanoseconds: UInt32)
        /// Modification time, seconds and nanoseconds.
        public var modified: (seconds: UInt32, nanoseconds: UInt32)
        /// Inode number (truncated to 32 bits, as git stores it).
        public var inode: UInt32
        /// `0o100644`, `0o100755`, `0o120000` (symbolic link) or `0o160000` (submodule).
        public var mode: UInt32
        /// Size in bytes (truncated to 32 bits).
        public var size: UInt32
        /// The staged content's blob id (a commit id for a submodule).
        public var id: GitObjectID
        package var flags: UInt16
        package var extendedFlags: UInt16
        /// Where the path starts in the index's names (``GitIndex/withNames(_:)``), NUL-terminated.
        package var nameStart: UInt32
        package var nameLength: UInt32
        /// The length of the path's directory, its last `/` included (0 at the top level).
        package var directoryLength: UInt32

        /// 0, or 1–3 for the sides of a conflict.
        public var stage: Int { Int((flags >> 12) & 3) }
        /// Sparse checkout: git doesn't look at the working tree's file.
        public var skipsWorktree: Bool { extendedFlags & 0x4000 != 0 }
        /// Added with `git add -N`: in the index without content.
        public var isIntentToAdd: Bool { extendedFlags & 0x2000 != 0 }
    }

    /// A directory of the cache-tree extension: the tree id the index holds for it, when valid.
    ///
    /// Threading: a value type.
    public struct CacheTree: Sendable {
        /// The tree id, or `nil` when an entry below changed since it was computed.
        public var id: GitObjectID?
        /// Subdirectories, by name.
        public var children: [String: CacheTree]
    }

    /// When entries are decoded.
    public enum Decoding: Sendable {
        /// All at once while reading: for callers that visit every entry (the working-tree status).
        case upFront
        /// Each when asked for: reading only finds where each starts, so a caller that looks at a
        /// few (the staged changes, guided by the cache-tree) doesn't pay for 100k. A version-4
        /// index, whose paths build on each other, is decoded up front all the same.
        case onDemand
    }

    /// The entries of an index, in its order: decoded, or decoded from the mapped file when read.
    ///
    /// Threading: immutable; any thread.
    public struct Entries: RandomAccessCollection, Sendable {
        fileprivate let decoded: [Entry]
        /// With ``Decoding/onDemand``, where each entry starts in the file.
        fileprivate let offsets: [UInt32]
        fileprivate let file: MappedFile?

        /// 0.
        public var startIndex: Int { 0 }
        /// The number of entries.
        public var endIndex: Int { offsets.isEmpty ? decoded.count : offsets.count }

        /// The entry at `position`.
        public subscript(position: Int) -> Entry {
            offsets.isEmpty ? decoded[position] : GitIndex.entry(in: file!.bytes, at: Int(offsets[position]))
        }
    }

    /// The entries, sorted by path (then stage), as git keeps them.
    public let entries: Entries
    /// A version-4 index's paths, NUL-terminated, back to back; empty for versions 2 and 3,
    /// whose entries' paths point into the mapped file.
    private let decodedNames: [UInt8]
    /// The index file, mapped while the index lives (git replaces an index by renaming a new
    /// file over it, so the mapping never changes under us); `nil` for a missing file.
    private let file: MappedFile?
    /// The top of the cache-tree extension, if the index has one.
    public let cacheTree: CacheTree?
    /// The index file's modification time (ns): an entry modified at or after it may have changed
    /// without its `stat` data showing it (git's "racily clean" entries).
    public let modified: Int64
    /// The index file read.
    public let path: String

    /// Reads the index file at `path`; a missing file is an empty index (a repository where
    /// nothing was ever added).
    ///
    /// - Parameter decoding: When entries are decoded: all now, or each when asked for.
    /// - Throws: ``GitError`` `.unsupportedIndex` for a format this reader doesn't know (a split
    ///   index, another version, a SHA-256 repository): use libgit2 then. `.failed` when the file
    ///   can't be read or is damaged.
    public init(path: String, decoding: Decoding = .upFront) throws(GitError) {
        self.path = path
        guard let file = MappedFile(path: path) else {
            guard errno == ENOENT else {
                throw GitError(
                    code: .failed,
                    message: "can't read the git index \(path): \(String(cString: strerror(errno)))"
                )
            }
            entries = Entries(decoded: [], offsets: [], file: nil)
            decodedNames = []
            cacheTree = nil
            modified = 0
            self.file = nil
            return
        }
        self.file = file
        modified = file.modified
        guard file.bytes.count > 0 else {
            throw GitError(code: .failed, message: "the git index \(path) is empty; 'git status' rewrites it")
        }
        guard file.bytes.count < Int(UInt32.max) else {
            throw GitError(code: .unsupportedIndex, message: "the git index \(path) is over 4 GiB")
        }
        let parsed = try Self.parse(file.bytes, path: path)
        decodedNames = parsed.names
        cacheTree = parsed.cacheTree
        if !parsed.offsets.isEmpty, decoding == .upFront {
            entries = Entries(
                decoded: parsed.offsets.map { Self.entry(in: file.bytes, at: Int($0)) },
                offsets: [],
                file: file
            )
        } else {
            entries = Entries(decoded: parsed.entries, offsets: parsed.offsets, file: file)
        }
    }

    /// Calls `body` with the bytes entries' paths point into (``Entry/nameStart``).
    package func withNames<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if decodedNames.isEmpty, let file { return body(file.bytes) }
        return decodedNames.withUnsafeBytes(body)
    }

    private static func be32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    private static func be16(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    /// The entry whose 62 (or 64) byte header starts at `header`, its path at `nameStart` in
    /// `names`, `nameLength` bytes.
    private static func entry(
        _ raw: UnsafeRawBufferPointer,
        header: Int,
        flags: UInt16,
        extended: UInt16,
        names: UnsafeRawBufferPointer,
        nameStart: Int,
        nameLength: Int
    ) -> Entry {
        var slash = nameStart + nameLength - 1
        while slash >= nameStart, names[slash] != UInt8(ascii: "/") { slash -= 1 }
        return Entry(
            changed: (be32(raw, header), be32(raw, header + 4)),
            modified: (be32(raw, header + 8), be32(raw, header + 12)),
            inode: be32(raw, header + 20),
            mode: be32(raw, header + 24),
            size: be32(raw, header + 36),
            id: GitObjectID(raw.baseAddress! + header + 40),
            flags: flags,
            extendedFlags: extended,
            nameStart: UInt32(nameStart),
            nameLength: UInt32(nameLength),
            directoryLength: UInt32(slash - nameStart + 1)
        )
    }

    /// A version 2 or 3 entry at `offset` of the file, which ``parse(_:path:)`` checked.
    fileprivate static func entry(in raw: UnsafeRawBufferPointer, at offset: Int) -> Entry {
        let flags = be16(raw, offset + 60)
        let extended: UInt16 = flags & 0x4000 != 0 ? be16(raw, offset + 62) : 0
        let nameStart = offset + (flags & 0x4000 != 0 ? 64 : 62)
        var nameLength = Int(flags & 0xfff)
        if nameLength == 0xfff {
            nameLength = strlen(raw.baseAddress!.advanced(by: nameStart).assumingMemoryBound(to: CChar.self))
        }
        return entry(
            raw,
            header: offset,
            flags: flags,
            extended: extended,
            names: raw,
            nameStart: nameStart,
            nameLength: nameLength
        )
    }

    /// One pass over the file: for versions 2 and 3, where each entry starts (each checked to lie
    /// inside the file); for version 4, the entries decoded with their paths. Then the extensions.
    private static func parse(
        _ raw: UnsafeRawBufferPointer,
        path: String
    ) throws(GitError) -> (offsets: [UInt32], entries: [Entry], names: [UInt8], cacheTree: CacheTree?) {
        func damaged(_ what: String) -> GitError {
            GitError(code: .failed, message: "the git index \(path) is damaged (\(what)); 'git status' rewrites it")
        }
        let hashSize = 20
        guard raw.count >= 12 + hashSize, raw.starts(with: Array("DIRC".utf8)) else { throw damaged("no DIRC header") }
        let version = be32(raw, 4)
        guard (2...4).contains(version) else {
            throw GitError(code: .unsupportedIndex, message: "the git index \(path) is version \(version)")
        }
        let count = Int(be32(raw, 8))
        let end = raw.count - hashSize
        var offsets: [UInt32] = []
        var entries: [Entry] = []
        var names: [UInt8] = []
        if version == 4 {
            entries.reserveCapacity(count)
            names.reserveCapacity(raw.count * 2)
        } else {
            offsets.reserveCapacity(count)
        }
        var previous: [UInt8] = []
        var offset = 12
        for _ in 0..<count {
            guard offset + 62 <= end else { throw damaged("entries run past the end") }
            let flags = be16(raw, offset + 60)
            var headerLength = 62
            var extended: UInt16 = 0
            if flags & 0x4000 != 0 {
                guard version >= 3, offset + 64 <= end else { throw damaged("extended flags in a version 2 index") }
                extended = be16(raw, offset + 62)
                headerLength = 64
            }
            let nameOffset = offset + headerLength
            if version == 4 {
                // A varint: how many bytes of the previous path to drop; then the rest, NUL-terminated.
                var position = nameOffset
                guard position < end else { throw damaged("a path runs past the end") }
                var byte = raw[position]
                var drop = Int(byte & 0x7f)
                while byte & 0x80 != 0 {
                    position += 1
                    guard position < end else { throw damaged("a path runs past the end") }
                    byte = raw[position]
                    drop = ((drop + 1) << 7) | Int(byte & 0x7f)
                }
                position += 1
                guard drop <= previous.count else { throw damaged("a path drops more than its predecessor has") }
                var suffixEnd = position
                while suffixEnd < end, raw[suffixEnd] != 0 { suffixEnd += 1 }
                guard suffixEnd < end else { throw damaged("a path runs past the end") }
                previous.removeLast(drop)
                previous.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position..<suffixEnd]))
                let nameStart = names.count
                names.append(contentsOf: previous)
                names.append(0)
                let entry = names.withUnsafeBytes { buffer in
                    Self.entry(
                        raw,
                        header: offset,
                        flags: flags,
                        extended: extended,
                        names: buffer,
                        nameStart: nameStart,
                        nameLength: previous.count
                    )
                }
                entries.append(entry)
                offset = suffixEnd + 1
            } else {
                var nameEnd = nameOffset + Int(flags & 0xfff)
                if flags & 0xfff == 0xfff {  // 4095 or longer: find the NUL
                    while nameEnd < end, raw[nameEnd] != 0 { nameEnd += 1 }
                }
                // The entry is padded with 1–8 NULs to a multiple of 8 bytes: its path ends in one.
                guard nameEnd < end, raw[nameEnd] == 0 else { throw damaged("a path runs past the end") }
                offsets.append(UInt32(offset))
                offset += (headerLength + (nameEnd - nameOffset) + 8) & ~7
            }
        }
        // Extensions: a four-letter signature, a 32-bit size, the data.
        var cacheTree: CacheTree?
        while offset + 8 <= end {
            let signature = String(decoding: UnsafeRawBufferPointer(rebasing: raw[offset..<offset + 4]), as: UTF8.self)
            let size = Int(be32(raw, offset + 4))
            let data = offset + 8
            guard data + size <= end else { throw damaged("extension \(signature) runs past the end") }
            switch signature {
            case "TREE":
                var position = data
                cacheTree = Self.parseCacheTree(raw, at: &position, end: data + size)
            case "link":
                throw GitError(code: .unsupportedIndex, message: "the git index \(path) is split (core.splitIndex)")
            default:
                // Optional extensions start with an upper-case letter; others must be understood.
                guard let first = signature.utf8.first, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) else {
                    throw GitError(code: .unsupportedIndex, message: "the git index \(path) has extension \(signature)")
                }
            }
            offset = data + size
        }
        return (offsets, entries, names, cacheTree)
    }

    /// One cache-tree node and, recursively, its subtrees: `NAME\0ENTRIES SUBTREES\n[ID]`, the
    /// id present only when ENTRIES isn't -1.
    private static func parseCacheTree(_ raw: UnsafeRawBufferPointer, at position: inout Int, end: Int) -> CacheTree? {
        var nameEnd = position
        while nameEnd < end, raw[nameEnd] != 0 { nameEnd += 1 }
        guard nameEnd < end else { return nil }
        position = nameEnd + 1
        func number() -> Int? {
            var negative = false
            var value = 0
            var digits = 0
            if position < end, raw[position] == UInt8(ascii: "-") {
                negative = true
                position += 1
            }
            while position < end, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(raw[position]) {
                value = value * 10 + Int(raw[position] - UInt8(ascii: "0"))
                position += 1
                digits += 1
            }
            guard digits > 0, position < end else { return nil }
            position += 1  // the space or newline after it
            return negative ? -value : value
        }
        guard let entryCount = number(), let subtreeCount = number() else { return nil }
        var id: GitObjectID?
        if entryCount >= 0 {
            guard position + 20 <= end else { return nil }
            id = GitObjectID(raw.baseAddress! + position)
            position += 20
        }
        var children: [String: CacheTree] = [:]
        for _ in 0..<subtreeCount {
            let childName = position
            var childNameEnd = childName
            while childNameEnd < end, raw[childNameEnd] != 0 { childNameEnd += 1 }
            guard let child = parseCacheTree(raw, at: &position, end: end) else { return nil }
            children[String(decoding: UnsafeRawBufferPointer(rebasing: raw[childName..<childNameEnd]), as: UTF8.self)] =
                child
        }
        return CacheTree(id: id, children: children)
    }

    // MARK: Paths

    /// An entry's path.
    public func path(of entry: Entry) -> String {
        withNames { buffer in
            String(
                decoding: UnsafeRawBufferPointer(
                    rebasing: buffer[Int(entry.nameStart)..<Int(entry.nameStart + entry.nameLength)]
                ),
                as: UTF8.self
            )
        }
    }

    /// Calls `body` with an entry's path as NUL-terminated bytes (valid only inside `body`).
    package func withPath<Result>(of entry: Entry, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        withNames { raw in body(raw.baseAddress!.advanced(by: Int(entry.nameStart)).assumingMemoryBound(to: CChar.self))
        }
    }

    /// Compares an entry's path with `key` (bytes), as git orders paths (bytewise).
    private func compare(_ entry: Entry, _ key: UnsafeRawBufferPointer, prefixOnly: Bool) -> Int32 {
        withNames { raw in
            let length = Int(entry.nameLength)
            let common = min(length, key.count)
            let order = common == 0 ? 0 : memcmp(raw.baseAddress! + Int(entry.nameStart), key.baseAddress!, common)
            if order != 0 { return order }
            if prefixOnly, length >= key.count { return 0 }
            return length < key.count ? -1 : (length > key.count ? 1 : 0)
        }
    }

    /// The first position whose path is not before `key` (with `prefixOnly`, the first whose path
    /// doesn't sort before the paths starting with `key`), searching `range`.
    private func lowerBound(
        _ key: UnsafeRawBufferPointer,
        in range: Range<Int>,
        prefixOnly: Bool = false,
        after: Bool = false
    ) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let middle = (low + high) / 2
            let order = compare(entries[middle], key, prefixOnly: prefixOnly)
            if order < 0 || (after && order == 0) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The positions of the entries whose paths start with `prefix` (a directory, with its `/`).
    public func range(ofPrefix prefix: String, in range: Range<Int>? = nil) -> Range<Int> {
        var prefix = prefix
        let searched = range ?? entries.indices
        return prefix.withUTF8 { key in
            let raw = UnsafeRawBufferPointer(key)
            let low = lowerBound(raw, in: searched, prefixOnly: true)
            let high = lowerBound(raw, in: low..<searched.upperBound, prefixOnly: true, after: true)
            return low..<high
        }
    }

    /// The position of the stage-0 entry (or the first conflict stage) for `path`, if any.
    public func position(of path: String) -> Int? {
        var path = path
        return path.withUTF8 { key in
            let raw = UnsafeRawBufferPointer(key)
            let low = lowerBound(raw, in: entries.indices)
            return low < entries.count && compare(entries[low], raw, prefixOnly: false) == 0 ? low : nil
        }
    }

    /// The entry for `path` at stage 0, if the index has one.
    public func entry(for path: String) -> Entry? {
        position(of: path).map { entries[$0] }.flatMap { $0.stage == 0 ? $0 : nil }
    }

    /// The component of an entry's path that starts after `prefixLength` bytes: its length, and
    /// whether a `/` follows it (a directory) or it ends the path (a file).
    package func component(of entry: Entry, after prefixLength: Int) -> (length: Int, isDirectory: Bool) {
        withNames { raw in
            let start = raw.baseAddress! + Int(entry.nameStart) + prefixLength
            let remaining = Int(entry.nameLength) - prefixLength
            if let slash = memchr(start, Int32(UInt8(ascii: "/")), remaining) {
                return (start.distance(to: UnsafeRawPointer(slash)), true)
            }
            return (remaining, false)
        }
    }

    /// `count` bytes of an entry's path from `start`, as a string.
    package func pathBytes(of entry: Entry, from start: Int, count: Int) -> String {
        withNames { buffer in
            let base = Int(entry.nameStart) + start
            return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[base..<base + count]), as: UTF8.self)
        }
    }
}
