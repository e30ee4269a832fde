import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

@Suite("The up-to-date snapshot")
struct UpToDateSnapshotTests {
    func record(_ path: String, relative: String, seenAt: Int64? = nil) throws -> WatchedPath {
        let stat = try #require(FileSignature.of(path))
        return WatchedPath(
            path: relative,
            kind: .file,
            stat: stat,
            hash: try FileContent.hash(path),
            seenAt: seenAt ?? FileHasher.realTime()
        )
    }

    @Test("a file whose status is unchanged and old enough is unchanged without being read")
    func settledFileIsUnchanged() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.txt", "alpha")
        try setModificationTime(file, secondsAgo: 10)
        let entry = try record(file, relative: "a.txt")
        guard case .unchanged = entry.compare(root: directory.path) else {
            Issue.record("expected unchanged")
            return
        }
        try directory.write("a.txt", "alphx")
        guard case .changed = entry.compare(root: directory.path) else {
            Issue.record("an edit must be seen")
            return
        }
    }

    @Test(
        "a racy file (mtime within the window of its record) is read: same bytes vouch anew, other bytes are a change"
    )
    func racyFileIsRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.txt", "alpha")
        let stat = try #require(FileSignature.of(file))
        // Recorded in the same clock tick as the write: the status can't vouch for the content.
        var entry = try record(file, relative: "a.txt", seenAt: stat.modified + 1_000_000)
        guard case .sameContent(let refreshed) = entry.compare(root: directory.path) else {
            Issue.record("expected a re-read with the same content")
            return
        }
        #expect(refreshed.hash == entry.hash)
        #expect(refreshed.seenAt >= stat.modified)
        // Same size, same status values, other bytes: only reading tells.
        try directory.write("a.txt", "alphz")
        entry.stat = try #require(FileSignature.of(file))
        entry.seenAt = entry.stat.modified + 1_000_000
        guard case .changed = entry.compare(root: directory.path) else {
            Issue.record("a racy edit must be seen")
            return
        }
    }

    @Test("absent paths must stay absent, and a directory that gains an entry has changed")
    func absentAndDirectories() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let absent = WatchedPath(absent: "missing.txt", seenAt: FileHasher.realTime())
        guard case .unchanged = absent.compare(root: directory.path) else {
            Issue.record("still absent")
            return
        }
        try directory.write("missing.txt", "now here")
        guard case .changed = absent.compare(root: directory.path) else {
            Issue.record("an absent path that appears has changed")
            return
        }
        try FileManager.default.createDirectory(atPath: directory.path("src"), withIntermediateDirectories: true)
        try setModificationTime(directory.path("src"), secondsAgo: 10)
        let stat = try #require(FileSignature.of(directory.path("src")))
        let watched = WatchedPath(
            path: "src",
            kind: .directory,
            stat: stat,
            hash: WatchedPath.zeroHash,
            seenAt: FileHasher.realTime()
        )
        guard case .unchanged = watched.compare(root: directory.path) else {
            Issue.record("untouched directory")
            return
        }
        try directory.write("src/new.c", "int x;")
        guard case .changed = watched.compare(root: directory.path) else {
            Issue.record("a directory with a new entry has changed")
            return
        }
    }

    @Test(
        "a racy directory (changed within the window of its look) is read again: the same entries vouch anew, others are a change"
    )
    func racyDirectoryIsRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("out/a.o", "a")
        try directory.write("out/b.o", "b")
        let out = directory.path("out")
        // A glob's look, as a run takes it right after a job wrote into the directory.
        var look = VisitedDirectory.read(out).visited
        let stat = try #require(look.stat)
        let fingerprint = try #require(look.listing)
        #expect(fingerprint != WatchedPath.zeroHash)
        let racy = WatchedPath(path: "out", kind: .directory, stat: stat, hash: fingerprint, seenAt: stat.modified + 1)
        guard case .sameContent(let refreshed) = racy.compare(root: directory.path) else {
            Issue.record("the same entries vouch for a racy directory")
            return
        }
        #expect(refreshed.hash == fingerprint && refreshed.stat == stat && refreshed.seenAt > racy.seenAt)
        // Settled, the status alone decides: no read.
        var settled = racy
        settled.seenAt = stat.modified + FileSignature.racyWindow + 1
        guard case .unchanged = settled.compare(root: directory.path) else {
            Issue.record("a settled directory is unchanged by its status")
            return
        }
        // An entry added in the same clock tick as the look leaves the status as it was: only the
        // entries tell. (Recorded here as a look at the status now with the old entries.)
        try directory.write("out/c.o", "c")
        look = VisitedDirectory.read(out).visited
        var sameTick = racy
        sameTick.stat = try #require(look.stat)
        sameTick.seenAt = sameTick.stat.modified + 1
        guard case .changed = sameTick.compare(root: directory.path) else {
            Issue.record("a racy directory with another entry has changed")
            return
        }
        // An entry added and removed again: the status moved, the entries are the same.
        try FileManager.default.removeItem(atPath: directory.path("out/c.o"))
        guard case .sameContent = racy.compare(root: directory.path) else {
            Issue.record("the same entries vouch for a touched directory")
            return
        }
        // A look without a fingerprint (an older snapshot's) can't be vouched for by reading;
        // nor can a directory that became a file.
        var unfingerprinted = racy
        unfingerprinted.hash = WatchedPath.zeroHash
        guard case .changed = unfingerprinted.compare(root: directory.path) else {
            Issue.record("a racy directory without a fingerprint has changed")
            return
        }
        try FileManager.default.removeItem(atPath: out)
        try directory.write("out", "")
        guard case .changed = racy.compare(root: directory.path) else {
            Issue.record("a directory that became a file has changed")
            return
        }
    }

    @Test("a directory's fingerprint is its set of names, kinds and links, in any order, and never zero")
    func directoryFingerprint() {
        typealias Entry = DirectoryListing.Entry
        let entries = [
            Entry(name: "a.c", kind: .file, isLink: false),
            Entry(name: "sub", kind: .directory, isLink: false),
            Entry(name: "link", kind: .file, isLink: true),
        ]
        let fingerprint = DirectoryListing.fingerprint(entries)
        #expect(DirectoryListing.fingerprint(entries.reversed()) == fingerprint)
        #expect(DirectoryListing.fingerprint([entries[1], entries[2], entries[0]]) == fingerprint)
        var variants: [[Entry]] = [
            [], Array(entries.prefix(2)), entries + [Entry(name: "b.c", kind: .file, isLink: false)],
        ]
        for position in entries.indices {
            var renamed = entries
            renamed[position].name += "x"
            var retyped = entries
            retyped[position].kind = entries[position].kind == .file ? .directory : .file
            var relinked = entries
            relinked[position].isLink.toggle()
            variants += [renamed, retyped, relinked]
        }
        var seen: Set<ContentHash> = [fingerprint]
        for variant in variants {
            let other = DirectoryListing.fingerprint(variant)
            #expect(other != WatchedPath.zeroHash)
            #expect(seen.insert(other).inserted, "\(variant.map(\.name))")
        }
    }

    /// A stand-in index that vouches for one blob id whatever the status.
    struct Vouching: TrackedContent {
        var id: ContentHash?
        func contentID(of path: String, status: FileSignature) -> ContentHash? { id }
        func computeContentID(of file: String) -> ContentHash? { nil }
    }

    @Test("a touched file hashed through git is the same while the index vouches for its blob, changed otherwise")
    func trackedFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("src/a.c", "int a;")
        try setModificationTime(file, secondsAgo: 10)
        let blob = ContentHash(high: 0xb10b, low: 2)
        let recorded = WatchedPath(
            path: "src/a.c",
            file: HashedFile(
                stat: try #require(FileSignature.of(file)),
                hash: blob,
                hashedAt: FileHasher.realTime(),
                algorithm: .gitBlob
            )
        )
        #expect(recorded.kind == .trackedFile)
        guard case .unchanged = recorded.compare(root: directory.path) else {
            Issue.record("untouched: unchanged"); return
        }
        try setModificationTime(file, secondsAgo: 5)
        guard case .sameContent(let refreshed) = recorded.compare(root: directory.path, tracked: Vouching(id: blob))
        else {
            Issue.record("the index vouches for the same blob: same content")
            return
        }
        #expect(refreshed.kind == .trackedFile && refreshed.hash == blob)
        guard
            case .changed = recorded.compare(root: directory.path, tracked: Vouching(id: ContentHash(high: 1, low: 1)))
        else {
            Issue.record("another blob: changed")
            return
        }
        guard case .changed = recorded.compare(root: directory.path) else {
            Issue.record("no index: changed (the check decides)"); return
        }
    }

    @Test("the encoding round-trips, and a damaged file is no snapshot at all")
    func encodingRoundTrips() throws {
        let file = WatchedPath(
            path: "src/a.c",
            kind: .file,
            stat: FileSignature(device: 9, inode: 4, size: 3, modified: 1, changed: 2),
            hash: ContentHash(high: 5, low: 6),
            seenAt: 7
        )
        let snapshot = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 8, low: 9),
            targets: ["build", "test"],
            paths: [file, WatchedPath(absent: "gone", seenAt: 10)],
            jobs: [UpToDateSnapshot.Job(key: "compile src/a.c", checkedEveryRun: false, paths: [0, 1])],
            published: ["compile src/a.c": ContentHash(high: 11, low: 12), "compile": ContentHash(high: 13, low: 14)],
            complete: true,
            jobCount: 1,
            anyCheckedEveryRun: false
        )
        let bytes = snapshot.encoded()
        let decoded = try #require(UpToDateSnapshot.decode(bytes))
        #expect(decoded.taskfileIdentity == snapshot.taskfileIdentity)
        #expect(decoded.targets == ["build", "test"])
        #expect(decoded.paths == snapshot.paths)
        #expect(decoded.jobs.map(\.key) == ["compile src/a.c"])
        #expect(decoded.jobs.first?.paths == [0, 1])
        #expect(decoded.published == snapshot.published)
        #expect(decoded.complete)
        for cut in [0, 5, bytes.count / 2, bytes.count - 1] {
            #expect(UpToDateSnapshot.decode(Array(bytes.prefix(cut))) == nil, "truncated at \(cut)")
        }
        var flipped = bytes
        flipped[3] ^= 0xff
        #expect(UpToDateSnapshot.decode(flipped) == nil)
    }

    @Test("written as it is encoded, the file holds the encoding's bytes, however many buffers it took")
    func streamedWriteIsTheEncoding() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path + "/.kiln", withIntermediateDirectories: true)
        // ~600 KB: ten buffers and more; paths short (stored inline) and long, names of every length.
        let count = 6_000
        let paths = (0..<count).map { (index: Int) -> WatchedPath in
            let number = UInt64(index)
            let stat = FileSignature(
                device: number,
                inode: number &* 31,
                size: Int64(index % 4096),
                modified: Int64(index) << 20,
                changed: -Int64(index)
            )
            let name: String = "src/" + String(repeating: "d/", count: index % 40) + "f\(index).txt"
            let hash = ContentHash(high: number &* 0x9E37_79B9, low: ~number)
            let kind: WatchedPath.Kind = index % 7 == 0 ? .trackedFile : .file
            return WatchedPath(path: name, kind: kind, stat: stat, hash: hash, seenAt: Int64(index) << 30)
        }
        let jobs = (0..<count).map { index in
            UpToDateSnapshot.Job(
                key: "each src/f\(index).txt",
                checkedEveryRun: index % 11 == 0,
                paths: index % 3 == 0 ? [] : [Int32(index), Int32((index * 7) % count)]
            )
        }
        var published: [String: ContentHash] = ["each": ContentHash(high: 1, low: 2)]
        for job in jobs { published[job.key] = ContentHash(high: UInt64(job.key.utf8.count), low: 3) }
        let snapshot = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 8, low: 9),
            targets: ["each", String(repeating: "t", count: 300)],
            paths: paths,
            jobs: jobs,
            published: published,
            complete: true,
            jobCount: jobs.count,
            anyCheckedEveryRun: true
        )
        #expect(snapshot.write(root: directory.path))
        let written = try #require(FileManager.default.contents(atPath: UpToDateSnapshot.path(root: directory.path)))
        let encoded = snapshot.encoded()
        #expect(written.count == encoded.count)
        #expect(Array(written) == encoded)
        let decoded = try #require(UpToDateSnapshot.decode(Array(written)))
        #expect(decoded.paths == paths)
        #expect(decoded.jobs.map(\.paths) == jobs.map(\.paths))
        #expect(decoded.published == published)
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/.kiln") == ["snapshot"])
    }

    /// `gen.h` as one job read it, and as another job rewrote it later.
    static func rewrittenHeader() -> (old: WatchedPath, new: WatchedPath) {
        let old = WatchedPath(
            path: "gen.h",
            kind: .file,
            stat: FileSignature(device: 9, inode: 1, size: 1, modified: 1, changed: 1),
            hash: ContentHash(high: 1, low: 1),
            seenAt: 100
        )
        var new = old
        new.stat.modified = 2
        new.hash = ContentHash(high: 2, low: 2)
        new.seenAt = 200
        return (old, new)
    }

    @Test("a job that saw an older state of a path another job rewrote is left out, and the snapshot is incomplete")
    func conflictingViewsDropTheOlderJob() throws {
        let recorder = SnapshotRecorder(previous: nil)
        let (old, new) = Self.rewrittenHeader()
        let other = WatchedPath(absent: "other", seenAt: 50)
        recorder.record(key: JobKey(task: "reader"), checkedEveryRun: false, paths: [old, other])
        recorder.record(key: JobKey(task: "writer"), checkedEveryRun: false, paths: [new])
        let snapshot = try recorder.snapshot(expectedJobs: 2)
        #expect(snapshot.jobs.map(\.key) == ["writer"])
        #expect(snapshot.paths.first { $0.path == "gen.h" } == new)
        #expect(!snapshot.complete)

        let consistent = SnapshotRecorder(previous: nil)
        consistent.record(key: JobKey(task: "a"), checkedEveryRun: false, paths: [new])
        consistent.record(key: JobKey(task: "b"), checkedEveryRun: false, paths: [new, other])
        let whole = try consistent.snapshot(expectedJobs: 2)
        #expect(Set(whole.jobs.map(\.key)) == ["a", "b"])
        #expect(whole.paths.count == 2)
        #expect(whole.complete)
    }

    @Test("a run that carries no job builds its table afresh; one that carries jobs checks fresh paths against theirs")
    func onlyCarriedJobsBringThePreviousTable() throws {
        let (old, new) = Self.rewrittenHeader()
        // The previous snapshot saw gen.h in a later state than this run's job did, and watched
        // 500 paths this run's jobs don't.
        let stale = (0..<500).map { WatchedPath(absent: "gone\($0)", seenAt: 10) }
        let previous = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 0, low: 0),
            targets: [],
            paths: stale + [new],
            jobs: [
                UpToDateSnapshot.Job(key: "writer", checkedEveryRun: false, paths: [500]),
                UpToDateSnapshot.Job(key: "lister", checkedEveryRun: false, paths: Array(0..<500)),
            ],
            published: [:],
            complete: true,
            jobCount: 2,
            anyCheckedEveryRun: false
        )
        // Every job ran again: no job of the previous snapshot is in this one, so its state of
        // gen.h is no one's view and can't exclude the job that read gen.h.
        let fresh = SnapshotRecorder(previous: previous)
        fresh.record(key: JobKey(task: "reader"), checkedEveryRun: false, paths: [old])
        let afresh = try fresh.snapshot(expectedJobs: 1)
        #expect(afresh.jobs.map(\.key) == ["reader"])
        #expect(afresh.paths == [old])
        #expect(afresh.complete)

        // A job carried on the previous snapshot's word saw gen.h newer: the reader's view is
        // the older one and it is left out; the carried job keeps its path, and the paths only
        // the previous snapshot's other job watched are dropped.
        let carrying = SnapshotRecorder(previous: previous)
        carrying.carry(key: JobKey(task: "writer"), index: 0)
        carrying.record(key: JobKey(task: "reader"), checkedEveryRun: false, paths: [old])
        let carried = try carrying.snapshot(expectedJobs: 2)
        #expect(carried.jobs.map(\.key) == ["writer"])
        #expect(carried.paths == [new])
        #expect(carried.jobs.first?.paths == [0])
        #expect(!carried.complete)
    }

    @Test("of many jobs that saw a path in three states, exactly those that saw its newest state stay")
    func threeStatesKeepExactlyTheNewestsJobs() throws {
        let base = WatchedPath(
            path: "gen.h",
            kind: .file,
            stat: FileSignature(device: 9, inode: 1, size: 1, modified: 1, changed: 1),
            hash: ContentHash(high: 1, low: 1),
            seenAt: 100
        )
        let states = (0..<3).map { state -> WatchedPath in
            var path = base
            path.stat.modified = Int64(state)
            path.hash = ContentHash(high: UInt64(state), low: 7)
            return path
        }
        let other = WatchedPath(absent: "other", seenAt: 50)
        // Several orders of recording (the recorder's table has none of its own to rely on).
        for round in 0..<8 {
            let recorder = SnapshotRecorder(previous: nil)
            var saw: [String: Int] = [:]
            var newest = (seenAt: Int64.min, state: -1)
            for job in 0..<12 {
                let state = (job * 7 + round) % 3
                var path = states[state]
                path.seenAt = Int64(100 + (job * 5 + round * 3) % 17)
                // The same state seen later only moves its time; the newest look decides.
                if path.seenAt > newest.seenAt { newest = (path.seenAt, state) }
                saw["job\(job)"] = state
                recorder.record(
                    key: JobKey(task: "job\(job)"),
                    checkedEveryRun: false,
                    paths: job % 2 == 0 ? [path] : [other, path]
                )
            }
            let snapshot = try recorder.snapshot(expectedJobs: 12)
            let expected = Set(saw.filter { $0.value == newest.state }.keys)
            #expect(Set(snapshot.jobs.map(\.key)) == expected, "round \(round)")
            #expect(snapshot.paths.first { $0.path == "gen.h" }?.hash == states[newest.state].hash)
            #expect(!snapshot.complete)
            // What was recorded was taken: a second snapshot has no job and claims nothing.
            let again = try recorder.snapshot(expectedJobs: 12)
            #expect(again.jobs.isEmpty && !again.complete)
        }
    }

    /// Records of every kind of path, then a change of every kind: what the launcher's look
    /// (no git index) hands over must be what the full command's own look (with the index) finds.
    @Test(
        "the launcher's look, handed over, is the full scan's look for every kind of path and change; for other snapshot bytes it is ignored"
    )
    func handoverIsTheScansLook() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let now = FileHasher.realTime()
        var paths: [WatchedPath] = []
        // Files: one left alone, one edited, one deleted, one racy with the same bytes (re-read,
        // refreshed), one racy with other bytes of the same size.
        for name in ["kept", "edited", "deleted", "racy-same", "racy-other"] {
            let file = try directory.write("src/\(name).txt", "\(name)\n")
            try setModificationTime(file, secondsAgo: 10)
            paths.append(try record(file, relative: "src/\(name).txt"))
        }
        for name in ["racy-same", "racy-other"] {
            let file = directory.path("src/\(name).txt")
            try directory.write("src/\(name).txt", name == "racy-same" ? "\(name)\n" : "\(name)!")
            let index = try #require(paths.firstIndex { $0.path == "src/\(name).txt" })
            paths[index] = try record(file, relative: "src/\(name).txt", seenAt: FileSignature.of(file)!.modified)
            if name == "racy-other" {
                paths[index].hash = ContentHash(high: 1, low: 2)  // what it was: other bytes
            }
        }
        try directory.write("src/edited.txt", "edited, and longer\n")
        try FileManager.default.removeItem(atPath: directory.path("src/deleted.txt"))
        // Absent paths: one still absent, one that appeared.
        paths.append(WatchedPath(absent: "gone.txt", seenAt: now))
        paths.append(WatchedPath(absent: "appeared.txt", seenAt: now))
        try directory.write("appeared.txt", "here")
        // A directory that gained an entry, and one that didn't.
        for name in ["grown", "still"] {
            let path = try directory.makeDirectory(name)
            try setModificationTime(path, secondsAgo: 10)
            paths.append(
                WatchedPath(
                    path: name,
                    kind: .directory,
                    stat: try #require(FileSignature.of(path)),
                    hash: WatchedPath.zeroHash,
                    seenAt: now
                )
            )
        }
        try directory.write("grown/new.c", "int x;")
        // Files hashed through git: one untouched, one touched (the index vouches for it), one
        // touched whose blob the index no longer has.
        let blob = ContentHash(high: 0xb10b, low: 2)
        for name in ["tracked-kept", "tracked-touched", "tracked-edited"] {
            let file = try directory.write("git/\(name).c", "int \(name.count);")
            try setModificationTime(file, secondsAgo: 10)
            let stat = try #require(FileSignature.of(file))
            paths.append(
                WatchedPath(
                    path: "git/\(name).c",
                    file: HashedFile(stat: stat, hash: blob, hashedAt: now, algorithm: .gitBlob)
                )
            )
            if name != "tracked-kept" { try setModificationTime(file, secondsAgo: 5) }
        }
        struct Index: TrackedContent {
            let blob: ContentHash
            func contentID(of path: String, status: FileSignature) -> ContentHash? {
                path.hasSuffix("tracked-edited.c") ? ContentHash(high: 3, low: 3) : blob
            }
            func computeContentID(of file: String) -> ContentHash? { nil }
        }
        let index = Index(blob: blob)

        let bytes = Array("the snapshot's bytes".utf8)
        let launcher = UpToDateSnapshot.look(at: paths, root: directory.path, tracked: nil)
        let handover = UpToDateSnapshot.Handover(
            snapshot: ContentHash.of(bytes),
            changed: launcher.changed,
            refreshed: launcher.refreshed
        )
        // It crosses from the launcher to the library as bytes.
        #expect(UpToDateSnapshot.Handover.decode(handover.encoded()) == handover)
        #expect(UpToDateSnapshot.Handover.decode(Array(handover.encoded().dropLast())) == nil)

        func named(_ look: (changed: [Int], refreshed: [(Int, WatchedPath)])) -> (
            changed: Set<String>, refreshed: [String: WatchedPath.Kind]
        ) {
            (
                Set(look.changed.map { paths[$0].path }),
                Dictionary(uniqueKeysWithValues: look.refreshed.map { (paths[$0.0].path, $0.1.kind) })
            )
        }
        let scanned = named(UpToDateSnapshot.look(at: paths, root: directory.path, tracked: index))
        let handed = try #require(handover.look(at: paths, of: bytes, root: directory.path, tracked: index))
        #expect(named(handed).changed == scanned.changed)
        #expect(named(handed).refreshed == scanned.refreshed)
        // The class is covered: each kind of change was seen.
        #expect(
            scanned.changed
                == [
                    "src/edited.txt", "src/deleted.txt", "src/racy-other.txt", "appeared.txt", "grown",
                    "git/tracked-edited.c",
                ]
        )
        #expect(scanned.refreshed == ["src/racy-same.txt": .file, "git/tracked-touched.c": .trackedFile])
        // The launcher alone can't vouch for a touched tracked file: the handover asks the index.
        #expect(named(launcher).changed.contains("git/tracked-touched.c"))
        // Made against other bytes (another run replaced the snapshot), or naming a path the
        // snapshot doesn't have, it is no answer: the scan looks for itself.
        #expect(handover.look(at: paths, of: bytes + [0], root: directory.path, tracked: index) == nil)
        #expect(handover.look(at: Array(paths.prefix(3)), of: bytes, root: directory.path, tracked: index) == nil)
    }

    @Test("a job whose paths couldn't be pinned (changed while read) makes the snapshot incomplete")
    func uncapturedJobMakesItIncomplete() throws {
        let recorder = SnapshotRecorder(previous: nil)
        recorder.record(key: JobKey(task: "a"), checkedEveryRun: false, paths: nil)
        let snapshot = try recorder.snapshot(expectedJobs: 1)
        #expect(!snapshot.complete)
        #expect(snapshot.jobs.isEmpty)
    }
}

