import CSQLite
import KilnJobs
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the build state remembers of a job after it ran: its signature, and the hashes of the
/// outputs it left, for the up-to-date check and early cutoff.
///
/// Threading: a value type.
public struct JobRecord: Sendable, Equatable {
    /// The job's signature when it last ran successfully.
    public var signature: ContentHash
    /// Each declared output's hash after that run.
    public var outputs: [String: ContentHash]
    /// When it finished, nanoseconds since the epoch.
    public var finishedAt: Int64
    /// The hash of its resolved definition (kind, command, directory, environment).
    public var definition: ContentHash
    /// Its inputs' hashes (each with its algorithm), by path relative to its directory.
    public var inputs: [String: FileDigest]
    /// Its dependencies' output signatures, by task name.
    public var dependencies: [String: ContentHash]
    /// Inputs its depfile named (headers a compile read), by path: inputs of its next run.
    public var discovered: [String: FileDigest]

    /// Creates a record.
    public init(
        signature: ContentHash,
        outputs: [String: ContentHash],
        finishedAt: Int64,
        definition: ContentHash = ContentHash(high: 0, low: 0),
        inputs: [String: FileDigest] = [:],
        dependencies: [String: ContentHash] = [:],
        discovered: [String: FileDigest] = [:]
    ) {
        self.signature = signature
        self.outputs = outputs
        self.finishedAt = finishedAt
        self.definition = definition
        self.inputs = inputs
        self.dependencies = dependencies
        self.discovered = discovered
    }

    /// One hash of all the outputs: what a dependent's signature includes, so an output that
    /// comes out byte-identical leaves its dependents alone (early cutoff).
    public var outputSignature: ContentHash {
        var hasher = ContentHasher()
        for (path, hash) in outputs.sorted(by: { $0.key < $1.key }) {
            hasher.combine(path)
            hasher.combine(hash)
        }
        return hasher.finalize()
    }
}

/// A failure to open or use the build state.
///
/// Threading: a value type.
public struct BuildStateError: Error, Sendable, CustomStringConvertible {
    /// What happened and what to do.
    public var message: String
    /// Whether another run holds the project (rather than `.kiln/` being unusable).
    public var isBusy = false
    /// The message.
    public var description: String { message }
}

/// The project's build state: an SQLite database in write-ahead-log mode under `.kiln/`.
///
/// - Each job's record is committed before the job is reported finished (jobs finishing together
///   share one transaction, and a job nothing waits for may wait a moment for others to share
///   it), so a `kill -9` at any moment loses at most the jobs not yet reported finished: those
///   running, and those whose records waited (at most ``batchLimit``, for at most
///   ``batchDelay``). The next run redoes only those.
/// - A database that can't be opened, fails SQLite's `quick_check`, or has another format is moved
///   aside (`state.db.corrupt-<time>`) with a warning, and the run starts from an empty state —
///   a full build, never a crash, never work skipped on a record that can't be trusted.
/// - One run at a time per project: `.kiln/lock` is held with `flock` for the whole run. A second
///   run fails at once naming the first one's process, or waits for it (`wait: true`).
///
/// Threading: every member from any thread; the connection is used under its mutex.
public final class BuildState: @unchecked Sendable {
    /// Bump when the tables or the record encoding change: an older state is then discarded.
    static let format = "7"

    /// The database file.
    public let path: String
    /// The SQLite handle. `@unchecked Sendable`: it is only used under `connection`'s mutex.
    private struct Handle: @unchecked Sendable {
        var database: OpaquePointer?
        /// Prepared statements kept for reuse (the one-row lookups, the job and file writes).
        var cached: [String: OpaquePointer] = [:]
        /// What ``commit(_:)`` committed.
        var commits = Commits()
    }

    private let connection: HostMutex<Handle>
    /// Held for the state's lifetime: one run per project at a time (`nil`: a reader that found
    /// it taken).
    public let lock: ProjectLock?
    private let warn: @Sendable (String) -> Void
    /// The longest a record that can wait for a commit waits: ``batchDelay`` but in tests.
    private let commitWait: Duration

    /// Opens (or creates) the state of the project at `root`.
    ///
    /// - Parameters:
    ///   - root: The project root; the state goes in `root/.kiln/`.
    ///   - wait: Wait for another run holding the project instead of failing.
    ///   - warn: Receives a line when a broken database is moved aside.
    /// - Throws: ``BuildStateError`` when another run holds the project (and `wait` is false), or
    ///   `.kiln` can't be created.
    public convenience init(root: String, wait: Bool = false, warn: @escaping @Sendable (String) -> Void)
        throws(BuildStateError)
    {
        try self.init(root: root, lock: ProjectLock(root: root, wait: wait), warn: warn)
    }

    /// Opens (or creates) the state of the project at `root`, taking its lock, with records that
    /// can wait for a commit waiting at most `batchDelay` (for tests of that wait).
    public convenience init(root: String, batchDelay: Duration) throws(BuildStateError) {
        try self.init(root: root, lock: ProjectLock(root: root, wait: false), warn: { _ in }, batchDelay: batchDelay)
    }

