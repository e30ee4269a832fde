import CSQLite
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
    /// Its inputs' hashes, by path relative to its directory.
    public var inputs: [String: ContentHash]
    /// Its dependencies' output signatures, by task name.
    public var dependencies: [String: ContentHash]
    /// Inputs its depfile named (headers a compile read), by path: inputs of its next run.
    public var discovered: [String: ContentHash]

    /// Creates a record.
    public init(
        signature: ContentHash, outputs: [String: ContentHash], finishedAt: Int64,
        definition: ContentHash = ContentHash(high: 0, low: 0), inputs: [String: ContentHash] = [:],
        dependencies: [String: ContentHash] = [:], discovered: [String: ContentHash] = [:]
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
    /// The message.
    public var description: String { message }
}

/// The project's build state: an SQLite database in write-ahead-log mode under `.kiln/`.
///
/// - Each job's record is committed on its own as the job finishes, so a `kill -9` at any moment
///   loses at most the jobs that were running; the next run redoes only those.
/// - A database that can't be opened, fails SQLite's `quick_check`, or has another format is moved
///   aside (`state.db.corrupt-<time>`) with a warning, and the run starts from an empty state —
///   a full build, never a crash, never work skipped on a record that can't be trusted.
/// - One run at a time per project: `.kiln/lock` is held with `flock` for the whole run. A second
///   run fails at once naming the first one's process, or waits for it (`wait: true`).
///
/// Threading: every member from any thread; the connection is used under its mutex.
public final class BuildState: @unchecked Sendable {
    /// Bump when the tables or the record encoding change: an older state is then discarded.
    static let format = "3"

    /// The database file.
    public let path: String
    /// The SQLite handle. `@unchecked Sendable`: it is only used under `connection`'s mutex.
    private struct Handle: @unchecked Sendable {
        var database: OpaquePointer?
    }

    private let connection: Mutex<Handle>
    private let lockDescriptor: Int32

    /// Opens (or creates) the state of the project at `root`.
    ///
    /// - Parameters:
    ///   - root: The project root; the state goes in `root/.kiln/`.
    ///   - wait: Wait for another run holding the project instead of failing.
    ///   - warn: Receives a line when a broken database is moved aside.
    /// - Throws: ``BuildStateError`` when another run holds the project (and `wait` is false), or
    ///   `.kiln` can't be created.
    public init(root: String, wait: Bool = false, warn: (String) -> Void) throws(BuildStateError) {
        let directory = root + "/.kiln"
        if mkdir(directory, 0o755) != 0, errno != EEXIST {
            throw BuildStateError(message: "can't create \(directory): \(String(cString: strerror(errno)))")
        }
        path = directory + "/state.db"
        lockDescriptor = try Self.lock(directory + "/lock", wait: wait)
        var database = Self.openDatabase(path)
        if database == nil {
            let aside = path + ".corrupt-\(FileHasher.realTime() / 1_000_000_000)"
            for suffix in ["", "-wal", "-shm"] { rename(path + suffix, aside + suffix) }
            warn("kiln: the build state \(path) is unreadable or damaged; moved it to \(aside) and starting a full build")
            database = Self.openDatabase(path)
        }
        connection = Mutex(Handle(database: database))
        if database == nil {
            warn("kiln: can't create the build state \(path); this run will rebuild everything and remember nothing")
        }
    }

    /// Folds the write-ahead log into the database and closes it, so `.kiln` holds one compact
    /// file. kiln calls it before exiting (it exits without running deinitializers).
    public func close() {
        connection.withLock { handle in
            guard let database = handle.database else { return }
            sqlite3_exec(database, "PRAGMA wal_checkpoint(TRUNCATE)", nil, nil, nil)
            sqlite3_close_v2(database)
            handle.database = nil
        }
    }

    deinit {
        connection.withLock { handle in
            if let database = handle.database { sqlite3_close_v2(database) }
            handle.database = nil
        }
        flock(lockDescriptor, LOCK_UN)
        Glibc.close(lockDescriptor)
    }

    // MARK: Records

    /// Every job record, by job key.
    public func loadJobs() -> [String: JobRecord] {
        var result: [String: JobRecord] = [:]
        query("SELECT key, record FROM jobs") { statement in
            guard let key = Self.text(statement, 0), let record = Self.decodeRecord(Self.blob(statement, 1)) else { return }
            result[key] = record
        }
        return result
    }

