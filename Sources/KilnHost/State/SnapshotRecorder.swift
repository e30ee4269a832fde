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

/// Collects, as a run goes, what each settled job's verdict rested on, and writes the snapshot
/// when the run ends well.
///
/// Threading: every member from any thread; guarded by its mutex.
final class SnapshotRecorder: Sendable {
    private enum Paths {
        /// Checked or run in this run: the paths its verdict and record rest on, `count` of
        /// them from `start` in the recorded paths (``Recorded/paths``).
        case fresh(start: Int, count: Int32)
        /// Up to date on the previous snapshot's word: that snapshot's job at this index.
        case carried(Int)
    }
    private struct Entry {
        var alwaysRuns: Bool
        var paths: Paths
    }
    /// What was recorded, by job, and every fresh job's paths one after another in chunks of
    /// 4,096: the 100k jobs of an `each:` task don't each hold an array (32 bytes of header and
    /// malloc's rounding a job), and no one array grows by doubling (two copies while it grows).
    private struct Recorded {
        static let chunk = 4096
        var entries: [String: Entry] = [:]
        var paths: [[WatchedPath]] = []
        var pathCount = 0

        mutating func add(_ added: [WatchedPath]) -> Int {
            let start = pathCount
            for path in added {
                if pathCount % Self.chunk == 0 {
                    paths.append([])
                    paths[paths.count - 1].reserveCapacity(Self.chunk)
                }
                paths[paths.count - 1].append(path)
                pathCount += 1
            }
            return start
        }

        func path(at position: Int) -> WatchedPath {
            paths[position / Self.chunk][position % Self.chunk]
        }
    }
    private let recorded = HostMutex(Recorded())
    /// Jobs carried from the previous snapshot without a job of this run (``carry(indices:)``).
    private let carriedInBulk = HostMutex<[Int]>([])
    /// Directories `each:` tasks listed, by task.
    private let listings = HostMutex<[String: [WatchedPath]]>([:])
    /// Jobs whose paths couldn't be captured faithfully (a file changed while it was read).
    private let missed = HostMutex(0)
    /// The snapshot carried entries refer to.
    private let previous: UpToDateSnapshot?

    init(previous: UpToDateSnapshot?) {
        self.previous = previous
    }

    /// Records a job's paths; `nil` when they couldn't be captured (the snapshot then won't claim
    /// the job is up to date: the next run checks it against the build state).
    func record(key: String, alwaysRuns: Bool, paths: [WatchedPath]?) {
        guard let paths else {
            missed.withLock { $0 += 1 }
            return
        }
        recorded.withLock { recorded in
            let start = recorded.add(paths)
            recorded.entries[key] = Entry(
                alwaysRuns: alwaysRuns,
                paths: .fresh(start: start, count: Int32(paths.count))
            )
        }
    }

    /// Records the directories an `each:` task read to list its files. They belong to no job: a
    /// change there only keeps the next run from being a no-op (it lists the files again).
    func recordListing(task: String, paths: [WatchedPath]) {
        listings.withLock { $0[task] = paths }
    }

    /// Records a job found up to date on the previous snapshot's word (its job at `index`).
    func carry(key: String, index: Int) {
        recorded.withLock { $0.entries[key] = Entry(alwaysRuns: false, paths: .carried(index)) }
    }