    /// Opens (or creates) the state of the project at `root`, whose lock the caller holds.
    ///
    /// - Parameters:
    ///   - root: The project root; the state goes in `root/.kiln/`.
    ///   - lock: The project's lock, held from now on by the state; `nil` only for reading.
    ///   - warn: Receives a line when a broken database is moved aside (from any thread).
    ///   - batchDelay: The longest a record that can wait for a commit waits
    ///     (``record(making:handingOver:canWait:committed:)``).
    public init(
        root: String,
        lock: ProjectLock?,
        warn: @escaping @Sendable (String) -> Void,
        batchDelay: Duration = BuildState.batchDelay
    ) {
        path = KilnDirectory(root: root).stateDatabase
        self.lock = lock
        self.warn = warn
        commitWait = batchDelay
        var (database, failure) = Self.openDatabase(path)
        // Only damage moves the database aside: a full disk or a read-only .kiln is said as such,
        // and the state — healthy — is left alone.
        if database == nil, Self.isDamage(failure.code) {
            Self.moveAside(path, warn: warn)
            (database, failure) = Self.openDatabase(path)
        }
        connection = HostMutex(Handle(database: database))
        if database == nil {
            warn(
                "kiln: can't use the build state \(path): \(Self.describe(failure)); this run will rebuild everything and remember nothing"
            )
        }
    }

    /// Moves a damaged database (and its log) aside, with a warning, and forgets the up-to-date
    /// snapshot, which rests on its records.
    private static func moveAside(_ path: String, warn: (String) -> Void) {
        // One damaged copy is kept for a look, the newest: older ones go.
        let directory = Path.directory(of: path), prefix = Path.lastComponent(path) + ".corrupt-"
        for entry in DirectoryListing.entries(of: directory) where entry.name.hasPrefix(prefix) {
            unlink(directory + "/" + entry.name)
        }
        let aside = path + ".corrupt-\(FileHasher.realTime() / 1_000_000_000)"
        for suffix in ["", "-wal", "-shm"] { rename(path + suffix, aside + suffix) }
        UpToDateSnapshot.remove(root: Path.directory(of: Path.directory(of: path)))
        warn("kiln: the build state \(path) is unreadable or damaged; moved it to \(aside) and starting a full build")
    }

    /// Called when SQLite reports damage in the middle of a run: closes the database, moves it
    /// aside, and goes on without a state — every job not yet checked then runs, nothing is
    /// skipped on a record that can't be trusted.
    private func damaged(_ handle: inout Handle) {
        for statement in handle.cached.values { sqlite3_finalize(statement) }
        if let database = handle.database { sqlite3_close_v2(database) }
        handle = Handle(database: nil)
        Self.moveAside(path, warn: warn)
    }

    /// Folds the write-ahead log into the database and closes it, so `.kiln` holds one compact
    /// file. kiln calls it before exiting (it exits without running deinitializers).
    public func close() {
        flushWrites()
        connection.withLock { handle in
            guard let database = handle.database else { return }
            for statement in handle.cached.values { sqlite3_finalize(statement) }
            handle.cached = [:]
            sqlite3_exec(database, "PRAGMA wal_checkpoint(TRUNCATE)", nil, nil, nil)
            sqlite3_close_v2(database)
            handle.database = nil
        }
    }

    deinit {
        connection.withLock { handle in
            for statement in handle.cached.values { sqlite3_finalize(statement) }
            if let database = handle.database { sqlite3_close_v2(database) }
            handle.database = nil
        }
    }

    // MARK: Records

    /// Every job record, by job key.
    public func loadJobs() -> [String: JobRecord] {
        var result: [String: JobRecord] = [:]
        result.reserveCapacity(count(of: "jobs"))
        query("SELECT key, record FROM jobs") { statement in
            guard let key = Self.text(statement, 0), let record = Self.decodeRecord(Self.blob(statement, 1)) else {
                return
            }
            result[key] = record
        }
        return result
    }

    /// Every recorded file hash, by path.
    public func loadFiles() -> [String: HashedFile] {
        var result: [String: HashedFile] = [:]
        result.reserveCapacity(count(of: "files"))
        query(
            "SELECT path, modified, changed, size, inode, device, hash_high, hash_low, hashed_at, algorithm FROM files"
        ) { statement in
            guard let path = Self.text(statement, 0) else { return }
            result[path] = Self.hashedFile(statement, from: 1)
        }
        return result
    }

    /// A file record from nine columns starting at `first`.
    private static func hashedFile(_ statement: OpaquePointer, from first: Int32) -> HashedFile {
        let stat = FileSignature(
            device: UInt64(bitPattern: sqlite3_column_int64(statement, first + 4)),
            inode: UInt64(bitPattern: sqlite3_column_int64(statement, first + 3)),
            size: sqlite3_column_int64(statement, first + 2),
            modified: sqlite3_column_int64(statement, first),
            changed: sqlite3_column_int64(statement, first + 1)
        )
        let hash = ContentHash(
            high: UInt64(bitPattern: sqlite3_column_int64(statement, first + 5)),
            low: UInt64(bitPattern: sqlite3_column_int64(statement, first + 6))
        )
        return HashedFile(
            stat: stat,
            hash: hash,
            hashedAt: sqlite3_column_int64(statement, first + 7),
            algorithm: HashAlgorithm(rawValue: UInt8(truncatingIfNeeded: sqlite3_column_int64(statement, first + 8)))
                ?? .xxh3
        )
    }

