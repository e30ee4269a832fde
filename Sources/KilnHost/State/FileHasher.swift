import Dispatch
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A file's hash as recorded: the status it had, how and when it was hashed.
///
/// Threading: a value type.
public struct HashedFile: Hashable, Sendable {
    /// The file's status when it was hashed.
    public var stat: FileSignature
    /// Its contents' hash.
    public var hash: ContentHash
    /// When it was hashed, nanoseconds since the epoch (the real-time clock, like file times).
    public var hashedAt: Int64
    /// Which algorithm made ``hash``.
    public var algorithm: HashAlgorithm

    /// Creates a value.
    public init(stat: FileSignature, hash: ContentHash, hashedAt: Int64, algorithm: HashAlgorithm = .xxh3) {
        self.stat = stat
        self.hash = hash
        self.hashedAt = hashedAt
        self.algorithm = algorithm
    }

    /// The hash with its algorithm.
    public var digest: FileDigest { FileDigest(hash, algorithm) }
}

/// Hashes files, reading each only when it may have changed — git's index trick. A file whose
/// (mtime, ctime, size, inode) is what it was when it was hashed is not read again.
///
/// **Through git.** With a ``TrackedContent`` (the project is in a git repository), a tracked
/// file that is clean isn't read even once: its blob id in the index is its hash
/// (``HashAlgorithm/gitBlob``). Other files are read and hashed with XXH3. A hash is always asked
/// for in the algorithm of the record it will be compared with, so a file that moves between
/// the two (committed, or edited) doesn't look changed: a blob id whose file the index no
/// longer vouches for is computed from the bytes, the way git would.
///
/// **Racy timestamps.** A recorded hash is trusted only by ``FileSignature/isSettled(at:)``: the
/// file's mtime is more than ``FileSignature/racyWindow`` older than the moment it was hashed; a
/// file modified that recently is hashed again, on every run, until it is old enough. (git calls
/// such entries "racily clean".)
///
/// Threading: any member from any thread; the table is guarded by its mutex.
public final class FileHasher: Sendable {
    /// The records, split over 16 locks by path so parallel checks rarely wait on each other.
    private final class Shard: Sendable {
        let table: HostMutex<[String: HashedFile]>
        init(_ table: [String: HashedFile]) { self.table = HostMutex(table) }
    }
    private let shards: [Shard]
    /// Paths whose record changed in this run: only they need saving.
    private let changed = HostMutex<Set<String>>([])

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
    /// The git index's view of tracked files, when the project is in a repository.
    private let tracked: (any TrackedContent)?
    /// How the hashes of this run were obtained, counted.
    private let counts = HostMutex(Statistics())

    /// How many hashes came from where, for `KILN_DEBUG=hashes`.
    ///
    /// Threading: a value type.
    public struct Statistics: Sendable, Equatable, CustomStringConvertible {
        /// Hashes from the git index (files not read).
        public var fromIndex = 0
        /// Hashes from records whose status still matched (files not read).
        public var fromRecords = 0
        /// Files read and hashed.
        public var read = 0
        /// Bytes read.
        public var bytesRead: Int64 = 0

        /// One line.
        public var description: String {
            "\(fromIndex) from the git index, \(fromRecords) from records, \(read) read (\(bytesRead) bytes)"
        }
    }

    /// The counts so far.
    public var statistics: Statistics { counts.withLock { $0 } }

    /// Creates a hasher.
    ///
    /// - Parameters:
    ///   - known: Hashes recorded by earlier runs, by path.
    ///   - root: Relative paths are resolved against it.
    ///   - now: The real-time clock in nanoseconds (a seam for tests).
    ///   - lookup: Asked for a path's record when `known` has none; called from any thread.
    ///   - tracked: Content ids of clean tracked files (git's index), or `nil`.
    public init(
        known: [String: HashedFile] = [:],
        root: String = "",
        now: @escaping @Sendable () -> Int64 = FileHasher.realTime,
        lookup: (@Sendable (String) -> HashedFile?)? = nil,
        tracked: (any TrackedContent)? = nil
    ) {
        self.root = root
        self.tracked = tracked
        var split = [[String: HashedFile]](repeating: [:], count: 16)
        for index in split.indices { split[index].reserveCapacity(known.count / 16 + 1) }
        for (path, file) in known { split[path.hashValue & 15][path] = file }
        self.shards = split.map { Shard($0) }
        self.now = now
        self.lookup = lookup
    }

