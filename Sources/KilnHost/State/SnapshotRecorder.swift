import KilnJobs
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

extension WatchedPath {
    /// A file as the hasher recorded it.
    init(path: String, file: HashedFile) {
        self.init(
            path: path,
            kind: file.algorithm == .gitBlob ? .trackedFile : .file,
            stat: file.stat,
            hash: file.hash,
            seenAt: file.hashedAt
        )
    }
}

/// Collects, as a run goes, what each settled job's verdict rested on, and makes the snapshot
/// when the run ends well.
///
/// Threading: every member from any thread; guarded by its mutex.
final class SnapshotRecorder: Sendable {
    fileprivate enum Paths {
        /// Checked or run in this run: the paths its verdict and record rest on, `count` of
        /// them from `start` in the recorded paths (``Recorded/paths``).
        case fresh(start: Int32, count: Int32)
        /// Up to date on the previous snapshot's word: that snapshot's job at this index.
        case carried(Int)
    }
    /// 24 bytes: its key is in the spill (with it, and its ``Paths`` as an enum, it took 56).
    fileprivate struct Entry {
        /// Where its key is in the spill (``RecordSpill/key(at:)``).
        var keyAt: Int
        var checkedEveryRun: Bool
        /// A fresh job's first path and how many, or a carried job's index and -1.
        private var first: Int32
        private var count: Int32

        init(keyAt: Int, checkedEveryRun: Bool, paths: Paths) {
            self.keyAt = keyAt
            self.checkedEveryRun = checkedEveryRun
            switch paths {
            case .fresh(let start, let count): (first, self.count) = (start, count)
            case .carried(let index): (first, count) = (Int32(index), -1)
            }
        }

        var paths: Paths { count < 0 ? .carried(Int(first)) : .fresh(start: first, count: count) }
    }
    /// What was recorded, in order: every job (a later entry of a key replaces an earlier one),
    /// in chunks (the 100k jobs of an `each:` task don't each hold an array, and no table grows
    /// by doubling, two copies while it grows); and, out of memory, the jobs' keys and every
    /// fresh job's paths one after another (the spill is made with the first job).
    private struct Recorded {
        var entries = ChunkedArray<Entry>()
        var spill: RecordSpill?

        /// The spill, made if need be.
        mutating func spill(in directory: String?) -> RecordSpill {
            if let spill { return spill }
            let made = RecordSpill(directory: directory)
            spill = made
            return made
        }
    }
    private let recorded = HostMutex(Recorded())
    /// Where the recorded keys and paths go (`.kiln/`), or `nil` to keep them in memory.
    private let spillDirectory: String?
    /// Jobs carried from the previous snapshot without a job of this run (``carry(indices:unwatchedPaths:)``).
    private let carriedInBulk = HostMutex<[Int]>([])
    /// The positions of the previous snapshot's paths no job watched, carried with them.
    private let carriedUnwatched = HostMutex<[Int]>([])
    /// Directories `each:` tasks listed, by task.
    private let listings = HostMutex<[String: [WatchedPath]]>([:])
    /// Jobs whose paths couldn't be captured faithfully (a file changed while it was read).
    private let missed = HostMutex(0)
    /// The scan of the snapshot carried entries refer to, when the recorder starts from one.
    private let previousScan: UpToDateSnapshot.Scan?
    /// That snapshot whole, once asked for (``previous``); set from the start when given.
    private let previousWhole: HostMutex<UpToDateSnapshot??>
    /// Its file, for a ``patch(taskfileIdentity:targets:published:expectedJobs:complete:watches:)``.
    private let base: UpToDateSnapshot.Base?
    /// Where each of its jobs is, by key.
    private let previousJobs: [String: Int]
    /// The positions of its paths whose records are newer than its file's (``UpToDateSnapshot/Scan/refreshed``).
    private let refreshed: [Int]

    /// A recorder whose recorded keys and paths go to anonymous files in `spillDirectory`
    /// (`.kiln/`), or stay in memory when it is `nil`.
    init(previous: UpToDateSnapshot?, spillDirectory: String? = nil) {
        previousScan = nil
        previousWhole = HostMutex(.some(previous))
        self.spillDirectory = spillDirectory
        base = nil
        previousJobs = [:]
        refreshed = []
    }