@Suite("Sealed files written as they are encoded")
struct SealedFileWriterTests {
    @Test("any length, in pieces of any size, through buffers of any size: the bytes and their checksum")
    func piecesMakeTheSealedWhole() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/sealed"
        for length in 0..<80 {
            let content = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            var sealed = content
            FileChecksum.seal(&sealed)
            for bufferSize in [1, 8, 13, 64] {
                let file = try #require(SealedFileWriter(path: path, count: length, bufferSize: bufferSize))
                var writer = file.makeBuffer()
                var offset = 0
                var piece = 1
                while offset < length {
                    let end = min(length, offset + piece)
                    writer.append(Array(content[offset..<end]))
                    file.drain(&writer)
                    offset = end
                    piece = piece % 5 + 1
                }
                #expect(file.finish(&writer))
                let written = try #require(FileManager.default.contents(atPath: path))
                #expect(Array(written) == sealed, "\(length) bytes through \(bufferSize)")
            }
        }
    }

    @Test("a length other than the one promised, or a directory that isn't there, puts nothing in place")
    func failuresLeaveNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/sealed"
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        let file = try #require(SealedFileWriter(path: path, count: 10))
        var writer = file.makeBuffer()
        writer.append(Array(repeating: 1, count: 9))
        #expect(!file.finish(&writer))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["sealed"])
        #expect(SealedFileWriter(path: directory.path + "/missing/sealed", count: 1) == nil)
        // Dropped before it finishes (an encoder that stopped): nothing is left.
        do {
            let dropped = try #require(SealedFileWriter(path: path, count: 4))
            var buffer = dropped.makeBuffer()
            buffer.append([1, 2])
            dropped.drain(&buffer)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["sealed"])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
    }
}