    /// `CLOCK_REALTIME` in nanoseconds.
    public static let realTime: @Sendable () -> Int64 = { FileSignature.now() }

    /// How a file's hash was obtained.
    public enum Source: Sendable, Equatable {
        /// From the record: the file's status matched and wasn't racy.
        case recorded
        /// From the git index: a tracked file, clean.
        case index
        /// The file was read.
        case read
    }

    /// A file's hash, how it was obtained, and what it rests on.
    ///
    /// Threading: a value type.
    public struct Found: Sendable {
        /// The hash and its algorithm.
        public var digest: FileDigest
        /// Where it came from.
        public var source: Source
        /// The status the file had when its hash was taken, `nil` when the file changed while it
        /// was read.
        public var record: HashedFile?

        /// The hash.
        public var hash: ContentHash { digest.hash }
    }

    /// The file's hash, or `nil` if it doesn't exist.
    ///
    /// - Parameters:
    ///   - path: Relative to the root, or absolute.
    ///   - algorithm: The algorithm of the hash it will be compared with; `nil` when there is
    ///     none: the index's blob id when it vouches for the file, XXH3 otherwise.
    /// - Throws: ``FileContent/Failure`` if it exists but can't be read.
    public func hash(_ path: String, as algorithm: HashAlgorithm? = nil) throws(FileContent.Failure) -> Found? {
        let file = path.hasPrefix("/") || root.isEmpty ? path : root + "/" + path
        guard let status = FileSignature.of(file) else {
            if shard(path).table.withLock({ $0.removeValue(forKey: path) }) != nil {
                changed.withLock { _ = $0.insert(path) }
            }
            return nil
        }
        if algorithm != .xxh3, let tracked, !path.hasPrefix("/"), let id = tracked.contentID(of: path, status: status) {
            // Not kept in the table: the index is where such hashes live.
            counts.withLock { $0.fromIndex += 1 }
            return Found(
                digest: FileDigest(id, .gitBlob),
                source: .index,
                record: HashedFile(stat: status, hash: id, hashedAt: now(), algorithm: .gitBlob)
            )
        }
        // A blob id the index can't vouch for is computed from the bytes (without git, XXH3: it
        // won't match, and the job reruns).
        let wanted: HashAlgorithm = algorithm == .gitBlob && tracked != nil ? .gitBlob : .xxh3
        var known = shard(path).table.withLock { $0[path] }
        if known == nil, let lookup, let found = lookup(path) {
            known = found
            shard(path).table.withLock { $0[path] = $0[path] ?? found }
        }
        if let record = known, record.algorithm == wanted, record.stat == status, status.isSettled(at: record.hashedAt)
        {
            counts.withLock { $0.fromRecords += 1 }
            return Found(digest: record.digest, source: .recorded, record: record)
        }
        let hashedAt = now()
        let hash: ContentHash
        if wanted == .gitBlob, let tracked {
            guard let id = tracked.computeContentID(of: file) else {
                throw FileContent.Failure(path: file, reason: "can't be read")
            }
            hash = id
        } else {
            hash = try FileContent.hash(file)
        }
        counts.withLock {
            $0.read += 1
            $0.bytesRead += status.size
        }
        // If the file changed while it was read, the hash may mix old and new bytes: keep no
        // record, so it is read again next time.
        let record =
            FileSignature.of(file) == status
            ? HashedFile(stat: status, hash: hash, hashedAt: hashedAt, algorithm: wanted) : nil
        shard(path).table.withLock { $0[path] = record }
        changed.withLock { _ = $0.insert(path) }
        return Found(digest: FileDigest(hash, wanted), source: .read, record: record)
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