    /// Records jobs up to date on the previous snapshot's word, at once, by their indices there
    /// (jobs no run creates, so none is recorded otherwise).
    func carry(indices: [Int]) {
        carriedInBulk.withLock { $0 += indices }
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
    /// Takes what was recorded. Called once, at the end of a run (a second call finds nothing
    /// recorded, and its snapshot is incomplete).
    func snapshot(
        taskfileIdentity: ContentHash,
        targets: [String],
        published: [String: ContentHash],
        expectedJobs: Int
    ) -> UpToDateSnapshot {
        var taken = recorded.withLock { recorded in
            defer { recorded = Recorded() }
            return recorded
        }
        let bulk = previous == nil ? [] : carriedInBulk.withLock { $0 }
        let listed = listings.withLock { $0 }
        // Only carried jobs refer to the previous table's positions. With none (a full or a first
        // run after a cold one), the table starts empty: starting from the previous one cost a
        // copy of it, reserved for every fresh path besides, then a third array to drop what no
        // job watched any more (~10 MB more at 10k tasks).
        let carries =
            !bulk.isEmpty
            || taken.entries.values.contains {
                if case .carried = $0.paths { return true }
                return false
            }
        let base = carries ? previous : nil
        var paths = base?.paths ?? []
        var index: [String: Int32]?
        var freshIndex: [String: Int32] = [:]
        /// Where `path` is in the table: fresh paths first, then the previous table (searched
        /// through a table by path only when many fresh paths need it).
        func position(of path: String, freshCount: Int) -> Int32? {
            if let known = freshIndex[path] { return known }
            guard let base, !base.paths.isEmpty else { return nil }
            if freshCount > 64 {
                if index == nil {
                    var table: [String: Int32] = [:]
                    table.reserveCapacity(base.paths.count)
                    for (position, entry) in base.paths.enumerated() { table[entry.path] = Int32(position) }
                    index = table
                }
                return index?[path]
            }
            return base.paths.firstIndex { $0.path == path }.map(Int32.init)
        }
        var freshCount = listed.values.reduce(0) { $0 + $1.count }
        for (_, entry) in taken.entries {
            if case .fresh(_, let count) = entry.paths { freshCount += Int(count) }
        }
        // Room for every path at once (a table grown by doubling holds two copies while it grows).
        // `freshCount` counts a path once per job watching it: a bound, exact when jobs share none.
        paths.reserveCapacity(paths.count + freshCount)
        freshIndex.reserveCapacity(freshCount)
        // The different states jobs saw of a conflicting path, first seen first: a job that
        // added the path before it conflicted saw the first (a carried job, the previous
        // table's), and `sawState` says which one the others saw.
        var states: [Int32: [WatchedPath]] = [:]
        var sawState: [Int: [Int: Int]] = [:]
        func add(_ path: WatchedPath, job: Int, offset: Int) -> Int32 {
            if let known = position(of: path.path, freshCount: freshCount) {
                let current = paths[Int(known)]
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
                if !same {
                    if path.seenAt > current.seenAt { paths[Int(known)] = path }
                } else if path.seenAt > current.seenAt {
                    // The same state seen later: a status too fresh to trust then (a directory a
                    // run had just written to) may be settled now. A look is a proof taken at its
                    // time — a file's, a hash read then (its `seenAt` is when it was hashed); a
                    // directory's, its listing read then — so the later one vouches for the same
                    // content as the earlier, for a longer time.
                    paths[Int(known)] = path
                }
                freshIndex[path.path] = known
                return known
            }
            let position = Int32(paths.count)
            freshIndex[path.path] = position
            paths.append(path)
            return position
        }

        var jobs: [UpToDateSnapshot.Job] = []
        jobs.reserveCapacity(taken.entries.count + bulk.count)
        if let previous {
            for position in bulk { jobs.append(previous.jobs[position]) }
        }
        let recordedCount = taken.entries.count
        for (key, entry) in taken.entries {
            switch entry.paths {
            case .fresh(let start, let count):
                let job = jobs.count
                var positions: [Int32] = []
                positions.reserveCapacity(Int(count))
                for offset in 0..<Int(count) {
                    positions.append(add(taken.path(at: start + offset), job: job, offset: offset))
                }
                jobs.append(UpToDateSnapshot.Job(key: key, alwaysRuns: entry.alwaysRuns, paths: positions))
            case .carried(let position):
                guard let previous else { continue }
                jobs.append(UpToDateSnapshot.Job(key: key, alwaysRuns: false, paths: previous.jobs[position].paths))
            }
        }
        taken = Recorded()
        for (_, listing) in listed {
            for path in listing { _ = add(path, job: -1, offset: 0) }
        }

        var dropped = 0
        if !states.isEmpty {
            var kept: [UpToDateSnapshot.Job] = []
            for (job, entry) in jobs.enumerated() {
                let consistent = entry.paths.enumerated().allSatisfy { offset, position in
                    guard let seenStates = states[position] else { return true }
                    let saw = seenStates[sawState[job]?[offset] ?? 0]
                    return paths[Int(position)].describesSameState(as: saw)
                }
                if consistent { kept.append(entry) } else { dropped += 1 }
            }
            jobs = kept
        }

        // Keep only the paths something still watches (a deleted source's job is gone).
        var used = [Bool](repeating: false, count: paths.count)
        for job in jobs { for position in job.paths { used[Int(position)] = true } }
        for (_, listing) in listed {
            for path in listing { if let known = freshIndex[path.path] { used[Int(known)] = true } }
        }
        if used.contains(false) {
            var remap = [Int32](repeating: -1, count: paths.count)
            var compact: [WatchedPath] = []
            compact.reserveCapacity(paths.count)
            for (position, entry) in paths.enumerated() where used[position] {
                remap[position] = Int32(compact.count)
                compact.append(entry)
            }
            paths = compact
            jobs = jobs.map { job in
                var job = job
                job.paths = job.paths.map { remap[Int($0)] }
                return job
            }
        }
        let complete = dropped == 0 && missed.withLock { $0 } == 0 && recordedCount + bulk.count == expectedJobs
        return UpToDateSnapshot(
            taskfileIdentity: taskfileIdentity,
            targets: targets,
            paths: paths,
            jobs: jobs,
            published: published,
            complete: complete,
            jobCount: jobs.count,
            anyAlwaysRuns: jobs.contains { $0.alwaysRuns }
        )
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
