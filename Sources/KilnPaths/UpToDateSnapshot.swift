import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A file or directory a job's up-to-date verdict rests on, as it was when the verdict was made.
///
/// Threading: a value type.
public struct WatchedPath: Sendable, Equatable {
    /// What was there.
    public enum Kind: UInt8, Sendable {
        /// Nothing: it must still not exist.
        case absent = 0
        /// A file with ``WatchedPath/hash`` as its content.
        case file = 1
        /// A directory a glob read: its entries must be the same.
        case directory = 2
        /// A file whose hash is its git blob id, from the index: unchanged only while its status
        /// is (reading it can't tell without git; the job's check can).
        case trackedFile = 3
    }

    /// Project-relative (or absolute, outside the project).
    public var path: String
    /// What was there.
    public var kind: Kind
    /// Its status then (zero when absent).
    public var stat: FileSignature
    /// A file's content hash; a directory's entries' fingerprint
    /// (``DirectoryListing/fingerprint(_:)``), or zero when it has none; zero otherwise.
    public var hash: ContentHash
    /// When the status was taken (`CLOCK_REALTIME`, ns): a status is trusted only when the mtime is
    /// older than this by more than ``FileSignature/racyWindow``.
    public var seenAt: Int64

    package static let zeroStat = FileSignature(device: 0, inode: 0, size: 0, modified: 0, changed: 0)
    package static let zeroHash = ContentHash(high: 0, low: 0)
    /// How many bytes follow the path in a record: its kind, then eight 64-bit words
    /// (``BinaryWriter/writeFields(of:)``).
    package static let fieldsSize = 1 + 8 * 8

    /// A path that didn't exist at `seenAt`.
    package init(absent path: String, seenAt: Int64) {
        self.init(path: path, kind: .absent, stat: Self.zeroStat, hash: Self.zeroHash, seenAt: seenAt)
    }

    package init(path: String, kind: Kind, stat: FileSignature, hash: ContentHash, seenAt: Int64) {
        self.path = path
        self.kind = kind
        self.stat = stat
        self.hash = hash
        self.seenAt = seenAt
    }

    /// Whether two records say the same of the path (whenever each was taken).
    package func describesSameState(as other: WatchedPath) -> Bool {
        kind == other.kind && stat == other.stat && hash == other.hash
    }

    /// What a path looks like now, against the record.
    package enum Comparison {
        /// As recorded, by `stat` alone.
        case unchanged
        /// The same content, but the status couldn't vouch for it (a racy or touched file): this
        /// record, taken now, can.
        case sameContent(WatchedPath)
        /// Different, or can't be told.
        case changed
    }

    /// Compares the path with the record: by `stat` alone when the recorded status can be
    /// trusted, and by reading a file whose status can't — or, for a file hashed through git, by
    /// asking the index (`tracked`) for its blob id. `root` resolves relative paths.
    package func compare(root: String, rootDescriptor: Int32 = AT_FDCWD, tracked: (any TrackedContent)? = nil)
        -> Comparison
    {
        let seen = FileSignature.now()
        let status =
            rootDescriptor == AT_FDCWD
            ? FileSignature.of(path.hasPrefix("/") ? path : root + "/" + path)
            : FileSignature.of(path, relativeTo: rootDescriptor)
        guard let current = status else { return kind == .absent ? .unchanged : .changed }
        switch kind {
        case .absent:
            return .changed
        case .directory:
            if current == stat, current.isSettled(at: seenAt) { return .unchanged }
            // Looked at too soon after it last changed, or touched: read again, the same entries
            // vouch for it (a status alone can't: a change in the same clock tick leaves it).
            let absolute = path.hasPrefix("/") ? path : root + "/" + path
            guard hash != Self.zeroHash, let entries = DirectoryListing.read(absolute),
                DirectoryListing.fingerprint(entries) == hash, FileSignature.of(absolute) == current
            else {
                return .changed
            }
            return .sameContent(WatchedPath(path: path, kind: .directory, stat: current, hash: hash, seenAt: seen))
        case .trackedFile:
            if current == stat, current.isSettled(at: seenAt) { return .unchanged }
            // Touched, or checked out again: the index may vouch for the same blob.
            guard let tracked, tracked.contentID(of: path, status: current) == hash else { return .changed }
            return .sameContent(WatchedPath(path: path, kind: .trackedFile, stat: current, hash: hash, seenAt: seen))
        case .file:
            if current == stat, current.isSettled(at: seenAt) { return .unchanged }
            // Read it; the status must not move while it is read, or the hash can't be pinned to it.
            let absolute = path.hasPrefix("/") ? path : root + "/" + path
            guard (try? FileContent.hash(absolute)) == hash, FileSignature.of(absolute) == current else {
                return .changed
            }
            return .sameContent(WatchedPath(path: path, kind: .file, stat: current, hash: hash, seenAt: seen))
        }
    }
}

