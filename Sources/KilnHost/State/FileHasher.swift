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
/// **Memory.** Records are a cache of the build state's: with a way to read them back (a run with
/// a build state), a table past ``capacity`` records lets go of those already handed out for
/// saving (``takeChangedRecords()``), and reads them back one at a time should a job ask again.
/// An `each:` task over 100k files keeps ~12k records, not 100k.
///
/// Threading: any member from any thread; each of the table's 16 shards is guarded by its mutex.
public final class FileHasher: Sendable {
    /// A shard's records and which of them changed since they were last taken for saving.
    private struct Table {
        var records: [String: HashedFile] = [:]
        /// Paths whose record changed (or went: a path here that `records` lacks) and wasn't
        /// taken yet. Never let go of: only they hold what the build state doesn't have.
        var changed: Set<String> = []
        /// Whether it let go of saved records: a path it lacks may be in the build state.
        var hasLetGo = false
        /// Past this many records it lets go of saved ones: its part of ``capacity``, or twice
        /// what a pass kept (records not yet saved aren't let go; without this, a table of them
        /// would be scanned again at every record added).
        var limit: Int
    }
    /// The records, split over 16 locks by path so parallel checks rarely wait on each other.
    private final class Shard: Sendable {
        let table: HostMutex<Table>
        init(_ records: [String: HashedFile], limit: Int) {
            self.table = HostMutex(Table(records: records, limit: limit))
        }
    }
    private let shards: [Shard]
    /// One bit per shard with changed paths not yet taken: a run's jobs each take theirs, and
    /// most find nothing to take.
    private let shardsChanged = Atomic<UInt32>(0)
    /// Past this many records in all (with a way to read them back), a shard lets go of those
    /// already taken.
    public let capacity: Int

    private func shard(_ path: String) -> Int {
        path.hashValue & 15
    }
    private let now: @Sendable () -> Int64
    /// Relative paths are resolved against it; records are kept under the path as given, so
    /// project-relative paths (short, and stored inline by Swift) keep a big table small.
    private let root: String

    /// Looks up a path's record when the table has none (the build state, read one row at a time
    /// when only a few files are expected to be hashed).
    private let lookup: (@Sendable (String) -> HashedFile?)?
    /// Reads back a record the table let go of (the build state), when there is no ``lookup``:
    /// asked only for paths of a shard that let go of some.
    private let readBack: (@Sendable (String) -> HashedFile?)?
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
        /// Records let go of (already saved) to keep the table within its capacity, and in how
        /// many passes.
        public var letGo = 0
        /// Passes that let go of records.
        public var letGoPasses = 0

