import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

/// The next snapshot written as a patch of the previous one's file: the same snapshot the encoder
/// writes from the same run (but for the order of jobs and signatures), and taken by real runs
/// that change one file.
@Suite("The snapshot patch")
struct SnapshotPatchTests {
    /// What a snapshot says, whatever the order of its jobs, paths and signatures.
    struct Canonical: Equatable, CustomStringConvertible {
        struct Job: Equatable {
            var checkedEveryRun: Bool
            var paths: [WatchedPath]
        }
        var identity: ContentHash
        var targets: [String]
        var complete: Bool
        var watches: Bool
        var anyCheckedEveryRun: Bool
        var jobs: [String: Job]
        var paths: [String: WatchedPath]
        var published: [String: ContentHash]

        init(_ snapshot: UpToDateSnapshot) {
            identity = snapshot.taskfileIdentity
            targets = snapshot.targets
            complete = snapshot.complete
            watches = snapshot.watches
            anyCheckedEveryRun = snapshot.anyCheckedEveryRun
            jobs = Dictionary(
                uniqueKeysWithValues: snapshot.jobs.map {
                    ($0.key, Job(checkedEveryRun: $0.checkedEveryRun, paths: $0.paths.map { snapshot.paths[Int($0)] }))
                }
            )
            paths = Dictionary(uniqueKeysWithValues: snapshot.paths.map { ($0.path, $0) })
            published = snapshot.published
        }

        /// What differs from `other`, said briefly.
        func differences(from other: Canonical) -> String {
            var said: [String] = []
            if identity != other.identity { said.append("identity") }
            if complete != other.complete || watches != other.watches { said.append("flags") }
            for key in Set(jobs.keys).union(other.jobs.keys) where jobs[key] != other.jobs[key] {
                said.append("job \(key): \(String(describing: jobs[key])) vs \(String(describing: other.jobs[key]))")
            }
            for key in Set(paths.keys).union(other.paths.keys) where paths[key] != other.paths[key] {
                said.append("path \(key): \(String(describing: paths[key])) vs \(String(describing: other.paths[key]))")
            }
            for key in Set(published.keys).union(other.published.keys) where published[key] != other.published[key] {
                said.append("signature of \(key)")
            }
            return said.joined(separator: "; ")
        }

        var description: String {
            "complete \(complete), watches \(watches), \(jobs.count) jobs, \(paths.count) paths, \(published.count) signatures"
        }
    }

    /// A path's record in a state numbered `state`, looked at `seenAt`.
    static func record(_ path: String, state: Int, seenAt: Int64) -> WatchedPath {
        guard state > 0 else { return WatchedPath(absent: path, seenAt: seenAt) }
        return WatchedPath(
            path: path,
            kind: .file,
            stat: FileSignature(device: 7, inode: UInt64(path.utf8.count), size: 3, modified: Int64(state), changed: 1),
            hash: ContentHash(high: UInt64(state), low: UInt64(path.utf8.count)),
            seenAt: seenAt
        )
    }