/// What the last successful run of a set of targets left: every path each job's verdict rested
/// on, and the output signature each job and task published. Saved as `.kiln/snapshot`.
///
/// It makes the common runs cheap:
/// - **No-op.** When the Taskfile is the one the snapshot was made with, the targets are the
///   same, and every watched path is unchanged (a parallel `stat` of each), nothing can have
///   changed: kiln says so without loading the Taskfile model, planning, or opening the build
///   state — the way ninja's no-op only compares mtimes, but on content signatures.
/// - **A few changed files.** Only the jobs watching a changed path (and those whose dependencies
///   then publish a different output signature) are checked against the build state; every
///   other job is up to date as the snapshot says, without hashing or reading its record.
///
/// The snapshot is deleted as a run starts and written again when it ends successfully, so it
/// only ever describes the records and files the last complete run left; a crash leaves none.
/// It is an accelerator: without it (or with a stale one, rejected by the Taskfile identity or a
/// path's status), runs check every job against the build state and come to the same verdicts.
///
/// Threading: a value type.
public struct UpToDateSnapshot: Sendable {
    /// One job's entry.
    public struct Job: Sendable {
        /// The job's key (its label).
        public var key: String
        /// The snapshot never vouches for the job: every run checks it. Its verdict rests on
        /// what no path covers (it always runs, or has `status:`), or its check gave a warning
        /// the next run must give again (a `sources:` pattern matched no file).
        public var checkedEveryRun: Bool
        /// Indices into ``UpToDateSnapshot/paths``.
        public var paths: [Int32]

        package init(key: String, checkedEveryRun: Bool, paths: [Int32]) {
            self.key = key
            self.checkedEveryRun = checkedEveryRun
            self.paths = paths
        }
    }

    /// Identifies the Taskfile files and their contents (see ``TaskfileCacheHeader/identity(taskfilePath:root:holds:)``).
    public var taskfileIdentity: ContentHash
    /// The targets the run was given (empty: `default`).
    public var targets: [String]
    /// Every watched path.
    public var paths: [WatchedPath]
    /// Every job the run settled.
    public var jobs: [Job]
    /// The output signatures published by job key and by task name.
    public var published: [String: ContentHash]
    /// Whether every job of the run is in ``jobs``: only then can a run be a no-op on its word.
    public var complete: Bool
    /// How many jobs there are (``jobs`` may not be read yet).
    public var jobCount: Int
    /// Whether a job is checked on every run (then no run is a no-op).
    public var anyCheckedEveryRun: Bool
    /// Whether a task the run was given says `watch: true`: a no-op run of it goes on watching.
    public var watches = false

