import KilnPaths

/// What a run recorded for every job, kept out of memory (see ``SpillFile``) until the snapshot
/// is written: the jobs' keys, and the paths they watched (an `each:` task over 100k files
/// recorded 8.8 MB of paths and 3.2 MB of keys, held until the run ended).
///
/// A key is the lengths of its task's name and of its file (`UInt32`s, little-endian; the file's
/// is `UInt32.max` for a plain task's job), then their bytes. A path is a fixed record of 80
/// bytes, its string in a store of its own:
///
/// | bytes | field |
/// | --- | --- |
/// | 0 | kind |
/// | 4–7 | the path's length in bytes |
/// | 8–47 | the status: device, inode, size, modified, changed |
/// | 48–63 | the hash: high, low |
/// | 64–71 | when it was seen |
/// | 72–79 | where the path's bytes start in the string store |
///
/// Threading: as ``SpillFile``: its owner's lock guards it.
final class RecordSpill {
    private static let recordSize = 80
    private let records: SpillFile
    private let strings: SpillFile
    private let keys: SpillFile

    /// A spill in `directory` (in memory when `nil`).
    init(directory: String?) {
        records = SpillFile(directory: directory)
        strings = SpillFile(directory: directory)
        keys = SpillFile(directory: directory)
    }

    /// How many paths were appended.
    var count: Int { records.count / Self.recordSize }

    /// Whether reading back what was appended failed (what was read can't be trusted).
    var failed: Bool { records.failed || strings.failed || keys.failed }

    /// Appends `key`; returns where it is, for ``key(at:)``.
    func append(_ key: JobKey) -> Int {
        var task = key.task
        var source = key.source ?? ""
        let sourceLength = key.source == nil ? UInt32.max : UInt32(truncatingIfNeeded: source.utf8.count)
        return task.withUTF8 { task in
            source.withUTF8 { source in
                keys.append(count: 8 + task.count + source.count) { bytes in
                    bytes.storeBytes(of: UInt32(truncatingIfNeeded: task.count).littleEndian, as: UInt32.self)
                    bytes.storeBytes(of: sourceLength.littleEndian, toByteOffset: 4, as: UInt32.self)
                    UnsafeMutableRawBufferPointer(rebasing: bytes[8...]).copyMemory(from: UnsafeRawBufferPointer(task))
                    UnsafeMutableRawBufferPointer(rebasing: bytes[(8 + task.count)...])
                        .copyMemory(from: UnsafeRawBufferPointer(source))
                }
            }
        }
    }

    /// How many bytes the stored form of the key at `offset` has (`task`, or `task` NUL `source`),
    /// read without making it.
    func keyByteCount(at offset: Int) -> Int {
        let (taskCount, sourceCount) = keyLengths(at: offset)
        return sourceCount.map { taskCount + 1 + $0 } ?? taskCount
    }

    /// The key appended at `offset`.
    func key(at offset: Int) -> JobKey {
        let (taskCount, sourceCount) = keyLengths(at: offset)
        return keys.withBytes(at: offset + 8, count: taskCount + (sourceCount ?? 0)) { bytes in
            let task = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<taskCount]), as: UTF8.self)
            guard sourceCount != nil else { return JobKey(task: task) }
            let source = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[taskCount...]), as: UTF8.self)
            return JobKey(task: task, source: source)
        }
    }

    /// The byte counts of the task's name and of the file (`nil`: a plain task's job) of the key
    /// at `offset`.
    private func keyLengths(at offset: Int) -> (task: Int, source: Int?) {
        keys.withBytes(at: offset, count: 8) { bytes in
            let task = Int(UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self)))
            let source = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
            return (task, source == UInt32.max ? nil : Int(source))
        }
    }

    /// Appends `path`; returns its index.
    @discardableResult
    func append(_ path: WatchedPath) -> Int {
        let index = count
        let length = path.path.utf8.count
        let stringOffset = strings.append(utf8Of: path.path)
        records.append(count: Self.recordSize) { bytes in
            func store(_ field: UInt64, _ number: Int) {
                bytes.storeBytes(of: field.littleEndian, toByteOffset: 8 + 8 * number, as: UInt64.self)
            }
            bytes[0] = path.kind.rawValue
            bytes.storeBytes(of: UInt32(truncatingIfNeeded: length).littleEndian, toByteOffset: 4, as: UInt32.self)
            store(path.stat.device, 0)
            store(path.stat.inode, 1)
            store(UInt64(bitPattern: path.stat.size), 2)
            store(UInt64(bitPattern: path.stat.modified), 3)
            store(UInt64(bitPattern: path.stat.changed), 4)
            store(path.hash.high, 5)
            store(path.hash.low, 6)
            store(UInt64(bitPattern: path.seenAt), 7)
            store(UInt64(stringOffset), 8)
        }
        return index
    }

    /// The path at `index`, with its state.
    subscript(index: Int) -> WatchedPath {
        let (state, length, stringOffset) = record(at: index)
        var path = state
        path.path = string(at: stringOffset, length: length)
        return path
    }

    /// How many UTF-8 bytes the path at `index` has (only its record is read).
    func pathByteCount(at index: Int) -> Int { record(at: index).length }

    /// The path at `index`, without its state.
    func path(at index: Int) -> String {
        let (_, length, stringOffset) = record(at: index)
        return string(at: stringOffset, length: length)
    }

    private func string(at offset: Int, length: Int) -> String {
        strings.withBytes(at: offset, count: length) { String(decoding: $0, as: UTF8.self) }
    }

    private func record(at index: Int) -> (state: WatchedPath, length: Int, stringOffset: Int) {
        records.withBytes(at: index * Self.recordSize, count: Self.recordSize) { bytes in
            func field(_ number: Int) -> UInt64 {
                UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8 + 8 * number, as: UInt64.self))
            }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            let state = WatchedPath(
                path: "",
                kind: WatchedPath.Kind(rawValue: bytes[0]) ?? .absent,
                stat: FileSignature(
                    device: field(0),
                    inode: field(1),
                    size: Int64(bitPattern: field(2)),
                    modified: Int64(bitPattern: field(3)),
                    changed: Int64(bitPattern: field(4))
                ),
                hash: ContentHash(high: field(5), low: field(6)),
                seenAt: Int64(bitPattern: field(7))
            )
            return (state, length, Int(field(8)))
        }
    }
}