    /// A recorder starting from `scan`'s snapshot, whose file the next snapshot may patch.
    init(scan: UpToDateSnapshot.Scan?, spillDirectory: String?) {
        previousScan = scan
        previousWhole = HostMutex(scan?.detailReleased == true ? nil : .some(scan?.snapshot))
        self.spillDirectory = spillDirectory
        base = scan?.base
        previousJobs = scan?.jobPositions ?? [:]
        refreshed = scan?.refreshed ?? []
    }

    /// The snapshot carried entries refer to, with its paths and jobs: only making the next
    /// snapshot reads them, so a scan that let go of them (``UpToDateSnapshot/Scan/releasingDetail()``)
    /// has them read again here, once. `nil` when there is none, or it can't be read back (the
    /// next snapshot then has none of its jobs, and is incomplete).
    private var previous: UpToDateSnapshot? {
        previousWhole.withLock { whole in
            if let whole { return whole }
            let read = previousScan?.wholeSnapshot()
            whole = .some(read)
            return read
        }
    }

    /// Records a job's paths; `nil` when they couldn't be captured (the snapshot then won't claim
    /// the job is up to date: the next run checks it against the build state).
    func record(key: JobKey, checkedEveryRun: Bool, paths: [WatchedPath]?) {
        guard let paths else {
            missed.withLock { $0 += 1 }
            return
        }
        recorded.withLock { recorded in
            let spill = recorded.spill(in: spillDirectory)
            let start = Int32(spill.count)
            for path in paths { spill.append(path) }
            recorded.entries.append(
                Entry(
                    keyAt: spill.append(key),
                    checkedEveryRun: checkedEveryRun,
                    paths: .fresh(start: start, count: Int32(paths.count))
                )
            )
        }
    }

    /// Records the directories an `each:` task read to list its files. They belong to no job: a
    /// change there only keeps the next run from being a no-op (it lists the files again).
    func recordListing(task: String, paths: [WatchedPath]) {
        listings.withLock { $0[task] = paths }
    }

    /// Records a job found up to date on the previous snapshot's word (its job at `index`).
    func carry(key: JobKey, index: Int) {
        recorded.withLock { recorded in
            let spill = recorded.spill(in: spillDirectory)
            recorded.entries.append(Entry(keyAt: spill.append(key), checkedEveryRun: false, paths: .carried(index)))
        }
    }

    /// Records jobs up to date on the previous snapshot's word, at once, by their indices there
    /// (jobs no run creates, so none is recorded otherwise), and the paths it watched for no job
    /// (a plugin's files, the directories an `each:` task listed), by position.
    func carry(indices: [Int], unwatchedPaths: [Int] = []) {
        carriedInBulk.withLock { $0 += indices }
        if !unwatchedPaths.isEmpty { carriedUnwatched.withLock { $0 += unwatchedPaths } }
    }

    /// A run's snapshot, as the recorder makes it: what an ``UpToDateSnapshot`` holds, with
    /// every job's path positions in one array, written without being made into one.
    ///
    /// Threading: a value type.
    struct Contents: SnapshotContents {
        /// 16 bytes: where its key is (a key of its own took 48), and where its path positions
        /// are.
        struct Job {
            /// Where its key is in the spill (``RecordSpill/key(at:)``), or (negative) `-1 -` its
            /// position among the previous snapshot's jobs, carried in bulk.
            var key: Int
            /// Where its path positions are in ``Contents/positions``.
            var start: Int32
            /// How many, complemented when the job is checked on every run.
            private var countAndRuns: Int32

            init(key: Int, checkedEveryRun: Bool, start: Int32, count: Int32) {
                self.key = key
                self.start = start
                countAndRuns = checkedEveryRun ? ~count : count
            }

            var checkedEveryRun: Bool { countAndRuns < 0 }
            var count: Int32 { countAndRuns < 0 ? ~countAndRuns : countAndRuns }
        }
        var taskfileIdentity: ContentHash
        var targets: [String]
        var complete: Bool
        var watches = false
        var anyCheckedEveryRun: Bool
        var paths: WatchedPathTable
        var jobs: [Job]
        var positions: [Int32]
        var published: PublishedSignatures
        /// The snapshot jobs carried in bulk come from.
        let previous: UpToDateSnapshot?