    package init(
        taskfileIdentity: ContentHash,
        targets: [String],
        paths: [WatchedPath],
        jobs: [Job],
        published: [String: ContentHash],
        complete: Bool,
        jobCount: Int,
        anyCheckedEveryRun: Bool
    ) {
        self.taskfileIdentity = taskfileIdentity
        self.targets = targets
        self.paths = paths
        self.jobs = jobs
        self.published = published
        self.complete = complete
        self.jobCount = jobCount
        self.anyCheckedEveryRun = anyCheckedEveryRun
    }

    package static let magic = Array("KILNSNP\u{4}".utf8)
    /// Bump when the encoding or the meaning of the snapshot changes.
    package static let formatVersion = 4

    /// The snapshot file of a project.
    public static func path(root: String) -> String { KilnDirectory(root: root).snapshot }

    /// Deletes the snapshot of a project (a run is about to change what it describes).
    public static func remove(root: String) {
        unlink(path(root: root))
    }

    // MARK: Checking

    /// What the paths of a snapshot look like now.
    ///
    /// Threading: a value type.
    public struct Scan: Sendable {
        /// The snapshot (without its paths and jobs after ``releasingDetail()``).
        public var snapshot: UpToDateSnapshot
        /// Keys of the jobs that watch a path that changed, or that are checked on every run (empty after
        /// ``releasingDetail()``: ``dirtyAtPosition`` says it by position).
        public var dirtyJobs: Set<String>
        /// How many watched paths changed.
        public var changedPaths: Int
        /// Where each job is in ``UpToDateSnapshot/jobs``, by key (empty for a no-op, whose jobs
        /// aren't read).
        public var jobPositions: [String: Int] = [:]
        /// Whether the key of the job at each position ``jobPositions`` gives is one of
        /// ``dirtyJobs``: asked by position, for every task a plan has, without hashing its name
        /// again.
        public var dirtyAtPosition: [Bool] = []
        /// The positions in ``UpToDateSnapshot/paths`` of the paths no job watches (a directory
        /// an `each:` task listed, a plugin the run loaded; empty for a no-op).
        public var unwatchedPaths: [Int] = []
        /// How many changed paths no job watches: what changed there is no job's, so only a whole
        /// run finds what follows.
        public var unownedChanges = 0
        /// Whether the paths were looked at by the launcher (``Handover``), not by this scan.
        public var handedOver = false
        /// The file this scan decoded, still open, and where its fixed-width fields are: a run
        /// that changes only those writes the next snapshot as a ``Patch`` of it (`nil` for a
        /// no-op).
        package var base: Base?
        /// The positions of the paths this scan re-read and found the same: its records of them
        /// are newer than the file's (``base``), which a patch rewrites.
        package var refreshed: [Int] = []
        /// Whether ``snapshot``'s paths and jobs and ``dirtyJobs`` were let go of
        /// (``releasingDetail()``): ``wholeSnapshot()`` reads them again from ``base``.
        package private(set) var detailReleased = false
        /// With the detail released, the scan's records of the ``refreshed`` paths, which the
        /// file's don't replace.
        private var refreshedRecords: [(Int, WatchedPath)] = []
        /// Held while the detail is (``DetailToken``): a copy of the scan kept somewhere holds it
        /// too, which a test can see.
        fileprivate var detailToken: DetailToken?

        /// A scan of `snapshot` that found `changedPaths` changed paths, which `dirtyJobs` watch;
        /// `handedOver` when the launcher looked at them.
        package init(snapshot: UpToDateSnapshot, dirtyJobs: Set<String>, changedPaths: Int, handedOver: Bool) {
            self.snapshot = snapshot
            self.dirtyJobs = dirtyJobs
            self.changedPaths = changedPaths
            self.handedOver = handedOver
        }
        /// Nothing changed and the snapshot covers the whole run: a run would do nothing.
        public var isNoOp: Bool {
            !detailReleased && snapshot.vouchesForWholeRun && dirtyJobs.isEmpty && changedPaths == 0
        }