@Suite("The binary writer's fixed-width words")
struct BinaryWriterWordTests {
    @Test func eightWordsAtOnceAreTheBytesOfEightWrites() {
        var values: [UInt64] = [0, 1, 0x0102_0304_0506_0708, .max, 1 << 63, 0xFF, 0xFF00, 42]
        for _ in 0..<8 { values.append(UInt64.random(in: 0...UInt64.max)) }
        for start in stride(from: 0, to: values.count, by: 8) {
            let words = Array(values[start..<start + 8])
            var one = BinaryWriter()
            one.write(byte: 7)  // unaligned, as after a snapshot path's kind byte
            for word in words { one.write(word) }
            var eight = BinaryWriter()
            eight.write(byte: 7)
            eight.write(words: words[0], words[1], words[2], words[3], words[4], words[5], words[6], words[7])
            #expect(one.bytes == eight.bytes)
            var reader = BinaryReader(bytes: eight.bytes)
            _ = reader.readByte()
            #expect((0..<8).map { _ in reader.readUInt64() } == words.map { $0 })
        }
    }
}

@Suite("The binary reader's integers")
struct BinaryReaderIntegerTests {
    @Test("every integer reads back as written, one byte or ten, and a truncated or overlong one reads as nil")
    func integersRoundTrip() {
        var values: [Int] = [0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, -8193, .max, .min, .max - 1, .min + 1]
        for shift in 0..<63 { values += [1 << shift, -(1 << shift), (1 << shift) - 1] }
        for _ in 0..<200 { values.append(Int.random(in: .min ... .max)) }
        var writer = BinaryWriter()
        writer.write(byte: 9)
        for value in values { writer.write(value) }
        var reader = BinaryReader(bytes: writer.bytes)
        #expect(reader.readByte() == 9)
        #expect(values.map { _ in reader.readInteger() } == values.map { $0 })
        #expect(reader.offset == writer.bytes.count)
        #expect(reader.readInteger() == nil)
        // Cut inside a many-byte integer: nil, never a value made of what was there.
        for value in [64, -8193, Int.max, Int.min] {
            var one = BinaryWriter()
            one.write(value)
            for length in 0..<one.bytes.count {
                var cut = BinaryReader(bytes: Array(one.bytes.prefix(length)))
                #expect(cut.readInteger() == nil, "\(value) cut to \(length) bytes")
            }
        }
        // Continuation bits past 64 bits of value: malformed.
        var overlong = BinaryReader(bytes: [UInt8](repeating: 0x80, count: 11) + [0])
        #expect(overlong.readInteger() == nil)
    }
}

extension SnapshotRecorder {
    /// The snapshot of a run with no Taskfile identity, targets or published signatures to speak
    /// of, as the next run reads it (encoded as the recorder writes it, and decoded).
    func snapshot(expectedJobs: Int) throws -> UpToDateSnapshot {
        let contents = snapshot(
            taskfileIdentity: ContentHash(high: 0, low: 0),
            targets: [],
            published: PublishedSignatures(),
            expectedJobs: expectedJobs
        )
        return try #require(UpToDateSnapshot.decode(contents.encoded()))
    }
}