        var pathCount: Int { paths.count }
        func path(at position: Int) -> WatchedPath { paths[Int32(position)] }
        func pathByteCount(at position: Int) -> Int { paths.pathByteCount(at: Int32(position)) }
        /// Whether the recorded paths were read back whole (not when reading the file failed).
        var isIntact: Bool { !(paths.spill?.failed ?? false) }
        var visitedJobCount: Int { jobs.count }
        func forEachJob(
            _ body: (_ name: String, _ source: String?, _ checkedEveryRun: Bool, _ paths: ArraySlice<Int32>) -> Void
        ) {
            // This run's jobs' keys are read back from the spill (an entry makes it).
            let spill = paths.spill
            for job in jobs {
                let paths = positions[Int(job.start)..<Int(job.start + job.count)]
                if job.key < 0 {
                    body(previous?.jobs[-1 - job.key].key ?? "", nil, job.checkedEveryRun, paths)
                } else if let spill {
                    let key = spill.key(at: job.key)
                    body(key.task, key.source, job.checkedEveryRun, paths)
                }
            }
        }
        func forEachJobSize(_ body: (_ keyByteCount: Int, _ paths: ArraySlice<Int32>) -> Void) {
            let spill = paths.spill
            for job in jobs {
                let paths = positions[Int(job.start)..<Int(job.start + job.count)]
                if job.key < 0 {
                    body(previous?.jobs[-1 - job.key].key.utf8.count ?? 0, paths)
                } else if let spill {
                    body(spill.keyByteCount(at: job.key), paths)
                }
            }
        }
        var publishedCount: Int { published.count }
        func forEachPublished(_ body: (_ name: String, _ source: String?, _ signature: ContentHash) -> Void) {
            published.forEach(body)
        }
    }