        /// The scan without what only the end of a whole run needs, when that can be read again
        /// from its still open file (``base``): the snapshot's paths and jobs, and ``dirtyJobs``
        /// (``dirtyAtPosition`` says the same by position). A run of the whole plan asks the
        /// scan only for published signatures, positions and dirty flags while it runs, and
        /// the next snapshot is made as it ends: 2.7 MB of a 10k-task build's heap held the
        /// whole run for that. Unchanged when there is no file to read again.
        package func releasingDetail() -> Scan {
            guard base != nil, !detailReleased else { return self }
            var released = self
            released.refreshedRecords = refreshed.compactMap {
                snapshot.paths.indices.contains($0) ? ($0, snapshot.paths[$0]) : nil
            }
            released.snapshot.paths = []
            released.snapshot.jobs = []
            released.dirtyJobs = []
            released.detailReleased = true
            released.detailToken = nil
            return released
        }

        /// The snapshot with its paths and jobs: ``snapshot`` itself, or, after
        /// ``releasingDetail()``, decoded again from ``base`` with the scan's newer records of the
        /// paths it re-read. `nil` when the file can't be read back whole (a failing disk): the
        /// caller makes its snapshot without the previous one's jobs.
        package func wholeSnapshot() -> UpToDateSnapshot? {
            guard detailReleased else { return snapshot }
            guard let base else { return nil }
            var bytes = [UInt8](repeating: 0, count: base.count + FileChecksum.size)
            let read = bytes.withUnsafeMutableBytes { base.file.read(into: $0, at: 0) }
            guard read, FileChecksum.unseal(&bytes), let (head, tail) = UpToDateSnapshot.decodeHead(bytes) else {
                return nil
            }
            // The signatures are the ones this scan holds: not decoded again.
            var whole = consume head  // the only reference to its paths: not copied as they are set
            whole.published = snapshot.published
            var layout = Layout(recording: false)
            guard
                UpToDateSnapshot.decodeTail(bytes, from: tail, into: &whole, layout: &layout, keepingPublished: true),
                whole.jobCount == snapshot.jobCount, whole.paths.count == base.pathFieldsAt.count
            else { return nil }
            for (position, entry) in refreshedRecords { whole.paths[position] = entry }
            return whole
        }
    }

    /// An object every copy of a scan that still has its detail (paths, jobs, dirty keys) shares,
    /// counted by project root while it lives: a seam for tests, which check that a run of the
    /// whole plan holds no such copy once it has released the detail
    /// (``Scan/releasingDetail()``). A copy kept by mistake (a closure's capture) held 2.7 MB of a
    /// 10k-task build for the whole run.
    ///
    /// Threading: any thread; the counts are under a lock.
    package final class DetailToken: Sendable {
        private let root: String
        private static let live = Mutex<[String: Int]>([:])

        init(root: String) {
            self.root = root
            Self.live.withLock { $0[root, default: 0] += 1 }
        }

        deinit {
            Self.live.withLock { live in
                let left = (live[root] ?? 1) - 1
                live[root] = left > 0 ? left : nil
            }
        }

        /// How many scans of the project at `root` hold their detail now, counting copies of one
        /// as one.
        package static func held(root: String) -> Int { live.withLock { $0[root] ?? 0 } }
    }

    /// Whether, with none of its paths changed, the snapshot says a run does nothing: it covers
    /// every job of the run, and none of them is checked on every run. **The one no-op rule**, for the full
    /// command's scan and the launcher's.
    var vouchesForWholeRun: Bool { complete && !anyCheckedEveryRun }