        /// One line.
        public var description: String {
            "\(fromIndex) from the git index, \(fromRecords) from records, \(read) read (\(bytesRead) bytes)"
                + (letGo > 0 ? "; \(letGo) saved records let go in \(letGoPasses) passes" : "")
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
    ///   - readBack: Without a `lookup`, reads back a record the table let go of; called from
    ///     any thread, only for paths the table may have let go of.
    ///   - tracked: Content ids of clean tracked files (git's index), or `nil`.
    ///   - capacity: How many records are kept, when `lookup` or `readBack` can read back those
    ///     let go. The default, 16 × 191, fills each shard's dictionary to its load limit (3/4 of
    ///     256 buckets) and never makes it grow to 512. A record is read back only when a job asks
    ///     for a path again (a shared header), one row from the build state. 16 × 767 (1,024
    ///     buckets) held 1.1 MB more at the peak of a 10k-task build, for no time saved.
    public init(
        known: [String: HashedFile] = [:],
        root: String = "",
        now: @escaping @Sendable () -> Int64 = FileHasher.realTime,
        lookup: (@Sendable (String) -> HashedFile?)? = nil,
        readBack: (@Sendable (String) -> HashedFile?)? = nil,
        tracked: (any TrackedContent)? = nil,
        capacity: Int = 16 * 191
    ) {
        self.root = root
        self.tracked = tracked
        self.capacity = capacity
        var split = [[String: HashedFile]](repeating: [:], count: 16)
        for index in split.indices { split[index].reserveCapacity(known.count / 16 + 1) }
        for (path, file) in known { split[path.hashValue & 15][path] = file }
        self.shards = split.map { Shard($0, limit: max(1, capacity / 16)) }
        self.now = now
        self.lookup = lookup
        self.readBack = readBack
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
        let shard = shard(path)
        guard let status = FileSignature.of(file) else {
            shards[shard].table.withLock { table in
                if table.records.removeValue(forKey: path) != nil { noteChanged(path, in: &table, shard: shard) }
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
        let (kept, letGo) = shards[shard].table.withLock { ($0.records[path], $0.hasLetGo) }
        var known = kept
        if known == nil, let ask = lookup ?? (letGo ? readBack : nil), let found = ask(path) {
            known = found
            shards[shard].table.withLock { table in
                if table.records[path] == nil {
                    table.records[path] = found
                    letGoOfSaved(in: &table)
                }
            }
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
        shards[shard].table.withLock { table in
            table.records[path] = record
            noteChanged(path, in: &table, shard: shard)
            letGoOfSaved(in: &table)
        }
        return Found(digest: FileDigest(hash, wanted), source: .read, record: record)
    }

    /// Notes that `path`'s record changed, for ``takeChangedRecords()``. Under the shard's lock.
    private func noteChanged(_ path: String, in table: inout Table, shard: Int) {
        table.changed.insert(path)
        shardsChanged.bitwiseOr(1 << UInt32(shard), ordering: .relaxed)
    }

    /// Lets go of the records already taken for saving when the shard holds more than its part
    /// of ``capacity`` — only with a way to read them back. Under the shard's lock.
    private func letGoOfSaved(in table: inout Table) {
        guard lookup != nil || readBack != nil, table.records.count > table.limit else { return }
        let count = dropSaved(in: &table)
        counts.withLock {
            $0.letGo += count
            $0.letGoPasses += 1
        }
    }

    /// Lets go of every record already taken for saving, when they can be read back: the run's
    /// jobs are done and their records saved, and the memory goes to writing the snapshot (an
    /// `each:` task over 100k files kept 2.9 MB of them). Records not yet taken are kept.
    ///
    /// Threading: any thread.
    public func letGoOfSaved() {
        guard lookup != nil || readBack != nil else { return }
        for shard in shards { shard.table.withLock { _ = dropSaved(in: &$0) } }
    }

    /// Drops a shard's records already taken for saving, and sets its next limit; returns how many
    /// went. Under the shard's lock.
    private func dropSaved(in table: inout Table) -> Int {
        let changed = table.changed
        let before = table.records.count
        table.records = table.records.filter { changed.contains($0.key) }
        table.hasLetGo = true
        table.limit = max(capacity / shards.count, 2 * table.records.count)
        return before - table.records.count
    }

    /// Everything recorded and kept, for saving in the build state.
    public var records: [String: HashedFile] {
        shards.reduce(into: [:]) { result, shard in
            shard.table.withLock { result.merge($0.records) { first, _ in first } }
        }
    }

    /// How many records are kept now.
    public var keptCount: Int {
        shards.reduce(0) { count, shard in count + shard.table.withLock { $0.records.count } }
    }

    /// The records that changed since the last call (`nil` for a file that no longer exists), and
    /// forgets that they changed — so saving them as a run goes keeps nothing growing.
    public func takeChangedRecords() -> [String: HashedFile?] {
        var bits = shardsChanged.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return [:] }
        var result: [String: HashedFile?] = [:]
        while bits != 0 {
            let index = bits.trailingZeroBitCount
            bits &= bits - 1
            shards[index].table.withLock { table in
                for path in table.changed { result[path] = .some(table.records[path]) }
                table.changed.removeAll(keepingCapacity: true)
            }
        }
        return result
    }
}