    /// One job's record, read when it is needed (`nil`: none, or it can't be decoded).
    public func loadJob(key: String) -> JobRecord? {
        var result: JobRecord?
        lookup("SELECT record FROM jobs WHERE key = ?1", key) { statement in
            result = Self.decodeRecord(Self.blob(statement, 0))
        }
        return result
    }

    /// One file's recorded hash, read when it is needed.
    public func loadFile(path: String) -> HashedFile? {
        var result: HashedFile?
        lookup(
            "SELECT modified, changed, size, inode, device, hash_high, hash_low, hashed_at, algorithm FROM files WHERE path = ?1",
            path
        ) { statement in
            result = Self.hashedFile(statement, from: 0)
        }
        return result
    }

    /// The inputs each job's depfile named last time (a C file's headers), by job key, relative
    /// to the job's directory: what `kiln affected` adds to a task's declared sources.
    public func discoveredInputs() -> [JobKey: [String]] {
        var result: [JobKey: [String]] = [:]
        for (key, record) in loadJobs() where !record.discovered.isEmpty {
            result[JobKey(stored: key)] = Array(record.discovered.keys)
        }
        return result
    }

    /// Saves a job's record, committed before this returns.
    public func save(_ record: JobRecord, for key: String) {
        save(record, for: key, changedFiles: [:])
    }

    /// Saves a job's record and the file hashes learned with it (`nil` forgets a file), committed
    /// together before this returns.
    ///
    /// It goes through the writer, with every write waiting then, in one transaction (a group
    /// commit): a commit costs far more than a row. A run records its jobs with
    /// ``record(making:handingOver:canWait:committed:)``, which doesn't wait.
    ///
    /// `duration`, when given, is how long the job ran, remembered for its task: the next run
    /// starts the tasks on the longest path first (``loadDurations()``).
    public func save(
        _ record: JobRecord,
        for key: String,
        changedFiles: [String: HashedFile?],
        duration: (task: String, nanoseconds: Int64)? = nil
    ) {
        groupSave(JobWrite(key: key, record: Self.encodeRecord(record), files: changedFiles, duration: duration))
    }

    /// How long each task's job last ran, in nanoseconds, by task name. `kiln clean` keeps them,
    /// as ninja keeps `.ninja_log`. `count`: how many the caller expects (room is made for them).
    public func loadDurations(expecting count: Int = 0) -> [String: Int64] {
        var result: [String: Int64] = [:]
        result.reserveCapacity(count)
        query("SELECT task, nanoseconds FROM durations") { statement in
            guard let task = Self.text(statement, 0) else { return }
            result[task] = sqlite3_column_int64(statement, 1)
        }
        return result
    }

    /// How long the jobs of the tasks `names` last ran, read one row each: for a run of a few
    /// tasks, where reading every task's costs more than the run (10k rows: 18M instructions).
    public func loadDurations(of names: [String]) -> [String: Int64] {
        var result: [String: Int64] = [:]
        result.reserveCapacity(names.count)
        for name in names {
            lookup("SELECT nanoseconds FROM durations WHERE task = ?1", name) { statement in
                result[name] = sqlite3_column_int64(statement, 0)
            }
        }
        return result
    }