    /// Loads the project's snapshot and checks every path it watches, in parallel; `nil` when
    /// there is none or it doesn't apply (another Taskfile, other targets, another format).
    ///
    /// - Parameters:
    ///   - root: The project root.
    ///   - taskfilePath: The main Taskfile (absolute).
    ///   - targets: The targets of this run, as given.
    ///   - mayRewrite: Whether the caller holds the project's lock, so the snapshot may be
    ///     rewritten with the fresh statuses of files it had to read (a reader without the lock
    ///     must not: a run may be replacing the snapshot meanwhile).
    ///   - tracked: The git index, which can vouch for a touched file hashed through git.
    ///   - handover: What the launcher's look at this snapshot found, so the paths aren't looked
    ///     at twice (``Handover``); ignored unless the snapshot is still the one it looked at.
    ///   - requirementHolds: Whether what the Taskfile's load read besides its files (a
    ///     requirement's key and the hash of its value then) is the same now
    ///     (``TaskfileCacheHeader/read(_:taskfilePath:holds:)``).
    package static func scan(
        root: String,
        taskfilePath: String,
        targets: [String],
        mayRewrite: Bool = true,
        tracked: (any TrackedContent)? = nil,
        handover: Handover? = nil,
        requirementHolds: (_ key: String, _ valueHash: UInt64?) -> Bool
    ) -> Scan? {
        var layout = Layout(recording: true)
        guard let (bytes, head, tail) = load(root: root, targets: targets, layout: &layout),
            identityHolds(head, root: root, taskfilePath: taskfilePath, requirementHolds)
        else { return nil }
        var snapshot = head
        let handedOver = handover.flatMap { $0.look(at: head.paths, of: bytes, root: root, tracked: tracked) }
        let (changed, refreshed) = handedOver ?? look(at: head.paths, root: root, tracked: tracked)
        if changed.isEmpty, snapshot.vouchesForWholeRun, refreshed.isEmpty {
            // A no-op: the jobs and signatures aren't needed.
            return Scan(snapshot: snapshot, dirtyJobs: [], changedPaths: 0, handedOver: handedOver != nil)
        }
        guard decodeTail(bytes, from: tail, into: &snapshot, layout: &layout) else { return nil }
        let changedPositions = Set(changed)
        var dirty = Set<String>()
        var watched = [Bool](repeating: false, count: snapshot.paths.count)
        var jobPositions: [String: Int] = [:]
        jobPositions.reserveCapacity(snapshot.jobs.count)
        for (position, job) in snapshot.jobs.enumerated() {
            jobPositions[job.key] = position
            for position in job.paths { watched[Int(position)] = true }
            if job.checkedEveryRun || job.paths.contains(where: { changedPositions.contains(Int($0)) }) {
                dirty.insert(job.key)
            }
        }
        // Files re-read because their status was too fresh to trust (every output of a build is,
        // hashed as it was written): what vouches for them now goes into the snapshot the run
        // starts from, which jobs found up to date carry into the one it writes — else every later
        // run would read them all again, until one changed nothing. With nothing changed, no
        // snapshot follows: it is written here.
        for (position, entry) in refreshed { snapshot.paths[position] = entry }
        if mayRewrite, !refreshed.isEmpty, changed.isEmpty { snapshot.write(root: root) }
        var scan = Scan(snapshot: snapshot, dirtyJobs: dirty, changedPaths: changed.count)
        scan.refreshed = refreshed.map(\.0)
        scan.base = Base(layout, count: bytes.count)
        scan.detailToken = DetailToken(root: root)
        scan.unwatchedPaths = watched.indices.filter { !watched[$0] }
        scan.unownedChanges = changed.lazy.filter { !watched[$0] }.count
        var dirtyAtPosition = [Bool](repeating: false, count: snapshot.jobs.count)
        for key in dirty { if let position = jobPositions[key] { dirtyAtPosition[position] = true } }
        scan.jobPositions = jobPositions
        scan.dirtyAtPosition = dirtyAtPosition
        scan.handedOver = handedOver != nil
        return scan
    }

