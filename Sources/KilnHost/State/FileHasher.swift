import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What `stat` says of a file: enough to tell, without reading it, that it hasn't changed.
///
/// Threading: a value type.
public struct FileStat: Hashable, Sendable {
    /// Modification time, nanoseconds since the epoch.
    public var modified: Int64
    /// Status-change time (rename, chmod, write), nanoseconds since the epoch.
    public var changed: Int64
    /// Size in bytes.
    public var size: Int64
    /// Inode number (a file replaced by rename has a new one).
    public var inode: UInt64

    /// Creates a value.
    public init(modified: Int64, changed: Int64, size: Int64, inode: UInt64) {
        self.modified = modified
        self.changed = changed
        self.size = size
        self.inode = inode
    }

    /// The file's current status, or `nil` if it doesn't exist.
    public static func of(_ path: String) -> FileStat? {
        of(path, relativeTo: AT_FDCWD)
    }

    /// The status of `path`, resolved against the directory open as `directory` when relative
    /// (fewer components for the kernel to walk than the absolute path, and no string to build).
    static func of(_ path: String, relativeTo directory: Int32) -> FileStat? {
        var info = stat()
        guard fstatat(directory, path, &info, 0) == 0 else { return nil }
        return FileStat(
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec),
            size: Int64(info.st_size), inode: UInt64(info.st_ino)
        )
    }
}

/// A file's hash as recorded: the status it had and when it was hashed.
///
/// Threading: a value type.
public struct HashedFile: Hashable, Sendable {
    /// The file's status when it was hashed.
    public var stat: FileStat
    /// Its contents' hash.
    public var hash: ContentHash
    /// When it was hashed, nanoseconds since the epoch (the real-time clock, like file times).
    public var hashedAt: Int64

    /// Creates a value.
    public init(stat: FileStat, hash: ContentHash, hashedAt: Int64) {
        self.stat = stat
        self.hash = hash
        self.hashedAt = hashedAt
    }
}

/// Hashes files, reading each only when it may have changed — git's index trick. A file whose
/// (mtime, ctime, size, inode) is what it was when it was hashed is not read again.
///
/// **Racy timestamps.** File times come from the kernel's coarse clock, a few milliseconds per
/// tick, so a file changed again within the tick of its last change can keep all four values. A
/// recorded hash is trusted only when the file's mtime is more than ``racyWindow`` older than the
/// moment it was hashed; a file modified that recently is hashed again, on every run, until it is
/// old enough. (git calls such entries "racily clean".)
///
/// Threading: any member from any thread; the table is guarded by its mutex.
public final class FileHasher: Sendable {
    /// How much older than its hash a file's mtime must be for the hash to be trusted.
    public static let racyWindow: Int64 = 50_000_000

    /// The records, split over 16 locks by path so parallel checks rarely wait on each other.
    private final class Shard: Sendable {
        let table: Mutex<[String: HashedFile]>
        init(_ table: [String: HashedFile]) { self.table = Mutex(table) }
    }
    private let shards: [Shard]
    /// Paths whose record changed in this run: only they need saving.
    private let changed = Mutex<Set<String>>([])

    private func shard(_ path: String) -> Shard {
        shards[path.hashValue & 15]
    }
    private let now: @Sendable () -> Int64
    /// Relative paths are resolved against it; records are kept under the path as given, so
    /// project-relative paths (short, and stored inline by Swift) keep a big table small.
    private let root: String

    /// Looks up a path's record when the table has none (the build state, read one row at a time
    /// when only a few files are expected to be hashed).
    private let lookup: (@Sendable (String) -> HashedFile?)?

    /// Creates a hasher.
    ///
    /// - Parameters:
    ///   - known: Hashes recorded by earlier runs, by path.
    ///   - root: Relative paths are resolved against it.
    ///   - now: The real-time clock in nanoseconds (a seam for tests).
    ///   - lookup: Asked for a path's record when `known` has none; called from any thread.
    public init(
        known: [String: HashedFile] = [:], root: String = "", now: @escaping @Sendable () -> Int64 = FileHasher.realTime,
        lookup: (@Sendable (String) -> HashedFile?)? = nil
    ) {
        self.root = root
        var split = [[String: HashedFile]](repeating: [:], count: 16)
        for index in split.indices { split[index].reserveCapacity(known.count / 16 + 1) }
        for (path, file) in known { split[path.hashValue & 15][path] = file }
        self.shards = split.map { Shard($0) }
        self.now = now
        self.lookup = lookup
    }

    /// `CLOCK_REALTIME` in nanoseconds.
    public static let realTime: @Sendable () -> Int64 = {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// How a file's hash was obtained.
    public enum Source: Sendable, Equatable {
        /// From the record: the file's status matched and wasn't racy.
        case recorded
        /// The file was read.
        case read
    }

    /// The file's hash, or `nil` if it doesn't exist. `record` is what the hash rests on (the
    /// status the file had when it was read), `nil` when the file changed while it was read.
    ///
    /// - Throws: ``FileContent/Failure`` if it exists but can't be read.
    public func hash(_ path: String) throws(FileContent.Failure) -> (hash: ContentHash, source: Source, record: HashedFile?)? {
        let file = path.hasPrefix("/") || root.isEmpty ? path : root + "/" + path
        guard let status = FileStat.of(file) else {
            if shard(path).table.withLock({ $0.removeValue(forKey: path) }) != nil { changed.withLock { _ = $0.insert(path) } }
            return nil
        }
        var known = shard(path).table.withLock { $0[path] }
        if known == nil, let lookup, let found = lookup(path) {
            known = found
            shard(path).table.withLock { $0[path] = $0[path] ?? found }
        }
        if let record = known, record.stat == status, record.hashedAt - status.modified > Self.racyWindow {
            return (record.hash, .recorded, record)
        }
        let hashedAt = now()
        let hash = try FileContent.hash(file)
        // If the file changed while it was read, the hash may mix old and new bytes: keep no
        // record, so it is read again next time.
        let record = FileStat.of(file) == status ? HashedFile(stat: status, hash: hash, hashedAt: hashedAt) : nil
        shard(path).table.withLock { $0[path] = record }
        changed.withLock { _ = $0.insert(path) }
        return (hash, .read, record)
    }

    /// Everything recorded, for saving in the build state.
    public var records: [String: HashedFile] {
        shards.reduce(into: [:]) { result, shard in shard.table.withLock { result.merge($0) { first, _ in first } } }
    }

    /// The records that changed since the last call (`nil` for a file that no longer exists), and
    /// forgets that they changed — so saving them as a run goes keeps nothing growing.
    public func takeChangedRecords() -> [String: HashedFile?] {
        let paths = changed.withLock { changed -> Set<String> in
            defer { changed.removeAll(keepingCapacity: true) }
            return changed
        }
        return Dictionary(uniqueKeysWithValues: paths.map { path in (path, shard(path).table.withLock { $0[path] }) })
    }
}