    /// Every recorded file hash, by path.
    public func loadFiles() -> [String: HashedFile] {
        var result: [String: HashedFile] = [:]
        query("SELECT path, modified, changed, size, inode, hash_high, hash_low, hashed_at FROM files") { statement in
            guard let path = Self.text(statement, 0) else { return }
            let stat = FileStat(
                modified: sqlite3_column_int64(statement, 1), changed: sqlite3_column_int64(statement, 2),
                size: sqlite3_column_int64(statement, 3), inode: UInt64(bitPattern: sqlite3_column_int64(statement, 4))
            )
            let hash = ContentHash(
                high: UInt64(bitPattern: sqlite3_column_int64(statement, 5)),
                low: UInt64(bitPattern: sqlite3_column_int64(statement, 6))
            )
            result[path] = HashedFile(stat: stat, hash: hash, hashedAt: sqlite3_column_int64(statement, 7))
        }
        return result
    }

    /// Saves a job's record, committed before this returns.
    public func save(_ record: JobRecord, for key: String) {
        let encoded = Self.encodeRecord(record)
        execute("INSERT OR REPLACE INTO jobs(key, record) VALUES (?1, ?2)") { statement in
            sqlite3_bind_text(statement, 1, key, -1, Self.transient)
            _ = encoded.withUnsafeBytes { sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), Self.transient) }
        }
    }

    /// Forgets a job (its outputs were removed, or it failed).
    public func remove(key: String) {
        execute("DELETE FROM jobs WHERE key = ?1") { sqlite3_bind_text($0, 1, key, -1, Self.transient) }
    }

    /// Saves file hashes in one transaction; `nil` forgets a file.
    public func save(changedFiles: [String: HashedFile?]) {
        var present: [String: HashedFile] = [:]
        var gone: [String] = []
        for (path, file) in changedFiles {
            if let file { present[path] = file } else { gone.append(path) }
        }
        save(files: present)
        for path in gone {
            execute("DELETE FROM files WHERE path = ?1") { sqlite3_bind_text($0, 1, path, -1, Self.transient) }
        }
    }

    /// Saves file hashes in one transaction.
    public func save(files: [String: HashedFile]) {
        guard !files.isEmpty else { return }
        connection.withLock { handle in
            guard let database = handle.database else { return }
            sqlite3_exec(database, "BEGIN", nil, nil, nil)
            var statement: OpaquePointer?
            let sql = "INSERT OR REPLACE INTO files(path, modified, changed, size, inode, hash_high, hash_low, hashed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            if sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK {
                for (path, file) in files {
                    sqlite3_reset(statement)
                    sqlite3_bind_text(statement, 1, path, -1, Self.transient)
                    sqlite3_bind_int64(statement, 2, file.stat.modified)
                    sqlite3_bind_int64(statement, 3, file.stat.changed)
                    sqlite3_bind_int64(statement, 4, file.stat.size)
                    sqlite3_bind_int64(statement, 5, Int64(bitPattern: file.stat.inode))
                    sqlite3_bind_int64(statement, 6, Int64(bitPattern: file.hash.high))
                    sqlite3_bind_int64(statement, 7, Int64(bitPattern: file.hash.low))
                    sqlite3_bind_int64(statement, 8, file.hashedAt)
                    sqlite3_step(statement)
                }
            }
            sqlite3_finalize(statement)
            sqlite3_exec(database, "COMMIT", nil, nil, nil)
        }
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
    private static func openDatabase(_ path: String) -> OpaquePointer? {
        var database: OpaquePointer?
        guard sqlite3_open_v2(path, &database, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
            let database
        else {
            sqlite3_close_v2(database)
            return nil
        }
        sqlite3_busy_timeout(database, 5000)
        let setup = """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            PRAGMA cache_size = -256;
            CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS jobs(key TEXT PRIMARY KEY, record BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS files(path TEXT PRIMARY KEY, modified INTEGER, changed INTEGER, size INTEGER,
                inode INTEGER, hash_high INTEGER, hash_low INTEGER, hashed_at INTEGER);
            """
        guard quickCheck(database), sqlite3_exec(database, setup, nil, nil, nil) == SQLITE_OK else {
            sqlite3_close_v2(database)
            return nil
        }
        // A state of another format (or another hash algorithm) can't be trusted: start over.
        let expected = "\(format)/\(ContentHash.algorithm)"
        var current: String?
        var statement: OpaquePointer?
        if sqlite3_prepare_v2(database, "SELECT value FROM meta WHERE key = 'format'", -1, &statement, nil) == SQLITE_OK,
            sqlite3_step(statement) == SQLITE_ROW
        {
            current = text(statement, 0)
        }
        sqlite3_finalize(statement)
        if current != expected {
            let reset = "DELETE FROM jobs; DELETE FROM files; INSERT OR REPLACE INTO meta(key, value) VALUES ('format', '\(expected)');"
            guard sqlite3_exec(database, reset, nil, nil, nil) == SQLITE_OK else {
                sqlite3_close_v2(database)
                return nil
            }
        }
        return database
    }

    private static func quickCheck(_ database: OpaquePointer) -> Bool {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(database, "PRAGMA quick_check", -1, &statement, nil) == SQLITE_OK,
            sqlite3_step(statement) == SQLITE_ROW
        else { return false }
        return text(statement, 0) == "ok"
    }

    private func query(_ sql: String, row: (OpaquePointer) -> Void) {
        connection.withLock { handle in
            guard let database = handle.database else { return }
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return }
            defer { sqlite3_finalize(statement) }
            while sqlite3_step(statement) == SQLITE_ROW { row(statement) }
        }
    }

    private func execute(_ sql: String, bind: (OpaquePointer) -> Void) {
        connection.withLock { handle in
            guard let database = handle.database else { return }
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(database, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return }
            defer { sqlite3_finalize(statement) }
            bind(statement)
            sqlite3_step(statement)
        }
    }

    private static func text(_ statement: OpaquePointer?, _ column: Int32) -> String? {
        sqlite3_column_text(statement, column).map { String(cString: $0) }
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
        for table in [record.outputs, record.inputs, record.dependencies, record.discovered] {
            writer.write(table.count)
            for (path, hash) in table.sorted(by: { $0.key < $1.key }) {
                writer.write(path)
                writer.write(hash.high)
                writer.write(hash.low)
            }
        }
        return writer.bytes
    }

    static func decodeRecord(_ bytes: [UInt8]) -> JobRecord? {
        var reader = BinaryReader(bytes: bytes)
        guard let high = reader.readUInt64(), let low = reader.readUInt64(), let finishedAt = reader.readInteger(),
            let definitionHigh = reader.readUInt64(), let definitionLow = reader.readUInt64()
        else { return nil }
        var tables: [[String: ContentHash]] = []
        for _ in 0..<4 {
            guard let count = reader.readInteger(), count >= 0, count <= bytes.count else { return nil }
            var table: [String: ContentHash] = [:]
            for _ in 0..<count {
                guard let path = reader.readString(), let entryHigh = reader.readUInt64(), let entryLow = reader.readUInt64()
                else { return nil }
                table[path] = ContentHash(high: entryHigh, low: entryLow)
            }
            tables.append(table)
        }
        guard reader.offset == bytes.count else { return nil }
        return JobRecord(
            signature: ContentHash(high: high, low: low), outputs: tables[0], finishedAt: Int64(finishedAt),
            definition: ContentHash(high: definitionHigh, low: definitionLow), inputs: tables[1], dependencies: tables[2],
            discovered: tables[3]
        )
    }

    // MARK: The run lock

    private static func lock(_ path: String, wait: Bool) throws(BuildStateError) -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw BuildStateError(message: "can't open \(path): \(String(cString: strerror(errno)))")
        }
        while flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
            if errno == EINTR { continue }
            var holder = [UInt8](repeating: 0, count: 32)
            let count = holder.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
            let pid = String(decoding: holder.prefix(max(0, count)), as: UTF8.self).trimmingNewlines
            Glibc.close(descriptor)
            throw BuildStateError(
                message: "another kiln run\(pid.isEmpty ? "" : " (pid \(pid))") is using this project; "
                    + "wait for it to finish, or pass --wait to wait for it"
            )
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return descriptor
    }
}

extension String {
    fileprivate var trimmingNewlines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " { text.removeLast() }
        return String(text)
    }
}