    @Test(
        "over generated runs, a patch describes exactly the snapshot the encoder makes from the same records, and is taken for most one-job changes"
    )
    func patchMatchesTheEncoder() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path("old/.kiln"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.path("new/.kiln"), withIntermediateDirectories: true)
        var random = SeededGenerator(seed: 0x5A7C_4E11)
        var patched = 0
        var declined = 0
        let rounds = 300
        for round in 0..<rounds {
            // The previous snapshot: jobs watching one to three of the paths (some shared, some
            // watched by none), each job's key and a group's name published.
            let pathCount = Int.random(in: 4...30, using: &random)
            let paths = (0..<pathCount).map {
                Self.record("p\($0)", state: Int.random(in: 0...2, using: &random), seenAt: 1_000)
            }
            let jobCount = Int.random(in: 2...12, using: &random)
            var watchedAny = Set<Int>()
            let jobs = (0..<jobCount).map { index -> UpToDateSnapshot.Job in
                let watched = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    Int32.random(in: 0..<Int32(pathCount), using: &random)
                }
                let distinct = watched.reduce(into: [Int32]()) { if !$0.contains($1) { $0.append($1) } }
                watchedAny.formUnion(distinct.map(Int.init))
                return UpToDateSnapshot.Job(key: "j\(index)", checkedEveryRun: false, paths: distinct)
            }
            var published = Dictionary(
                uniqueKeysWithValues: jobs.map { ($0.key, ContentHash(high: random.next(), low: 1)) }
            )
            published["default"] = ContentHash(high: random.next(), low: 2)
            let previous = UpToDateSnapshot(
                taskfileIdentity: ContentHash(high: 1, low: 1),
                targets: [],
                paths: paths,
                jobs: jobs,
                published: published,
                complete: true,
                jobCount: jobCount,
                anyCheckedEveryRun: false
            )
            #expect(previous.write(root: directory.path("old")))
            let (read, base) = try #require(UpToDateSnapshot.readWithBase(root: directory.path("old")))
            var scan = UpToDateSnapshot.Scan(snapshot: read, dirtyJobs: [], changedPaths: 1)
            scan.base = base
            scan.jobPositions = Dictionary(uniqueKeysWithValues: jobs.indices.map { (jobs[$0].key, $0) })
            let unwatched = (0..<pathCount).filter { !watchedAny.contains($0) }
            scan.unwatchedPaths = unwatched
            // Paths the scan re-read and found the same: its records are newer than the file's.
            for position in 0..<pathCount where Int.random(in: 0..<6, using: &random) == 0 {
                scan.snapshot.paths[position].seenAt = 1_500
                scan.refreshed.append(position)
            }

            // This run: one to three jobs checked again, the rest carried (in bulk, or one by one
            // as a full plan finds them up to date).
            let checked = Set(
                (0..<Int.random(in: 1...3, using: &random)).map { _ in Int.random(in: 0..<jobCount, using: &random) }
            )
            // The same run recorded twice: from the scan, and from the scan as a run of the whole
            // plan holds it, its paths and jobs let go of, read again from the file as the
            // snapshot is made. Both make the same snapshot, patched or encoded.
            let released = scan.releasingDetail()
            #expect(released.detailReleased && released.snapshot.paths.isEmpty && released.snapshot.jobs.isEmpty)
            let whole = try #require(released.wholeSnapshot())
            #expect(whole.paths == scan.snapshot.paths, "round \(round)")
            #expect(whole.jobs.map(\.key) == jobs.map(\.key) && whole.jobs.map(\.paths) == jobs.map(\.paths))
            #expect(whole.published == scan.snapshot.published && whole.jobCount == jobCount)
            let recorders = [scan, released].map { SnapshotRecorder(scan: $0, spillDirectory: nil) }
            var bulk: [Int] = []
            for index in 0..<jobCount where !checked.contains(index) {
                if Bool.random(using: &random) {
                    bulk.append(index)
                } else {
                    for recorder in recorders { recorder.carry(key: JobKey(task: jobs[index].key), index: index) }
                }
            }
            // Sometimes the paths no job watched aren't carried: the encoder drops them.
            let unwatchedCarried = Int.random(in: 0..<8, using: &random) == 0 ? [] : unwatched
            for recorder in recorders { recorder.carry(indices: bulk, unwatchedPaths: unwatchedCarried) }
            var table = PublishedSignatures()
            table.carry(published)
            for index in checked.sorted() {
                let job = jobs[index]
                var seen = job.paths.map { scan.snapshot.paths[Int($0)] }
                for offset in seen.indices {
                    // Rewritten; looked at again, the same; in a state older than the file's; as it was.
                    switch Int.random(in: 0..<5, using: &random) {
                    case 0: seen[offset] = Self.record(seen[offset].path, state: 3, seenAt: 2_000)
                    case 1: seen[offset].seenAt = 2_000
                    case 2: seen[offset] = Self.record(seen[offset].path, state: 4, seenAt: 900)
                    default: break
                    }
                }
                // Sometimes a job's paths aren't what they were: the encoder's to write.
                if Int.random(in: 0..<10, using: &random) == 0 {
                    seen.append(Self.record("new\(round)", state: 1, seenAt: 2_000))
                }
                for recorder in recorders {
                    recorder.record(key: JobKey(task: job.key), checkedEveryRun: false, paths: seen)
                }
                table[name: job.key] = nil
                table[name: job.key] =
                    Bool.random(using: &random) ? published[job.key] : ContentHash(high: random.next(), low: 3)
            }
            table[name: "default"] = ContentHash(high: random.next(), low: 4)
            let identity = ContentHash(high: random.next(), low: 5)
            let watches = Bool.random(using: &random)