    /// What the launcher's look at the snapshot found (``noOp(root:taskfilePath:targets:requirementHolds:)``).
    ///
    /// Threading: a value type.
    package enum Look {
        /// A run would do nothing: this snapshot vouches for it.
        case noOp(UpToDateSnapshot)
        /// A path the snapshot watches changed: a run has work, and here is what every path
        /// looked like, for its scan.
        case changed(Handover)
        /// No answer: no snapshot of these targets, one that doesn't vouch for the whole run, or
        /// Taskfiles that aren't the ones it was made with.
        case unknown
    }

    /// The launcher's question: whether a run of `targets` would do nothing. The same rule as ``scan(root:taskfilePath:targets:mayRewrite:tracked:handover:requirementHolds:)``'s
    /// ``Scan/isNoOp``, without the git index. When a path changed, it has looked at every path
    /// all the same, and hands what it found to the full command (``Handover``): looking is
    /// most of a small change's cost, and the full command would look again. The caller holds
    /// the project's lock: a file re-read because its status was too fresh is recorded as it is
    /// now.
    package static func noOp(
        root: String,
        taskfilePath: String,
        targets: [String],
        requirementHolds: (_ key: String, _ valueHash: UInt64?) -> Bool
    ) -> Look {
        // The cheapest test that fails first: a changed path is the usual reason a run isn't a
        // no-op, and the Taskfile's identity (reading its cache, hashing every Taskfile) waits
        // until every path is found unchanged.
        var layout = Layout(recording: false)
        guard let (bytes, head, tail) = load(root: root, targets: targets, layout: &layout), head.vouchesForWholeRun
        else {
            return .unknown
        }
        let (changed, refreshed) = look(at: head.paths, root: root, tracked: nil)
        guard changed.isEmpty else {
            return .changed(Handover(snapshot: ContentHash.of(bytes), changed: changed, refreshed: refreshed))
        }
        guard identityHolds(head, root: root, taskfilePath: taskfilePath, requirementHolds) else { return .unknown }
        if !refreshed.isEmpty {
            var snapshot = head
            guard decodeTail(bytes, from: tail, into: &snapshot) else { return .unknown }
            for (position, entry) in refreshed { snapshot.paths[position] = entry }
            snapshot.write(root: root)
        }
        return .noOp(head)
    }

    /// The project's snapshot — its bytes, its head (all but the jobs and the published
    /// signatures) and where the rest starts — when it is of these targets. A `layout` that
    /// records keeps the file open and notes where its fields are.
    private static func load(
        root: String,
        targets: [String],
        layout: inout Layout
    ) -> (bytes: [UInt8], head: UpToDateSnapshot, tail: Int)? {
        let bytes: [UInt8]
        if layout.recording {
            guard let (contents, file) = Files.openSealed(path(root: root), magic: magic) else { return nil }
            bytes = contents
            layout.file = file
        } else {
            guard let contents = Files.readSealed(path(root: root), magic: magic) else { return nil }
            bytes = contents
        }
        guard let (head, tail) = decodeHead(bytes, layout: &layout), head.targets == targets else { return nil }
        return (bytes, head, tail)
    }

    /// Whether the snapshot was made with the Taskfiles as they are now, loaded in a context
    /// `requirementHolds` says is the same.
    private static func identityHolds(
        _ head: UpToDateSnapshot,
        root: String,
        taskfilePath: String,
        _ requirementHolds: (_ key: String, _ valueHash: UInt64?) -> Bool
    ) -> Bool {
        TaskfileCacheHeader.identity(taskfilePath: taskfilePath, root: root, holds: requirementHolds)
            == head.taskfileIdentity
    }