    /// The snapshot of this run. A path that jobs saw in different states (one job rewrote what
    /// another had read) keeps its newest state, and the jobs that saw another are left out, so
    /// the next run checks them against the build state.
    ///
    /// After a small change most jobs are carried from the previous snapshot: its path table is
    /// the starting point (carried jobs keep their index lists as they are), the few fresh paths
    /// are merged into it, and paths no job watches any more are dropped. When no job is carried,
    /// the table starts empty.
    ///
    /// The recorded paths are read back from their file once, in order. The table holds where
    /// each path and its state are (8 bytes); a path is held in memory only when seen again (to
    /// compare the sightings), so at the end of an `each:` task over 100k files the paths stay in
    /// the file (8.8 MB) and are read from it as the snapshot is written.
    ///
    /// Takes what was recorded. Called once, at the end of a run (a second call finds nothing
    /// recorded, and its snapshot is incomplete).
    func snapshot(
        taskfileIdentity: ContentHash,
        targets: [String],
        published: PublishedSignatures,
        expectedJobs: Int
    ) -> Contents {
        var taken = recorded.withLock { recorded in
            defer { recorded = Recorded() }
            return recorded
        }
        let superseded = Self.superseded(taken.entries, keysIn: taken.spill)
        let carriesEntries = (0..<taken.entries.count).contains { position in
            guard case .carried = taken.entries[position].paths else { return false }
            return !superseded.contains(position)
        }
        // The previous snapshot only when something of it is carried (read again then, if its
        // scan let go of it: a run that checked every job again never needs it).
        let carriesSome =
            carriesEntries || !carriedInBulk.withLock(\.isEmpty) || !carriedUnwatched.withLock(\.isEmpty)
        let previous = carriesSome ? self.previous : nil
        let bulk = previous == nil ? [] : carriedInBulk.withLock { $0 }
        var listed = listings.withLock { $0 }
        if let previous {
            let unwatched = carriedUnwatched.withLock { $0 }
            if !unwatched.isEmpty { listed["\u{0}paths no job watched"] = unwatched.map { previous.paths[$0] } }
        }
        // Only carried jobs refer to the previous table's positions. With none (a full or a first
        // run after a cold one), the table starts empty: starting from the previous one cost a
        // copy of it, reserved for every fresh path besides, then a third array to drop what no
        // job watched any more (~10 MB more at 10k tasks).
        let carries = carriesEntries || !bulk.isEmpty
        // `freshCount` counts a path once per job watching it: a bound, exact when jobs share none.
        var freshCount = listed.values.reduce(0) { $0 + $1.count }
        var carriedCount = 0
        // The starting table's paths that no carried job watches: their state there is no job's
        // sighting in this snapshot, so the first newer sighting of this run replaces it, with
        // nothing to compare. (Compared, every path a run rewrote was held twice, in memory, with
        // both states: 9.5 MB after 9,500 of 10k sources changed.)
        var unclaimed = [Bool](repeating: true, count: previous?.paths.count ?? 0)
        func countCarried(_ index: Int) {
            guard let paths = previous?.jobs[index].paths else { return }
            carriedCount += paths.count
            for position in paths { unclaimed[Int(position)] = false }
        }
        for position in 0..<taken.entries.count where !superseded.contains(position) {
            switch taken.entries[position].paths {
            case .fresh(_, let count): freshCount += Int(count)
            case .carried(let index): countCarried(index)
            }
        }
        for index in bulk { countCarried(index) }
        let base = carries ? previous : nil
        if base == nil { unclaimed = [] }
        // Index slots for every path at once (an index grown as it fills is placed again whole).
        var table = WatchedPathTable(
            base?.paths ?? [],
            spill: taken.spill,
            capacity: (base?.paths.count ?? 0) + freshCount
        )
        // The different states jobs saw of a conflicting path, first seen first: a job that
        // added the path before it conflicted saw the first (a carried job, the previous
        // table's), and `sawState` says which one the others saw.
        var states: [Int32: [WatchedPath]] = [:]
        var sawState: [Int: [Int: Int]] = [:]
        // `spilled`: the path's index in the recorded paths, or `nil` for a path held in memory.
        func add(_ path: WatchedPath, spilled: Int?, job: Int, offset: Int) -> Int32 {
            guard let known = table.position(of: path.path) else {
                guard let spilled else { return table.append(path) }
                return table.append(path: path.path, spilled: spilled)
            }
            // Unclaimed until first sighted: its state is still the starting table's.
            if Int(known) < unclaimed.count, unclaimed[Int(known)] {
                unclaimed[Int(known)] = false
                // Newer: what the rules below would keep, the job that saw it consistent with it.
                if path.seenAt > table[known].seenAt {
                    if let spilled { table.setState(at: known, spilled: spilled) } else { table[known] = path }
                    return known
                }
            }
            let current = table.stateToCompare(at: known)
            let same = current.describesSameState(as: path)
            if !same || states[known] != nil {
                var seenStates = states[known] ?? [current]
                let state =
                    seenStates.firstIndex { $0.describesSameState(as: path) }
                    ?? {
                        seenStates.append(path)
                        return seenStates.count - 1
                    }()
                states[known] = seenStates
                if state != 0 { sawState[job, default: [:]][offset] = state }
            }
            // A different state seen later is the newest; the same state seen later is a status
            // too fresh to trust then (a directory a run had just written to) that may be settled
            // now. A look is a proof taken at its time — a file's, a hash read then (its `seenAt`
            // is when it was hashed); a directory's, its listing read then — so the later one
            // vouches for the same content as the earlier, for a longer time.
            if path.seenAt > current.seenAt { table[known] = path }
            return known
        }

        typealias Job = Contents.Job
        var jobs: [Job] = []
        jobs.reserveCapacity(taken.entries.count - superseded.count + bulk.count)
        var positions: [Int32] = []
        positions.reserveCapacity(freshCount + carriedCount)
        if let previous {
            for index in bulk {
                let job = previous.jobs[index]
                jobs.append(
                    Job(
                        key: -1 - index,
                        checkedEveryRun: job.checkedEveryRun,
                        start: Int32(positions.count),
                        count: Int32(job.paths.count)
                    )
                )
                positions += job.paths
            }
        }
        let recordedCount = taken.entries.count - superseded.count
        for position in 0..<taken.entries.count {
            let entry = taken.entries[position]
            switch entry.paths {
            case .fresh(let start, let count):
                if !superseded.contains(position) {
                    let job = jobs.count
                    jobs.append(
                        Job(
                            key: entry.keyAt,
                            checkedEveryRun: entry.checkedEveryRun,
                            start: Int32(positions.count),
                            count: count
                        )
                    )
                    if let spill = taken.spill {
                        for offset in 0..<Int(count) {
                            let index = Int(start) + offset
                            positions.append(add(spill[index], spilled: index, job: job, offset: offset))
                        }
                    }
                }
            case .carried(let index):
                guard let previous, !superseded.contains(position) else { break }
                let paths = previous.jobs[index].paths
                jobs.append(
                    Job(
                        key: entry.keyAt,
                        checkedEveryRun: false,
                        start: Int32(positions.count),
                        count: Int32(paths.count)
                    )
                )
                positions += paths
            }
            // Passed: its chunk goes as the jobs grow (they hold what the snapshot needs of it).
            taken.entries.release(before: position + 1)
        }
        taken = Recorded()
        for (_, listing) in listed {
            for path in listing { _ = add(path, spilled: nil, job: -1, offset: 0) }
        }

        var dropped = 0
        if !states.isEmpty {
            // The paths seen in several states, marked by position: most of the jobs checked
            // watch none (after one change, one path of 20k), and asking the dictionary hashed
            // every position.
            var seenInStates = [Bool](repeating: false, count: table.count)
            for position in states.keys { seenInStates[Int(position)] = true }
            var kept = 0
            for job in jobs.indices {
                let entry = jobs[job]
                let consistent = (0..<Int(entry.count)).allSatisfy { offset in
                    let position = positions[Int(entry.start) + offset]
                    guard seenInStates[Int(position)], let seenStates = states[position] else { return true }
                    let saw = seenStates[sawState[job]?[offset] ?? 0]
                    return table[position].describesSameState(as: saw)
                }
                if consistent {
                    jobs[kept] = entry
                    kept += 1
                } else {
                    dropped += 1
                }
            }
            jobs.removeLast(jobs.count - kept)
        }

        // Keep only the paths something still watches (a deleted source's job is gone).
        var used = [Bool](repeating: false, count: table.count)
        for job in jobs {
            for position in positions[Int(job.start)..<Int(job.start + job.count)] { used[Int(position)] = true }
        }
        for (_, listing) in listed {
            for path in listing { if let known = table.position(of: path.path) { used[Int(known)] = true } }
        }
        if let remap = table.keep(used) {
            for job in jobs {
                for offset in Int(job.start)..<Int(job.start + job.count) {
                    positions[offset] = remap[Int(positions[offset])]
                }
            }
        }
        let complete = dropped == 0 && missed.withLock { $0 } == 0 && recordedCount + bulk.count == expectedJobs
        return Contents(
            taskfileIdentity: taskfileIdentity,
            targets: targets,
            complete: complete,
            anyCheckedEveryRun: jobs.contains { $0.checkedEveryRun },
            paths: table,
            jobs: jobs,
            positions: positions,
            published: published,
            previous: previous
        )
    }