            let patches = recorders.map {
                $0.patch(
                    taskfileIdentity: identity,
                    targets: [],
                    published: table,
                    expectedJobs: jobCount,
                    complete: true,
                    watches: watches
                )
            }
            let snapshots = try recorders.map { recorder in
                var encoded = recorder.snapshot(
                    taskfileIdentity: identity,
                    targets: [],
                    published: table,
                    expectedJobs: jobCount
                )
                encoded.watches = watches
                return Canonical(try #require(UpToDateSnapshot.decode(encoded.encoded())))
            }
            let expected = snapshots[0]
            #expect(snapshots[1] == expected, "round \(round), released: \(snapshots[1].differences(from: expected))")
            #expect(expected.jobs.count == jobCount || !expected.complete, "round \(round)")
            #expect((patches[0] == nil) == (patches[1] == nil), "round \(round)")
            if let first = patches[0], let second = patches[1] {
                #expect(first.paths.count == second.paths.count && first.published.count == second.published.count)
                for (one, other) in zip(
                    first.paths.sorted { $0.position < $1.position },
                    second.paths.sorted { $0.position < $1.position }
                ) {
                    #expect(one.position == other.position && one.entry == other.entry, "round \(round)")
                }
            }
            guard let patch = patches[1] else {
                declined += 1
                continue
            }
            patched += 1
            #expect(patch.write(root: directory.path("new"), over: base) == .written)
            let bytes = try #require(FileManager.default.contents(atPath: directory.path("new/.kiln/snapshot")))
            let written = try #require(UpToDateSnapshot.decode(Array(bytes)))
            let got = Canonical(written)
            #expect(got == expected, "round \(round): \(got.differences(from: expected))")
            // The patch kept the old file's order: every job index it holds is its own.
            #expect(written.jobs.map(\.key) == jobs.map(\.key), "round \(round)")
        }
        // Most rounds are a patch; the others (a new path, a state older than the file's, a
        // rewritten path a carried job watches, unwatched paths not carried) aren't.
        #expect(patched >= rounds / 4, "patched \(patched), declined \(declined)")
        #expect(declined >= rounds / 10, "patched \(patched), declined \(declined)")
    }

    @Test("a patch of a file larger than its copy buffer writes the edits that cross the buffer's boundaries whole")
    func editsCrossTheBuffersBoundaries() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path(".kiln"), withIntermediateDirectories: true)
        // 3,000 records of about 75 bytes: 225 KB, three 64 KiB boundaries, each inside some
        // path's fields.
        let paths = (0..<3_000).map { Self.record("src/file\($0).txt", state: 1, seenAt: 1_000) }
        let previous = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 1, low: 1),
            targets: ["build"],
            paths: paths,
            jobs: [UpToDateSnapshot.Job(key: "build", checkedEveryRun: false, paths: (0..<3_000).map(Int32.init))],
            published: ["build": ContentHash(high: 1, low: 1)],
            complete: false,
            jobCount: 1,
            anyCheckedEveryRun: false
        )
        #expect(previous.write(root: directory.path))
        let (_, base) = try #require(UpToDateSnapshot.readWithBase(root: directory.path))
        let rewritten = paths.map { Self.record($0.path, state: 2, seenAt: 2_000) }
        let patch = UpToDateSnapshot.Patch(
            taskfileIdentity: ContentHash(high: 2, low: 2),
            complete: true,
            watches: true,
            paths: rewritten.enumerated().map { (position: $0.offset, entry: $0.element) },
            published: [("build", ContentHash(high: 3, low: 3))]
        )
        #expect(patch.write(root: directory.path, over: base) == .written)
        let bytes = try #require(FileManager.default.contents(atPath: directory.path(".kiln/snapshot")))
        #expect(bytes.count > 3 * 65_536)
        let written = try #require(UpToDateSnapshot.decode(Array(bytes)))
        #expect(written.paths == rewritten)
        #expect(written.taskfileIdentity == ContentHash(high: 2, low: 2))
        #expect(written.complete && written.watches)
        #expect(written.targets == ["build"])
        #expect(written.published == ["build": ContentHash(high: 3, low: 3)])
        #expect(written.jobs.first?.paths == (0..<3_000).map(Int32.init))
    }

    @Test("a patch whose published name the old file doesn't have writes nothing, and the encoder's turn comes")
    func unknownNameIsNotApplicable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path(".kiln"), withIntermediateDirectories: true)
        let previous = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 1, low: 1),
            targets: [],
            paths: [Self.record("a", state: 1, seenAt: 1_000)],
            jobs: [UpToDateSnapshot.Job(key: "a", checkedEveryRun: false, paths: [0])],
            published: ["a": ContentHash(high: 1, low: 1)],
            complete: true,
            jobCount: 1,
            anyCheckedEveryRun: false
        )
        #expect(previous.write(root: directory.path))
        let before = try #require(FileManager.default.contents(atPath: directory.path(".kiln/snapshot")))
        let (_, base) = try #require(UpToDateSnapshot.readWithBase(root: directory.path))
        let patch = UpToDateSnapshot.Patch(
            taskfileIdentity: ContentHash(high: 2, low: 2),
            complete: true,
            watches: false,
            paths: [],
            published: [("b", ContentHash(high: 3, low: 3))]
        )
        #expect(patch.write(root: directory.path, over: base) == .notApplicable)
        #expect(FileManager.default.contents(atPath: directory.path(".kiln/snapshot")) == before)
    }

    @Test(
        "one changed source among independent tasks: the snapshot is patched in place of encoded, only that job's paths and signatures change, and the next run is a no-op"
    )
    func oneChangeIsPatched() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var taskfile =
            "version: '3'\ntasks:\n  default:\n    deps: [\((0..<12).map { "t\($0)" }.joined(separator: ", "))]\n"
        for index in 0..<12 {
            try directory.write("src/f\(index).txt", "\(index)\n")
            try setModificationTime(directory.path("src/f\(index).txt"), secondsAgo: 10)
            taskfile += "  t\(index):\n    sources: [src/f\(index).txt]\n    generates: [out/f\(index).txt]\n"
            taskfile += "    cmds: ['mkdir -p out && cp src/f\(index).txt out/f\(index).txt']\n"
        }
        try directory.write("Taskfile.yml", taskfile)
        try setModificationTime(directory.path("Taskfile.yml"), secondsAgo: 10)
        func snapshot() throws -> UpToDateSnapshot {
            let bytes = try #require(FileManager.default.contents(atPath: directory.path(".kiln/snapshot")))
            return try #require(UpToDateSnapshot.decode(Array(bytes)))
        }
        func run() throws -> Int {
            switch try BuildSession.run(BuildSessionTests.request(directory), BuildSessionTests.settings()) {
            case .ran(let summary, _, _, _, _): return summary.succeeded
            case .upToDate: return 0
            }
        }
        #expect(try run() == 12)
        // The outputs were hashed as they were written: the next look re-reads them, and writes
        // what vouches for them now.
        usleep(UInt32(FileSignature.racyWindow / 1000) * 2)
        #expect(try run() == 0)
        let before = try snapshot()

        try directory.write("src/f5.txt", "five\n")
        #expect(try run() == 1)
        let after = try snapshot()
        // Patched: the jobs and paths are where they were (the encoder puts a job checked again
        // after the carried ones).
        #expect(after.jobs.map(\.key) == before.jobs.map(\.key))
        #expect(after.jobs.map(\.paths) == before.jobs.map(\.paths))
        #expect(after.paths.map(\.path) == before.paths.map(\.path))
        #expect(after.complete)
        for (old, new) in zip(before.paths, after.paths) {
            if new.path == "src/f5.txt" || new.path == "out/f5.txt" {
                let status = try #require(FileSignature.of(directory.path(new.path)))
                #expect(new.stat == status, "\(new.path)")
                #expect(new.hash == (try FileContent.hash(directory.path(new.path))), "\(new.path)")
            } else {
                #expect(new == old, "\(new.path)")
            }
        }
        let moved = Set(after.published.keys.filter { after.published[$0] != before.published[$0] })
        #expect(Set(after.published.keys) == Set(before.published.keys))
        #expect(moved.contains("t5") && moved.isSubset(of: ["t5", "default"]), "\(moved)")

        // Another change at once: out/f5.txt is still too fresh for its status to vouch, so this
        // run's scan re-reads it; the patch writes that record too, and the run after trusts it.
        usleep(UInt32(FileSignature.racyWindow / 1000) * 2)
        try directory.write("src/f7.txt", "seven\n")
        #expect(try run() == 1)
        let settled = try snapshot()
        #expect(settled.jobs.map(\.key) == before.jobs.map(\.key))
        let output = try #require(settled.paths.first { $0.path == "out/f5.txt" })
        #expect(output.stat.isSettled(at: output.seenAt))
        #expect(try run() == 0)
    }

    @Test(
        "a run's scan lets go of its paths and jobs when the planner chooses the whole plan, and keeps them for a part"
    )
    func theScanLetsGoOfItsDetailForAWholePlan() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path(".kiln"), withIntermediateDirectories: true)
        let names = (0..<6).map { "t\($0)" }
        let paths = names.map { Self.record("src/\($0)", state: 1, seenAt: 1_000) }
        let jobs = names.indices.map {
            UpToDateSnapshot.Job(key: names[$0], checkedEveryRun: false, paths: [Int32($0)])
        }
        let snapshot = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 1, low: 1),
            targets: [],
            paths: paths,
            jobs: jobs,
            published: Dictionary(uniqueKeysWithValues: names.map { ($0, ContentHash(high: 9, low: 9)) }),
            complete: true,
            jobCount: jobs.count,
            anyCheckedEveryRun: false
        )
        #expect(snapshot.write(root: directory.path))
        let order = Array(names.indices)
        let dependencyPositions = names.map { _ in [Int]() }
        // Six independent tasks, one of them changed: a part of one task. With an `each:` task
        // among them, the whole plan.
        for wholePlan in [false, true] {
            let (read, base) = try #require(UpToDateSnapshot.readWithBase(root: directory.path))
            var scan = UpToDateSnapshot.Scan(snapshot: read, dirtyJobs: ["t2"], changedPaths: 1)
            scan.base = base
            scan.jobPositions = Dictionary(uniqueKeysWithValues: names.indices.map { (names[$0], $0) })
            scan.dirtyAtPosition = names.indices.map { $0 == 2 }
            var outline = TaskOutline(reservingCapacity: names.count)
            for (position, name) in names.enumerated() {
                outline.append(
                    name: name,
                    flags: wholePlan && position == 4 ? [.runsHere, .each] : .runsHere,
                    aliases: []
                )
            }
            let held = BuildSession.HeldScan(scan)
            let part = held.choose(outline, order, dependencyPositions, false)
            let after = try #require(held.take())
            #expect(held.scan == nil)
            if wholePlan {
                #expect(part == nil)
                #expect(after.detailReleased && after.snapshot.jobs.isEmpty && after.snapshot.paths.isEmpty)
                // What a run of the whole plan asks it while it runs is still there, and the
                // snapshot's paths and jobs read back from its file.
                #expect(after.jobPositions.count == names.count && after.snapshot.published.count == names.count)
                #expect(try #require(after.wholeSnapshot()).jobs.map(\.key) == names)
            } else {
                #expect(part?.kept == names.indices.map { $0 == 2 })
                #expect(!after.detailReleased && after.snapshot.jobs.count == names.count)
            }
        }
    }
}