    /// Compares every path with what it was, in chunks on every core (mostly `stat` calls): the
    /// positions of those that changed, and the fresh records of those whose content was read
    /// and is the same.
    package static func look(
        at paths: [WatchedPath],
        root: String,
        tracked: (any TrackedContent)?
    ) -> (changed: [Int], refreshed: [(Int, WatchedPath)]) {
        let chunk = 512
        let chunks = (paths.count + chunk - 1) / chunk
        let found = Mutex<(changed: [Int], refreshed: [(Int, WatchedPath)])>(([], []))
        parallelLoop(iterations: chunks) { index in
            // A descriptor of the root for each chunk: the kernel counts the uses of an open file
            // at every lookup relative to it, and threads sharing one contend for that count
            // (a tenth more system time in a no-op's look at 20k paths on two cores).
            let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { if rootDescriptor >= 0 { close(rootDescriptor) } }
            let base = rootDescriptor >= 0 ? rootDescriptor : AT_FDCWD
            var changed: [Int] = []
            var refreshed: [(Int, WatchedPath)] = []
            for position in index * chunk..<min(paths.count, (index + 1) * chunk) {
                switch paths[position].compare(root: root, rootDescriptor: base, tracked: tracked) {
                case .unchanged: break
                case .sameContent(let entry): refreshed.append((position, entry))
                case .changed: changed.append(position)
                }
            }
            if !changed.isEmpty || !refreshed.isEmpty {
                found.withLock {
                    $0.changed += changed
                    $0.refreshed += refreshed
                }
            }
        }
        return found.withLock { $0 }
    }

    /// Decodes a whole snapshot.
    package static func decode(_ sealed: [UInt8]) -> UpToDateSnapshot? {
        var bytes = sealed
        guard FileChecksum.unseal(&bytes), let (head, offset) = decodeHead(bytes) else { return nil }
        var snapshot = head
        guard decodeTail(bytes, from: offset, into: &snapshot) else { return nil }
        return snapshot
    }

    /// Decodes all but the jobs and the published signatures (a no-op needs only the paths);
    /// returns where the rest starts.
    package static func decodeHead(_ bytes: [UInt8]) -> (UpToDateSnapshot, Int)? {
        var layout = Layout(recording: false)
        return decodeHead(bytes, layout: &layout)
    }

    /// ``decodeHead(_:)``, noting where the fields are in `layout` when it records.
    static func decodeHead(_ bytes: [UInt8], layout: inout Layout) -> (UpToDateSnapshot, Int)? {
        var reader = BinaryReader(bytes: bytes)
        guard reader.readBytes(count: magic.count) == magic, reader.readInteger() == formatVersion else { return nil }
        layout.identityAt = reader.offset
        guard let identityHigh = reader.readUInt64(), let identityLow = reader.readUInt64(),
            let targetCount = reader.readInteger(), targetCount >= 0, targetCount <= bytes.count
        else { return nil }
        var targets: [String] = []
        for _ in 0..<targetCount {
            guard let target = reader.readString() else { return nil }
            targets.append(target)
        }
        layout.flagsAt = reader.offset
        guard let complete = reader.readBool(), let watches = reader.readBool(), let jobCount = reader.readInteger(),
            let anyCheckedEveryRun = reader.readBool(),
            let pathCount = reader.readInteger(), pathCount >= 0, pathCount <= bytes.count
        else { return nil }
        var paths: [WatchedPath] = []
        paths.reserveCapacity(pathCount)
        if layout.recording { layout.pathFieldsAt.reserveCapacity(pathCount) }
        for _ in 0..<pathCount {
            guard let entry = reader.readWatchedPath() else { return nil }
            paths.append(entry)
            // A record ends with its fixed-width fields.
            if layout.recording { layout.pathFieldsAt.append(UInt32(reader.offset - WatchedPath.fieldsSize)) }
        }
        var snapshot = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: identityHigh, low: identityLow),
            targets: targets,
            paths: paths,
            jobs: [],
            published: [:],
            complete: complete,
            jobCount: jobCount,
            anyCheckedEveryRun: anyCheckedEveryRun
        )
        snapshot.watches = watches
        return (snapshot, reader.offset)
    }

    /// Decodes the jobs and the published signatures, from `offset`.
    package static func decodeTail(_ bytes: [UInt8], from offset: Int, into snapshot: inout UpToDateSnapshot) -> Bool {
        var layout = Layout(recording: false)
        return decodeTail(bytes, from: offset, into: &snapshot, layout: &layout)
    }

    /// ``decodeTail(_:from:into:)``, noting where the signatures start in `layout`.
    static func decodeTail(
        _ bytes: [UInt8],
        from offset: Int,
        into snapshot: inout UpToDateSnapshot,
        layout: inout Layout,
        keepingPublished: Bool = false
    ) -> Bool {
        var reader = BinaryReader(bytes: bytes)
        reader.offset = offset
        guard let jobCount = reader.readInteger(), jobCount == snapshot.jobCount, jobCount >= 0, jobCount <= bytes.count
        else { return false }
        var jobs: [Job] = []
        jobs.reserveCapacity(jobCount)
        for _ in 0..<jobCount {
            guard let key = reader.readString(), let checkedEveryRun = reader.readBool(),
                let count = reader.readInteger(),
                count >= 0, count <= bytes.count
            else { return false }
            var indices: [Int32] = []
            indices.reserveCapacity(count)
            for _ in 0..<count {
                guard let index = reader.readInteger(), index >= 0, index < snapshot.paths.count else { return false }
                indices.append(Int32(index))
            }
            jobs.append(Job(key: key, checkedEveryRun: checkedEveryRun, paths: indices))
        }
        layout.publishedAt = reader.offset
        guard let publishedCount = reader.readInteger(), publishedCount >= 0, publishedCount <= bytes.count else {
            return false
        }
        var published: [String: ContentHash] = [:]
        if !keepingPublished { published.reserveCapacity(publishedCount) }
        for _ in 0..<publishedCount {
            guard let name = reader.readString(), let high = reader.readUInt64(), let low = reader.readUInt64() else {
                return false
            }
            if !keepingPublished { published[name] = ContentHash(high: high, low: low) }
        }
        guard reader.offset == bytes.count else { return false }
        snapshot.jobs = jobs
        if !keepingPublished { snapshot.published = published }
        return true
    }
}