    /// How many published names a patch rewrites at most: it finds each by comparing it with
    /// every name in the old file, which is cheaper than encoding only while they are few.
    static let patchedNamesLimit = 32

    /// The next snapshot as a patch of the previous one's file (``UpToDateSnapshot/Patch``), when
    /// this run left everything but fixed-width fields as it was:
    /// - every job of the previous snapshot is here once, carried or checked again, and none
    ///   else; a checked job has its key, watches the same paths in the same order, and always
    ///   runs as it did;
    /// - a path a checked job saw in a new state is watched by no carried job (the encoder would
    ///   leave that job out), and jobs that saw one path saw it the same;
    /// - nothing else was recorded (no listing, no plugin file), the paths no job watched are
    ///   carried, and nothing was missed;
    /// - the names published are the previous snapshot's, few set again (no `each:` task listed
    ///   its files, which publish by position).
    ///
    /// `nil` otherwise: ``snapshot(taskfileIdentity:targets:published:expectedJobs:)`` encodes
    /// it. Takes nothing, so that call still can when the patch can't be written.
    func patch(
        taskfileIdentity: ContentHash,
        targets: [String],
        published: PublishedSignatures,
        expectedJobs: Int,
        complete: Bool,
        watches: Bool
    ) -> UpToDateSnapshot.Patch? {
        // The cheap tests first: the previous snapshot may have to be read again.
        guard base != nil, missed.withLock({ $0 }) == 0, !published.hasListedTasks,
            let setNames = published.setSinceCarried, listings.withLock({ $0.values.allSatisfy(\.isEmpty) }),
            let previous, targets == previous.targets, published.named.count == previous.published.count
        else { return nil }
        let bulk = carriedInBulk.withLock { $0 }
        let unwatched = carriedUnwatched.withLock { $0 }
        return recorded.withLock { recorded -> UpToDateSnapshot.Patch? in
            // How each previous job came in: 0 not yet, 1 carried, 2 checked again.
            var came = [UInt8](repeating: 0, count: previous.jobs.count)
            for index in bulk {
                guard came.indices.contains(index), came[index] == 0 else { return nil }
                came[index] = 1
            }
            // The newest record of each path a checked job watched, and the paths seen in a new
            // state.
            var records: [Int: WatchedPath] = [:]
            var moved = Set<Int>()
            for position in 0..<recorded.entries.count {
                let entry = recorded.entries[position]
                switch entry.paths {
                case .carried(let index):
                    guard came.indices.contains(index), came[index] == 0, !previous.jobs[index].checkedEveryRun else {
                        return nil
                    }
                    came[index] = 1
                case .fresh(let start, let count):
                    guard let spill = recorded.spill, let index = previousJobs[spill.key(at: entry.keyAt).stored],
                        came[index] == 0
                    else { return nil }
                    let job = previous.jobs[index]
                    guard job.checkedEveryRun == entry.checkedEveryRun, job.paths.count == Int(count) else {
                        return nil
                    }
                    came[index] = 2
                    for offset in 0..<Int(count) {
                        let seen = spill[Int(start) + offset]
                        let at = Int(job.paths[offset])
                        let was = previous.paths[at]
                        guard seen.path == was.path else { return nil }
                        let current = records[at] ?? was
                        if !current.describesSameState(as: seen) {
                            // A second state among this run's jobs, or a first one no later than
                            // the snapshot's: the encoder's to sort out.
                            guard records[at] == nil, seen.seenAt > was.seenAt else { return nil }
                            moved.insert(at)
                        }
                        records[at] = seen.seenAt > current.seenAt ? seen : current
                    }
                }
            }
            guard !came.contains(0) else { return nil }
            var covered = [Bool](repeating: false, count: previous.paths.count)
            for position in unwatched where covered.indices.contains(position) { covered[position] = true }
            // Marked by position: every carried job's paths are asked (a set hashed 20k of them).
            var isMoved = [Bool](repeating: false, count: moved.isEmpty ? 0 : previous.paths.count)
            for position in moved { isMoved[position] = true }
            for index in previous.jobs.indices {
                // Read in place: a copy of each job retained and released its key and its list.
                let carried = came[index] == 1 && !moved.isEmpty
                let inconsistent = previous.jobs[index].paths.withUnsafeBufferPointer { paths in
                    for position in paths {
                        covered[Int(position)] = true
                        if carried, isMoved[Int(position)] { return true }
                    }
                    return false
                }
                if inconsistent { return nil }
            }
            guard !covered.contains(false) else { return nil }

            // What the file says of a path the scan re-read is older than the scan's record, which a
            // checked job's may have replaced since.
            var rewritten: [Int: WatchedPath] = [:]
            for position in refreshed where previous.paths.indices.contains(position) {
                rewritten[position] = previous.paths[position]
            }
            for (position, record) in records where rewritten[position] != nil || record != previous.paths[position] {
                rewritten[position] = record
            }
            var names = Set<String>()
            var signatures: [(name: String, signature: ContentHash)] = []
            for name in setNames where names.insert(name).inserted {
                guard names.count <= Self.patchedNamesLimit, let signature = published[name: name] else { return nil }
                signatures.append((name, signature))
            }
            return UpToDateSnapshot.Patch(
                taskfileIdentity: taskfileIdentity,
                complete: complete && recorded.entries.count + bulk.count == expectedJobs,
                watches: watches,
                paths: rewritten.map { (position: $0.key, entry: $0.value) },
                published: signatures
            )
        }
    }