    /// Commits `write` with whatever else is waiting (see ``save(_:for:changedFiles:)``), and
    /// returns once it is committed. On the writer's thread (a `committed` block saving more),
    /// it commits there and then.
    private func groupSave(_ write: JobWrite) {
        let onWriter = writer.withLock { $0.drainer.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if onWriter {
            commit([write])
            return
        }
        let committed = CountingSemaphore()
        enqueue(PendingWrite(make: { write }, committed: { committed.signal() }))
        committed.wait()
    }

    /// A job's rows, made when the writer comes to them: what
    /// ``record(making:handingOver:canWait:committed:)`` is given.
    ///
    /// Threading: a value type.
    public struct Write: Sendable {
        fileprivate var write: JobWrite

        /// A job's record under `key`, the file hashes learned with it (`nil` forgets a file),
        /// and how long its task's job ran, when known.
        public init(
            _ record: JobRecord,
            for key: String,
            changedFiles: [String: HashedFile?],
            duration: (task: String, nanoseconds: Int64)? = nil
        ) {
            write = JobWrite(key: key, record: BuildState.encodeRecord(record), files: changedFiles, duration: duration)
        }
    }

    /// Saves `write`, committed before this returns (see ``save(_:for:changedFiles:duration:)``).
    public func save(_ write: Write) {
        groupSave(write.write)
    }

    /// Records a job **without waiting** for another's commit: `make` is run and what it returns
    /// committed with every other write waiting then, in one transaction; `committed` runs once
    /// the transaction is committed (or failed: the state then says so once, as any failed write
    /// does). `make` returning `nil` writes nothing.
    ///
    /// **Who writes.** When no write is under way, the caller does it, at once, on its own
    /// thread (no other thread is woken for it). When one is, the write joins the queue and this
    /// returns: the thread writing then makes it and runs its `committed` with the next batch,
    /// one batch more, after which the state's own writer thread takes what is left. So a thread
    /// finishing a job never waits for another job's commit: the process monitor goes on reaping
    /// commands, and a remote look-up's thread (one of Swift concurrency's few) goes back to its
    /// work. Jobs finishing close together share one commit.
    ///
    /// A job is reported finished, and its dependents start, only from `committed`: a `kill -9`
    /// at any moment still loses only the jobs not yet reported finished.
    ///
    /// With `handingOver`, the caller never writes: the writer thread does. For a thread that
    /// must not block on files, one of Swift concurrency's (a remote look-up's): it would hold up
    /// every task waiting for a thread of that small pool.
    ///
    /// `committed` may use the state again (a write from the writing thread commits at once).
    ///
    /// The writer thread keeps the state alive until it has finished, a moment after the last
    /// `committed`: let go of the project with ``close()`` and the lock's `release()`, as a run
    /// does, not by dropping the last reference.
    ///
    /// **Batching.** With `canWait`, nothing waits for this job's end (the caller says so: its
    /// slot goes to a ready job and no dependent waits for it alone), so no commit is made for it
    /// yet: it waits for the next commit another write asks for, at most ``batchDelay`` (its
    /// report waits with it), or until ``batchLimit`` writes wait, whichever comes first. The
    /// writer thread makes and commits a full batch, and the timer's: the caller never does.
    /// A commit costs far more than a row: jobs ending a millisecond apart, each committing
    /// alone, spent more on SQLite than on anything else kiln does for a job. A `kill -9` then
    /// loses the jobs waiting with it too — each not yet reported finished, so each redone by
    /// the next run.
    public func record(
        making make: @escaping @Sendable () -> Write?,
        handingOver: Bool = false,
        canWait: Bool = false,
        committed: @escaping @Sendable () -> Void
    ) {
        enqueue(
            PendingWrite(make: { make()?.write }, committed: committed),
            handingOver: handingOver,
            canWait: canWait && !handingOver
        )
    }

    /// The longest a write that can wait (``record(making:handingOver:canWait:committed:)``)
    /// waits for a commit.
    public static let batchDelay = Duration.milliseconds(20)
    /// How many writes that can wait may wait at once: the one that makes them this many commits
    /// them all.
    public static let batchLimit = 16

    /// Returns once every write queued before has been committed.
    public func flushWrites() {
        groupSave(JobWrite(key: nil, record: [], files: [:]))
    }

    /// Queues `pending`; when no write is under way, writes it (and what joins it meanwhile) here,
    /// or with `handingOver`, starts the writer thread. With `canWait`, while fewer than
    /// ``batchLimit`` wait, it is left for a later commit instead (see ``Writer/due``); the one
    /// that makes them ``batchLimit`` starts the writer thread on them.
    private func enqueue(_ pending: PendingWrite, handingOver: Bool = false, canWait: Bool = false) {
        enum Next { case nothing, drain, handOver, armTimer }
        let next = writer.withLock { writer -> Next in
            writer.pending.append(pending)
            if !canWait || writer.pending.count >= Self.batchLimit { writer.due = true }
            // A drainer under way sees `due` when it looks for its next batch.
            guard writer.drainer == nil else { return .nothing }
            guard writer.due else { return writer.claimTimer() ? .armTimer : .nothing }
            // A full batch of records nothing waits for is the writer thread's: hashing outputs
            // and committing sixteen records here would hold up the thread that ended the job
            // (the process monitor: its next reap, and at -j1 the next job's start).
            let handsOver = handingOver || canWait
            writer.drainer = handsOver ? Self.handingOver : pthread_self()
            return handsOver ? .handOver : .drain
        }
        switch next {
        case .nothing: break
        case .drain: drain(rounds: 2)
        case .handOver: handOver()
        case .armTimer: armTimer()
        }
    }

    /// In ``batchDelay`` (or the delay given to the state), the writer thread commits whatever
    /// waits then.
    private func armTimer() {
        writerThread.run(after: commitWait) { [self] in
            let drains = writer.withLock { writer -> Bool in
                writer.timerArmed = false
                guard writer.drainer == nil, !writer.pending.isEmpty else { return false }
                writer.due = true
                writer.drainer = pthread_self()
                return true
            }
            if drains { drain(rounds: nil) }
        }
    }

    /// Starts the writer thread on what is waiting; the drainer is ``handingOver`` meanwhile.
    private func handOver() {
        writerThread.run { [self] in
            writer.withLock { $0.drainer = pthread_self() }
            drain(rounds: nil)
        }
    }

    /// Makes every waiting write, commits them in one transaction, then runs their `committed`
    /// blocks; again while more came meanwhile, `rounds` times at most (`nil`: no limit), after
    /// which the writer thread takes over.
    private func drain(rounds: Int?) {
        var round = 0
        while true {
            // The next batch; or none, and whether the rest goes to the writer thread (decided
            // here, under the lock: once the drainer is given up, another thread may take it).
            let (batch, handsOver, armsTimer) = writer.withLock { writer -> ([PendingWrite]?, Bool, Bool) in
                // Writes that can wait, and only those, are left to a later commit.
                guard writer.due, !writer.pending.isEmpty else {
                    writer.drainer = nil
                    return (nil, false, !writer.pending.isEmpty && writer.claimTimer())
                }
                if let rounds, round == rounds {
                    // The writer thread names itself the drainer as it begins.
                    writer.drainer = Self.handingOver
                    return (nil, true, false)
                }
                writer.due = false
                defer { writer.pending.removeAll(keepingCapacity: true) }
                return (writer.pending, false, false)
            }
            guard let batch else {
                if handsOver { handOver() }
                if armsTimer { armTimer() }
                return
            }
            round += 1
            let writes = batch.compactMap { $0.make() }
            if writes.contains(where: { $0.key != nil || $0.duration != nil || !$0.files.isEmpty }) { commit(writes) }
            for pending in batch { pending.committed() }
        }
    }

    /// One job's rows: its record (none when `key` is `nil`), the files hashed with it, and how
    /// long its task's job ran.
    fileprivate struct JobWrite: Sendable {
        var key: String?
        var record: [UInt8]
        var files: [String: HashedFile?]
        var duration: (task: String, nanoseconds: Int64)? = nil
    }

    /// A write queued for the writer, and what runs once it is committed.
    private struct PendingWrite: Sendable {
        var make: @Sendable () -> JobWrite?
        var committed: @Sendable () -> Void
    }

    /// The writes waiting, and the thread writing (`nil`: none).
    private struct Writer: Sendable {
        var drainer: pthread_t?
        var pending: [PendingWrite] = []
        /// Whether the next commit is due now: a write waits that can't wait, or ``batchLimit``
        /// writes wait, or the timer fired. Otherwise every write waiting can wait, and waits,
        /// for at most ``batchDelay`` (the timer).
        var due = false
        /// The writer thread will commit what waits, ``batchDelay`` after a write that can wait
        /// found no timer armed.
        var timerArmed = false

        /// Notes a timer armed, for the caller to arm (``BuildState/armTimer()``); `false` if one
        /// already is.
        mutating func claimTimer() -> Bool {
            if timerArmed { return false }
            timerArmed = true
            return true
        }
    }

    private let writer = HostMutex(Writer())
    /// The drainer while the writer thread is being handed the rest: no thread's id.
    private static let handingOver = pthread_t(0)
    /// The writer thread, for what a job's thread leaves (see
    /// ``record(making:handingOver:canWait:committed:)``).
    private let writerThread = SerialThread()

    private static let insertJob = "INSERT OR REPLACE INTO jobs(key, record) VALUES (?1, ?2)"
    private static let insertFile = """
        INSERT OR REPLACE INTO files(path, modified, changed, size, inode, device, hash_high, hash_low, hashed_at, algorithm)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        """
    private static let deleteFile = "DELETE FROM files WHERE path = ?1"
    private static let insertDuration = "INSERT OR REPLACE INTO durations(task, nanoseconds) VALUES (?1, ?2)"

    /// Writes `batch` in one transaction, with statements prepared once and kept.
    private func commit(_ batch: [JobWrite]) {
        connection.withLock { handle in
            guard handle.database != nil else { return }
            // BEGIN and COMMIT are kept prepared too: `sqlite3_exec` parsed each anew, 3,600
            // instructions a transaction.
            guard let begin = cachedStatement("BEGIN", &handle) else { return cannotRecord(&handle) }
            guard step(begin, &handle) else { return }
            for write in batch {
                if let key = write.key {
                    guard let statement = cachedStatement(Self.insertJob, &handle) else { return cannotRecord(&handle) }
                    Self.bind(key, to: statement, at: 1)
                    _ = write.record.withUnsafeBytes {
                        sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), Self.transient)
                    }
                    guard step(statement, &handle) else { return }
                }
                if let (task, nanoseconds) = write.duration {
                    guard let statement = cachedStatement(Self.insertDuration, &handle) else {
                        return cannotRecord(&handle)
                    }
                    Self.bind(task, to: statement, at: 1)
                    sqlite3_bind_int64(statement, 2, nanoseconds)
                    guard step(statement, &handle) else { return }
                }
                for (path, file) in write.files {
                    guard let statement = cachedStatement(file == nil ? Self.deleteFile : Self.insertFile, &handle)
                    else { return cannotRecord(&handle) }
                    if let file {
                        Self.bind(file, at: path, to: statement)
                    } else {
                        Self.bind(path, to: statement, at: 1)
                    }
                    guard step(statement, &handle) else { return }
                }
            }
            guard let commit = cachedStatement("COMMIT", &handle) else { return cannotRecord(&handle) }
            guard step(commit, &handle) else { return }
            handle.commits.records += batch.count(where: { $0.key != nil })
            handle.commits.transactions += 1
        }
    }

    /// How many job records this state committed, in how many transactions: `KILN_DEBUG=state`.
    ///
    /// Threading: a value type.
    public struct Commits: Sendable, Equatable, CustomStringConvertible {
        /// Job records committed.
        public var records = 0
        /// Transactions that committed them (and the file hashes and durations with them).
        public var transactions = 0

        /// Counts: `records` job records in `transactions` commits.
        public init(records: Int = 0, transactions: Int = 0) {
            self.records = records
            self.transactions = transactions
        }

        /// One line.
        public var description: String { "\(records) job records in \(transactions) commits" }
    }

    /// The records committed so far, and in how many commits.
    public var commits: Commits { connection.withLock { $0.commits } }

    /// Runs a kept write statement and resets it; on failure, closes the database as a failed
    /// write does (``damaged(_:)`` or ``cannotRecord(_:)``: the open transaction goes with it)
    /// and returns false.
    private func step(_ statement: OpaquePointer, _ handle: inout Handle) -> Bool {
        let status = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard status == SQLITE_DONE || status == SQLITE_ROW else {
            if Self.isDamage(status) { damaged(&handle) } else { cannotRecord(&handle) }
            return false
        }
        return true
    }

    /// `sql` prepared, from the handle's cache (prepared and kept on first use).
    private func cachedStatement(_ sql: String, _ handle: inout Handle) -> OpaquePointer? {
        if let cached = handle.cached[sql] { return cached }
        guard let prepared = prepare(sql, &handle) else { return nil }
        handle.cached[sql] = prepared
        return prepared
    }

    /// Binds a file's row to the ten parameters of ``insertFile``.
    private static func bind(_ file: HashedFile, at path: String, to statement: OpaquePointer) {
        bind(path, to: statement, at: 1)
        sqlite3_bind_int64(statement, 2, file.stat.modified)
        sqlite3_bind_int64(statement, 3, file.stat.changed)
        sqlite3_bind_int64(statement, 4, file.stat.size)
        sqlite3_bind_int64(statement, 5, Int64(bitPattern: file.stat.inode))
        sqlite3_bind_int64(statement, 6, Int64(bitPattern: file.stat.device))
        sqlite3_bind_int64(statement, 7, Int64(bitPattern: file.hash.high))
        sqlite3_bind_int64(statement, 8, Int64(bitPattern: file.hash.low))
        sqlite3_bind_int64(statement, 9, file.hashedAt)
        sqlite3_bind_int64(statement, 10, Int64(file.algorithm.rawValue))
    }

    /// Forgets a job (its outputs were removed, or it failed).
    public func remove(key: String) {
        execute("DELETE FROM jobs WHERE key = ?1") { Self.bind(key, to: $0, at: 1) }
    }

    /// Saves file hashes in one transaction; `nil` forgets a file.
    public func save(changedFiles: [String: HashedFile?]) {
        guard !changedFiles.isEmpty else { return }
        groupSave(JobWrite(key: nil, record: [], files: changedFiles))
    }

    /// Saves file hashes in one transaction.
    public func save(files: [String: HashedFile]) {
        save(changedFiles: files.mapValues { $0 })
    }

    /// Removes every record (`kiln clean`).
    public func clear() {
        connection.withLock { handle in
            guard let database = handle.database else { return }
            sqlite3_exec(database, "DELETE FROM jobs; DELETE FROM files;", nil, nil, nil)
        }
    }

    // MARK: SQLite

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Opens, checks and prepares the database; `nil` if it is unusable.
    /// Why SQLite failed: its extended error code and the system's `errno` behind it.
    struct Failure: Sendable {
        var code: Int32
        var systemError: Int32

        init(_ database: OpaquePointer?, fallback: Int32 = SQLITE_ERROR) {
            code = database.map { sqlite3_extended_errcode($0) } ?? fallback
            systemError = database.map { sqlite3_system_errno($0) } ?? 0
        }
    }

    /// The open database, or `nil` and why not.
    private static func openDatabase(_ path: String) -> (OpaquePointer?, Failure) {
        var database: OpaquePointer?
        let opened = sqlite3_open_v2(
            path,
            &database,
            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
            nil
        )
        guard opened == SQLITE_OK, let database else {
            let failure = Failure(database, fallback: opened)
            sqlite3_close_v2(database)
            return (nil, failure)
        }
        sqlite3_extended_result_codes(database, 1)
        sqlite3_busy_timeout(database, 5000)
        // WITHOUT ROWID: the key is the row, with no second index beside it (a third smaller).
        let setup = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -256;
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            """
        let tables = """
            CREATE TABLE IF NOT EXISTS jobs(key TEXT PRIMARY KEY, record BLOB NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, modified INTEGER, changed INTEGER, size INTEGER,
                inode INTEGER, device INTEGER, hash_high INTEGER, hash_low INTEGER, hashed_at INTEGER, algorithm INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS durations(task TEXT PRIMARY KEY, nanoseconds INTEGER NOT NULL) WITHOUT ROWID;
            """
        // No `quick_check` here: it reads the whole file on every run. Damage shows up as
        // SQLITE_CORRUPT or SQLITE_NOTADB when a page is used, and is handled there.
        guard sqlite3_exec(database, setup, nil, nil, nil) == SQLITE_OK,
            sqlite3_exec(database, tables, nil, nil, nil) == SQLITE_OK
        else {
            let failure = Failure(database)
            sqlite3_close_v2(database)
            return (nil, failure)
        }
        // A state of another format (or another hash algorithm) can't be trusted: start over.
        let expected = "\(format)/\(ContentHash.algorithm)"
        var current: String?
        var statement: OpaquePointer?
        if sqlite3_prepare_v2(database, "SELECT value FROM meta WHERE key = 'format'", -1, &statement, nil)
            == SQLITE_OK,
            sqlite3_step(statement) == SQLITE_ROW
        {
            current = text(statement, 0)
        }
        sqlite3_finalize(statement)
        if current != expected {
            let reset =
                "DROP TABLE jobs; DROP TABLE files; DROP TABLE durations; \(tables) INSERT OR REPLACE INTO meta(key, value) VALUES ('format', '\(expected)');"
            guard sqlite3_exec(database, reset, nil, nil, nil) == SQLITE_OK else {
                let failure = Failure(database)
                sqlite3_close_v2(database)
                return (nil, failure)
            }
        }
        return (database, Failure(nil, fallback: SQLITE_OK))
    }

    private func query(_ sql: String, row: (OpaquePointer) -> Void) {
        connection.withLock { handle in
            guard let statement = prepare(sql, &handle) else { return }
            defer { sqlite3_finalize(statement) }
            var status = sqlite3_step(statement)
            while status == SQLITE_ROW {
                row(statement)
                status = sqlite3_step(statement)
            }
            if Self.isDamage(status) { damaged(&handle) }
        }
    }

    /// Prepares `sql` on the open database; `nil` when there is none or it can't be prepared
    /// (damage found then moves the database aside).
    private func prepare(_ sql: String, _ handle: inout Handle) -> OpaquePointer? {
        guard let database = handle.database else { return nil }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            if Self.isDamage(sqlite3_errcode(database)) { damaged(&handle) }
            return nil
        }
        return statement
    }

    /// Runs a one-row lookup with a statement prepared once and kept.
    private func lookup(_ sql: String, _ key: String, row: (OpaquePointer) -> Void) {
        connection.withLock { handle in
            let statement: OpaquePointer
            if let cached = handle.cached[sql] {
                statement = cached
            } else {
                guard let prepared = prepare(sql, &handle) else { return }
                handle.cached[sql] = prepared
                statement = prepared
            }
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            Self.bind(key, to: statement, at: 1)
            let status = sqlite3_step(statement)
            if status == SQLITE_ROW { row(statement) } else if Self.isDamage(status) { damaged(&handle) }
        }
    }

    private func execute(_ sql: String, bind: (OpaquePointer) -> Void) {
        connection.withLock { handle in
            guard let statement = prepare(sql, &handle) else { return }
            defer { sqlite3_finalize(statement) }
            bind(statement)
            let status = sqlite3_step(statement)
            if Self.isDamage(status) {
                damaged(&handle)
            } else if status != SQLITE_DONE, status != SQLITE_ROW {
                cannotRecord(&handle)
            }
        }
    }

    /// A write failed for want of room or permission (not damage): said once, the database is
    /// closed, and the run goes on without recording — the next run redoes what this one
    /// couldn't remember.
    private func cannotRecord(_ handle: inout Handle) {
        guard let database = handle.database else { return }
        let code = Failure(database)
        for statement in handle.cached.values { sqlite3_finalize(statement) }
        handle.cached = [:]
        sqlite3_close_v2(database)
        handle = Handle(database: nil)
        warn(
            "kiln: can't record results in the build state \(path): \(Self.describe(code)); the next run redoes what this one couldn't record"
        )
    }

    /// What a failure means for the user: the system's reason when there is one (a full disk is
    /// "No space left on device", however SQLite classes it).
    static func describe(_ failure: Failure) -> String {
        if failure.systemError == ENOSPC || failure.systemError == EDQUOT {
            return "the disk is full (\(String(cString: strerror(failure.systemError)))); free some space"
        }
        if failure.systemError == EROFS || failure.systemError == EACCES {
            return
                "it is read-only (\(String(cString: strerror(failure.systemError)))); kiln must be able to write .kiln/"
        }
        let code = failure.code
        let reason = String(cString: sqlite3_errstr(code))
        switch code & 0xff {
        case SQLITE_FULL: return "the disk is full (\(reason)); free some space"
        case SQLITE_READONLY, SQLITE_PERM: return "it is read-only (\(reason)); kiln must be able to write .kiln/"
        case SQLITE_CANTOPEN: return "it can't be opened (\(reason)); check that .kiln/ is writable"
        case SQLITE_IOERR: return "an I/O error (\(reason)); the disk may be full or failing"
        default: return reason
        }
    }

    /// The number of rows of a table (to size what loads it).
    private func count(of table: String) -> Int {
        var result = 0
        query("SELECT count(*) FROM \(table)") { result = Int(sqlite3_column_int64($0, 0)) }
        return result
    }

    private static func isDamage(_ status: Int32) -> Bool {
        status & 0xff == SQLITE_CORRUPT || status & 0xff == SQLITE_NOTADB
    }

    /// Binds `text` whole: a job key may hold a NUL (``JobKey/stored``), which a C string would end at.
    private static func bind(_ text: String, to statement: OpaquePointer?, at index: Int32) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                _ = sqlite3_bind_text(statement, index, "", 0, transient)
                return
            }
            _ = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_bind_text(statement, index, $0, Int32(bytes.count), transient)
            }
        }
    }

    /// A text column whole (it may hold a NUL, as ``bind(_:to:at:)`` allows).
    private static func text(_ statement: OpaquePointer?, _ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    private static func blob(_ statement: OpaquePointer?, _ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    // MARK: Record encoding

    static func encodeRecord(_ record: JobRecord) -> [UInt8] {
        var writer = BinaryWriter()
        writer.write(record.signature.high)
        writer.write(record.signature.low)
        writer.write(Int(record.finishedAt))
        writer.write(record.definition.high)
        writer.write(record.definition.low)
        func write(_ table: [String: ContentHash]) {
            writer.write(table.count)
            for (path, hash) in table.sorted(by: { $0.key < $1.key }) {
                writer.write(path)
                writer.write(hash.high)
                writer.write(hash.low)
            }
        }
        // File hashes carry their algorithm: one byte before the hash.
        func write(_ table: [String: FileDigest]) {
            writer.write(table.count)
            for (path, digest) in table.sorted(by: { $0.key < $1.key }) {
                writer.write(path)
                writer.write(byte: digest.algorithm.rawValue)
                writer.write(digest.hash.high)
                writer.write(digest.hash.low)
            }
        }
        write(record.outputs)
        write(record.inputs)
        write(record.dependencies)
        write(record.discovered)
        return writer.bytes
    }

    static func decodeRecord(_ bytes: [UInt8]) -> JobRecord? {
        var reader = BinaryReader(bytes: bytes)
        guard let high = reader.readUInt64(), let low = reader.readUInt64(), let finishedAt = reader.readInteger(),
            let definitionHigh = reader.readUInt64(), let definitionLow = reader.readUInt64()
        else { return nil }
        func hashes() -> [String: ContentHash]? {
            guard let count = reader.readInteger(), count >= 0, count <= bytes.count else { return nil }
            var table: [String: ContentHash] = [:]
            for _ in 0..<count {
                guard let path = reader.readString(), let entryHigh = reader.readUInt64(),
                    let entryLow = reader.readUInt64()
                else { return nil }
                table[path] = ContentHash(high: entryHigh, low: entryLow)
            }
            return table
        }
        func digests() -> [String: FileDigest]? {
            guard let count = reader.readInteger(), count >= 0, count <= bytes.count else { return nil }
            var table: [String: FileDigest] = [:]
            for _ in 0..<count {
                guard let path = reader.readString(), let byte = reader.readByte(),
                    let algorithm = HashAlgorithm(rawValue: byte),
                    let entryHigh = reader.readUInt64(), let entryLow = reader.readUInt64()
                else { return nil }
                table[path] = FileDigest(ContentHash(high: entryHigh, low: entryLow), algorithm)
            }
            return table
        }
        guard let outputs = hashes(), let inputs = digests(), let dependencies = hashes(), let discovered = digests(),
            reader.offset == bytes.count
        else { return nil }
        return JobRecord(
            signature: ContentHash(high: high, low: low),
            outputs: outputs,
            finishedAt: Int64(finishedAt),
            definition: ContentHash(high: definitionHigh, low: definitionLow),
            inputs: inputs,
            dependencies: dependencies,
            discovered: discovered
        )
    }
}

/// The project's run lock: `.kiln/lock`, held with `flock` while a kiln command changes the
/// project's state. It holds the holder's process id, named when another run finds it taken.
///
/// Threading: immutable; released when the value is freed (or the process exits).
public final class ProjectLock: Sendable {
    /// The lock file, open and locked; -1 once released.
    private let descriptor: HostMutex<Int32>

    /// Takes the lock of the project at `root`, creating `.kiln` when needed.
    ///
    /// - Parameters:
    ///   - wait: Wait for another run holding it instead of failing.
    ///   - waitLimit: With `wait`, give up after this many seconds (`nil`: never).
    ///   - waiting: Called once, with who holds the lock, when the wait begins.
    /// - Throws: ``BuildStateError`` when another run holds it (and `wait` is false), or `.kiln`
    ///   can't be created.
    public init(
        root: String,
        wait: Bool,
        waitLimit: Double? = nil,
        waiting: ((_ holder: String) -> Void)? = nil
    ) throws(BuildStateError) {
        let kiln = KilnDirectory(root: root)
        let made = kiln.create()
        if made != 0 {
            throw BuildStateError(message: Self.unwritable(kiln.path, made))
        }
        let path = kiln.lock
        let descriptor = RunLockFile.open(path, create: true)
        guard descriptor >= 0 else {
            throw BuildStateError(message: Self.unwritable(path, -descriptor))
        }
        // Polled rather than blocked on, so a wait can be bounded and said once.
        let deadline = waitLimit.map { FileHasher.realTime() + Int64($0 * 1e9) }
        var said = false
        while !RunLockFile.take(descriptor) {
            let who = RunLockFile.holder(descriptor)
            if wait, deadline.map({ FileHasher.realTime() < $0 }) ?? true {
                if !said {
                    waiting?(who)
                    said = true
                }
                usleep(50_000)
                continue
            }
            Glibc.close(descriptor)
            let advice =
                wait
                ? "it was still running after \(Int(waitLimit ?? 0)) s"
                : "wait for it to finish, or pass --wait to wait for it"
            throw BuildStateError(message: "\(who) is using this project; \(advice)", isBusy: true)
        }
        self.descriptor = HostMutex(descriptor)
    }

    /// Lets another run in: the session is over. Releasing twice does nothing.
    ///
    /// Threading: any thread.
    public func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            RunLockFile.release(descriptor)
            descriptor = -1
        }
    }

    /// What to say when `path` under `.kiln/` can't be made or opened for `error`.
    static func unwritable(_ path: String, _ error: Int32) -> String {
        let reason = String(cString: strerror(error))
        switch error {
        case EROFS, EACCES, EPERM:
            return
                "can't write kiln's state at \(path): \(reason); kiln keeps its build state in .kiln/ and must be able to write it — make it writable (or remove it), or run kiln on a writable copy"
        case ENOSPC, EDQUOT:
            return "can't write kiln's state at \(path): \(reason) (the disk is full); free some space and run again"
        default:
            return "can't write kiln's state at \(path): \(reason)"
        }
    }

    deinit {
        release()
    }
}

extension String {
    fileprivate var trimmingNewlines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " { text.removeLast() }
        return String(text)
    }
}