extension BinaryWriter {
    /// A path's record: its path, its kind, then fixed-width fields (as small as variable-length
    /// ones for nanosecond times, and read and written without a loop per byte).
    package mutating func write(_ entry: WatchedPath) {
        write(entry.path)
        writeFields(of: entry)
    }

    /// What follows a path's name in its record: ``WatchedPath/fieldsSize`` bytes, the same for
    /// any path (a ``UpToDateSnapshot/Patch`` rewrites them in place).
    package mutating func writeFields(of entry: WatchedPath) {
        write(byte: entry.kind.rawValue)
        write(
            words: UInt64(bitPattern: entry.stat.modified),
            UInt64(bitPattern: entry.stat.changed),
            UInt64(bitPattern: entry.stat.size),
            entry.stat.inode,
            entry.stat.device,
            entry.hash.high,
            entry.hash.low,
            UInt64(bitPattern: entry.seenAt)
        )
    }
}

extension BinaryReader {
    /// A record written by ``BinaryWriter/write(_:)-(WatchedPath)``.
    package mutating func readWatchedPath() -> WatchedPath? {
        guard let path = readString(), let kindByte = readByte(), let kind = WatchedPath.Kind(rawValue: kindByte),
            let modified = readUInt64(), let changed = readUInt64(), let size = readUInt64(),
            let inode = readUInt64(), let device = readUInt64(), let high = readUInt64(), let low = readUInt64(),
            let seenAt = readUInt64()
        else { return nil }
        return WatchedPath(
            path: path,
            kind: kind,
            stat: FileSignature(
                device: device,
                inode: inode,
                size: Int64(bitPattern: size),
                modified: Int64(bitPattern: modified),
                changed: Int64(bitPattern: changed)
            ),
            hash: ContentHash(high: high, low: low),
            seenAt: Int64(bitPattern: seenAt)
        )
    }
}