    /// The positions of entries a later entry of the same key replaces (a dictionary by key
    /// would hold every key again: their hashes find the few that repeat).
    private static func superseded(_ entries: ChunkedArray<Entry>, keysIn spill: RecordSpill?) -> Set<Int> {
        guard let spill else { return [] }
        var seen = Set<Int>(minimumCapacity: entries.count)
        var repeated = Set<Int>()
        for position in 0..<entries.count {
            let hash = spill.key(at: entries[position].keyAt).hashValue
            if !seen.insert(hash).inserted { repeated.insert(hash) }
        }
        guard !repeated.isEmpty else { return [] }
        var latest: [JobKey: Int] = [:]
        var result = Set<Int>()
        for position in 0..<entries.count {
            let key = spill.key(at: entries[position].keyAt)
            guard repeated.contains(key.hashValue) else { continue }
            if let earlier = latest.updateValue(position, forKey: key) { result.insert(earlier) }
        }
        return result
    }
}

extension UpToDateSnapshot {
    /// ``scan(root:taskfilePath:targets:mayRewrite:tracked:handover:requirementHolds:)``, each
    /// requirement of the Taskfile's load checked against `context`.
    static func scan(
        root: String,
        taskfilePath: String,
        targets: [String],
        mayRewrite: Bool = true,
        tracked: (any TrackedContent)? = nil,
        handover: Handover? = nil,
        context: TaskfileContext = .process
    ) -> Scan? {
        scan(
            root: root,
            taskfilePath: taskfilePath,
            targets: targets,
            mayRewrite: mayRewrite,
            tracked: tracked,
            handover: handover,
            requirementHolds: context.holds
        )
    }
}
