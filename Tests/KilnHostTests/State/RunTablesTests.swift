import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

#if canImport(Glibc)
    import Glibc
#endif

/// The compact tables a run keeps one entry a job in (issue 15, item 3): they must say what
/// the dictionaries they replaced said.
@Suite("A run's per-job tables")
struct RunTablesTests {
    @Test("a chunked array reads back what was appended across chunks, lets passed chunks go, and shrinks")
    func chunkedArray() {
        var array = ChunkedArray<Int>()
        let count = 3 * ChunkedArray<Int>.chunkSize + 17
        for value in 0..<count { array.append(value * 3) }
        #expect(array.count == count)
        #expect((0..<count).allSatisfy { array[$0] == $0 * 3 })
        array.swapAt(1, count - 1)
        #expect(array[1] == (count - 1) * 3 && array[count - 1] == 3)
        array.removeLast(ChunkedArray<Int>.chunkSize + 20)
        #expect(array.count == count - ChunkedArray<Int>.chunkSize - 20)
        #expect(array[array.count - 1] == (array.count - 1) * 3)
        array.append(-1)
        #expect(array[array.count - 1] == -1)
        // Released chunks are gone; the ones after are intact.
        array.release(before: ChunkedArray<Int>.chunkSize + 5)
        #expect(array[ChunkedArray<Int>.chunkSize] == ChunkedArray<Int>.chunkSize * 3)
        #expect(array[array.count - 1] == -1)
    }

    @Test("the path table finds every path it holds, and no other, past growing its index")
    func pathTable() {
        let start = (0..<10).map { WatchedPath(absent: "base/\($0)", seenAt: 1) }
        // Room for fewer than it will hold: the index grows as paths are appended.
        var table = WatchedPathTable(start, capacity: 12)
        for number in 0..<1000 {
            let position = table.append(WatchedPath(absent: "src/file\(number).c", seenAt: Int64(number)))
            #expect(position == Int32(10 + number))
        }
        #expect(table.count == 1010)
        for number in 0..<10 { #expect(table.position(of: "base/\(number)") == Int32(number)) }
        for number in 0..<1000 { #expect(table.position(of: "src/file\(number).c") == Int32(10 + number)) }
        #expect(table.position(of: "src/file1000.c") == nil)
        #expect(table.position(of: "") == nil)
        var later = table[Int32(12)]
        later.seenAt = 99
        table[Int32(12)] = later
        #expect(table[Int32(12)].seenAt == 99)
    }

    @Test("a job key's stored form hashes and encodes the same whether or not the string is made")
    func storedKeyHashesAsItsString() {
        let keys = [
            JobKey(task: "build"),
            JobKey(task: "compile", source: "src/a.c"),
            JobKey(task: "ns:compile-everything-here", source: "a very/long path/with spaces/é.c"),
            JobKey(task: "", source: ""),
        ]
        for key in keys {
            var made = ContentHasher()
            made.combine(key.stored)
            var parts = ContentHasher()
            parts.combine(storedKeyOf: key)
            let (whole, inParts) = (made.finalize(), parts.finalize())
            #expect(whole == inParts, "\(key)")
            // Written to the snapshot in parts: the bytes, and the size counted, of the string.
            var string = BinaryWriter()
            string.write(key.stored)
            var pieces = BinaryWriter()
            pieces.write(key: key.task, source: key.source)
            #expect(pieces.bytes == string.bytes, "\(key)")
            #expect(BinaryWriter.size(ofKey: key.task, source: key.source) == string.bytes.count, "\(key)")
        }
    }

    @Test("a run's table of signatures is made for its plan's tasks: one for each fits without growing")
    func signaturesTableMadeForThePlan() throws {
        let count = 10_000
        var table = PublishedSignatures(expecting: count)
        let capacity = table.named.capacity
        #expect(capacity >= count)
        for index in 0..<count { table[name: "t\(index)"] = ContentHash(high: UInt64(index), low: 7) }
        #expect(table.named.capacity == capacity)
        #expect((0..<count).allSatisfy { table[name: "t\($0)"] == ContentHash(high: UInt64($0), low: 7) })
        // The run's state makes its table for the count it is given.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let incremental = IncrementalState(state: nil, root: directory.path, plannedTasks: count)
        #expect(incremental.signatureCapacity >= count)
        #expect(IncrementalState(state: nil, root: directory.path).signatureCapacity < count)
    }

    @Test("an each: task's jobs publish by position; what they published is what a table by key said")
    func publishedByPosition() {
        let sources = ["a.c", "b.c", "sub/c.c", "z.c"]
        var byKey: [String: ContentHash] = [:]
        var table = PublishedSignatures()
        // The previous snapshot's table: the task's name, a job of this run's list, and a job
        // whose file is gone.
        table.carry([
            "compile": ContentHash(high: 9, low: 9),
            JobKey(task: "compile", source: "b.c").stored: ContentHash(high: 8, low: 8),
            JobKey(task: "compile", source: "gone.c").stored: ContentHash(high: 7, low: 7),
        ])
        byKey = table.named
        table.listed(task: "compile", sources: sources)
        for (position, source) in sources.enumerated() where source != "b.c" {
            let key = JobKey(task: "compile", source: source)
            let signature = ContentHash(high: UInt64(position + 1), low: 1)
            table[key] = signature
            byKey[key.stored] = signature
        }
        // Read by key, each says what the table by key says (b.c: the previous run's).
        for source in sources + ["gone.c", "never.c"] {
            let key = JobKey(task: "compile", source: source)
            #expect(table[key] == byKey[key.stored], "\(source)")
        }
        #expect(table[name: "compile"] == ContentHash(high: 9, low: 9))

        // The task's signature is the one combined from the table by key.
        var expected = ContentHasher()
        for source in sources {
            let key = JobKey(task: "compile", source: source)
            expected.combine(key.stored)
            expected.combine(byKey[key.stored] ?? ContentHash(high: 0, low: 0))
        }
        let signature = expected.finalize()
        #expect(table.eachTaskSignature("compile", sources: sources) == signature)
        // A list other than the noted one is read key by key, to the same effect.
        var fewer = ContentHasher()
        for source in ["b.c", "z.c"] {
            let key = JobKey(task: "compile", source: source)
            fewer.combine(key.stored)
            fewer.combine(byKey[key.stored] ?? ContentHash(high: 0, low: 0))
        }
        let fewerSignature = fewer.finalize()
        #expect(table.eachTaskSignature("compile", sources: ["b.c", "z.c"]) == fewerSignature)

        // Written to the next snapshot: the task's name and this run's jobs, each once; not the
        // previous run's keys of a listed task.
        var written: [String: ContentHash] = [:]
        table.forEach { name, source, signature in
            let key = JobKey(task: name, source: source).stored
            #expect(written.updateValue(signature, forKey: key) == nil, "\(key)")
        }
        #expect(table.count == written.count)
        var published = byKey
        published[JobKey(task: "compile", source: "gone.c").stored] = nil
        published[JobKey(task: "compile", source: "b.c").stored] = nil
        #expect(written == published)
    }

    @Test("a key recorded twice keeps its last record in the snapshot")
    func laterRecordOfAKeyWins() throws {
        let recorder = SnapshotRecorder(previous: nil)
        let first = WatchedPath(absent: "first", seenAt: 1)
        let second = WatchedPath(absent: "second", seenAt: 2)
        recorder.record(key: JobKey(task: "job", source: "x"), checkedEveryRun: true, paths: [first])
        recorder.record(key: JobKey(task: "other"), checkedEveryRun: false, paths: [first])
        recorder.record(key: JobKey(task: "job", source: "x"), checkedEveryRun: false, paths: [second])
        let snapshot = try recorder.snapshot(expectedJobs: 2)
        #expect(snapshot.complete)
        #expect(snapshot.jobs.map(\.key) == ["other", JobKey(task: "job", source: "x").stored])
        let job = try #require(snapshot.jobs.last)
        #expect(!job.checkedEveryRun && job.paths.map { snapshot.paths[Int($0)].path } == ["second"])
    }
}

/// What a run records for every job goes to a file in `.kiln/` (issue 15, item 3): read back, it
/// must be what was recorded, however it is read.
@Suite("What a run records, out of memory")
struct SpilledRecordsTests {
    /// Pieces of many sizes, one of them past the 64 KiB buffer.
    private static func pieces() -> [[UInt8]] {
        (0..<3000).map { number in
            let size = number == 1500 ? SpillFile.bufferSize + 100 : (number * 37) % 200
            return (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ number) }
        }
    }

    private static func bytes(_ store: SpillFile, at offset: Int, count: Int) -> [UInt8] {
        store.withBytes(at: offset, count: count) { [UInt8]($0) }
    }

    @Test(
        "bytes appended to the file, or kept in memory, read back in order, out of order, and before they are written"
    )
    func spillFileReadsBack() throws {
        let directory = try TemporaryDirectory()
        for store in [SpillFile(directory: directory.path), SpillFile(directory: nil)] {
            let pieces = Self.pieces()
            var offsets: [Int] = []
            for (number, piece) in pieces.enumerated() {
                offsets.append(piece.withUnsafeBytes { store.append($0) })
                // The newest piece, still in the buffer, reads back too.
                if number % 500 == 0 { #expect(Self.bytes(store, at: offsets[number], count: piece.count) == piece) }
            }
            #expect(store.count == pieces.reduce(0) { $0 + $1.count })
            for (number, piece) in pieces.enumerated() {
                #expect(Self.bytes(store, at: offsets[number], count: piece.count) == piece, "piece \(number)")
            }
            var generator = SystemRandomNumberGenerator()
            for number in (0..<pieces.count).shuffled(using: &generator).prefix(500) {
                #expect(Self.bytes(store, at: offsets[number], count: pieces[number].count) == pieces[number])
            }
            #expect(!store.failed)
        }
        #expect(SpillFile(directory: directory.path).isFileBacked)
        // Nothing is left in the directory: the file has no name.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a file that can't be read back says so")
    func spillFileFailureIsSaid() throws {
        let directory = try TemporaryDirectory()
        let descriptor = open(directory.path("write-only"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        let store = SpillFile(descriptor: descriptor)
        let pieces = Self.pieces()
        for piece in pieces { piece.withUnsafeBytes { _ = store.append($0) } }
        #expect(!store.failed)
        #expect(Self.bytes(store, at: 0, count: pieces[1].count) == [UInt8](repeating: 0, count: pieces[1].count))
        #expect(store.failed)
    }

    @Test("watched paths and job keys read back as they were recorded, in the file or in memory")
    func watchedPathsReadBack() throws {
        let directory = try TemporaryDirectory()
        func name(_ number: Int) -> String {
            guard number % 3 == 0 else { return "f\(number)" }
            let deep = String(repeating: "deep/", count: number % 40)
            return "src/é \(number)/\(deep)f.c"
        }
        let paths = (0..<5000).map { (number: Int) -> WatchedPath in
            WatchedPath(
                path: name(number),
                kind: WatchedPath.Kind(rawValue: UInt8(number % 4)) ?? .absent,
                stat: FileSignature(
                    device: UInt64.max - UInt64(number),
                    inode: UInt64(number) << 32,
                    size: Int64(number) - 2500,
                    modified: Int64.min + Int64(number),
                    changed: Int64.max - Int64(number)
                ),
                hash: ContentHash(high: UInt64(number) &* 0x9E37_79B9_7F4A_7C15, low: ~UInt64(number)),
                seenAt: -Int64(number)
            )
        }
        for spill in [RecordSpill(directory: directory.path), RecordSpill(directory: nil)] {
            for (number, path) in paths.enumerated() { #expect(spill.append(path) == number) }
            #expect(spill.count == paths.count)
            #expect((0..<paths.count).allSatisfy { spill[$0] == paths[$0] })
            for number in stride(from: paths.count - 1, through: 0, by: -7) {
                #expect(spill[number] == paths[number] && spill.path(at: number) == paths[number].path)
            }
            // Job keys, beside them: a plain task's, an `each:` job's (an empty file too).
            let keys = (0..<3000).map { number in
                number % 3 == 0
                    ? JobKey(task: "ns:build-\(number)")
                    : JobKey(task: "compile", source: number % 3 == 1 ? name(number) : "")
            }
            let offsets = keys.map { spill.append($0) }
            #expect(zip(keys, offsets).allSatisfy { spill.key(at: $1) == $0 })
            #expect(spill.key(at: offsets[1]).source == name(1) && spill.key(at: offsets[0]).source == nil)
            #expect(!spill.failed)
        }
    }

    @Test("the path table holds the states of paths seen again, and finds a spilled path's state in the file")
    func tableOfSpilledPaths() throws {
        let directory = try TemporaryDirectory()
        let spill = RecordSpill(directory: directory.path)
        let recorded = (0..<20_000).map { WatchedPath(absent: "src/\($0).c", seenAt: Int64($0)) }
        for path in recorded { spill.append(path) }
        let start = [WatchedPath(absent: "base", seenAt: -1)]
        var table = WatchedPathTable(start, spill: spill, capacity: 16)
        for (index, path) in recorded.enumerated() {
            #expect(table.append(path: path.path, spilled: index) == Int32(index + 1))
        }
        // Found by path, read back from the file; a path it lacks is not found.
        #expect((0..<recorded.count).allSatisfy { table.position(of: recorded[$0].path) == Int32($0 + 1) })
        #expect(table.position(of: "src/20000.c") == nil && table.position(of: "base") == 0)
        let listed = table.append(WatchedPath(absent: "listed", seenAt: 5))
        #expect(table[0] == start[0] && table[listed].path == "listed")
        #expect((0..<recorded.count).allSatisfy { table[Int32($0 + 1)] == recorded[$0] })
        // Seen again: read once, then held; a newer state replaces it.
        #expect(table.stateToCompare(at: 7) == recorded[6])
        var newer = recorded[6]
        newer.seenAt = 1000
        table[7] = newer
        #expect(table[7] == newer && table.position(of: "src/6.c") == 7)
        // Kept in place: the positions move up, the states go with their paths.
        var used = [Bool](repeating: true, count: table.count)
        used[1] = false
        used[3] = false
        let kept = table.keep(used)
        let remap = try #require(kept)
        #expect(remap[1] == -1 && remap[3] == -1 && remap[7] == 5 && table.count == recorded.count)
        #expect(table[5] == newer && table[1] == recorded[1] && table[Int32(table.count - 1)].path == "listed")
        #expect(!spill.failed)
    }

    @Test(
        "a run that checked most jobs again after a change: their new states replace the previous snapshot's without being held, and a carried job that saw an old state is left out"
    )
    func rewrittenPathsAreNotHeld() throws {
        let directory = try TemporaryDirectory()
        let kiln = directory.path(".kiln")
        try FileManager.default.createDirectory(atPath: kiln, withIntermediateDirectories: true)
        func record(_ path: String, state: Int, seenAt: Int64) -> WatchedPath {
            WatchedPath(
                path: path,
                kind: .file,
                stat: FileSignature(device: 1, inode: 2, size: 3, modified: Int64(state), changed: 4),
                hash: ContentHash(high: UInt64(state), low: 5),
                seenAt: seenAt
            )
        }
        // The previous snapshot: 1,000 jobs, each watching its source and its output; job 0 and
        // job 1 also watch a shared header.
        let jobCount = 1_000
        var paths: [WatchedPath] = [record("shared.h", state: 1, seenAt: 10)]
        var jobs: [UpToDateSnapshot.Job] = []
        for number in 0..<jobCount {
            paths.append(record("src/\(number).c", state: 1, seenAt: 10))
            paths.append(record("out/\(number).o", state: 1, seenAt: 10))
            let own = [Int32(1 + 2 * number), Int32(2 + 2 * number)]
            jobs.append(
                UpToDateSnapshot.Job(key: "t\(number)", checkedEveryRun: false, paths: number < 2 ? own + [0] : own)
            )
        }
        let previous = UpToDateSnapshot(
            taskfileIdentity: ContentHash(high: 1, low: 1),
            targets: [],
            paths: paths,
            jobs: jobs,
            published: [:],
            complete: true,
            jobCount: jobCount,
            anyCheckedEveryRun: false
        )
        let recorder = SnapshotRecorder(previous: previous, spillDirectory: kiln)
        // Jobs 0 and 2 are up to date on the snapshot's word; the others ran again, job 1 after
        // the shared header changed, each writing its output anew.
        recorder.carry(key: JobKey(task: "t0"), index: 0)
        recorder.carry(key: JobKey(task: "t2"), index: 2)
        for number in 0..<jobCount where number != 0 && number != 2 {
            var seen = [
                record("src/\(number).c", state: 2, seenAt: 20), record("out/\(number).o", state: 2, seenAt: 20),
            ]
            if number == 1 { seen.append(record("shared.h", state: 2, seenAt: 20)) }
            recorder.record(key: JobKey(task: "t\(number)"), checkedEveryRun: false, paths: seen)
        }
        let contents = recorder.snapshot(
            taskfileIdentity: ContentHash(high: 1, low: 1),
            targets: [],
            published: PublishedSignatures(),
            expectedJobs: jobCount
        )
        // Only the shared header, which a carried job watches, was compared and held: the other
        // 1,996 new states stay in the file they were recorded in.
        #expect(contents.paths.heldCount <= 2, "held \(contents.paths.heldCount)")
        #expect(contents.write(root: directory.path))
        let bytes = try #require(FileManager.default.contents(atPath: UpToDateSnapshot.path(root: directory.path)))
        let written = try #require(UpToDateSnapshot.decode([UInt8](bytes)))
        // Job 0 saw the header's old state, which job 1's newer sighting replaced: it is left out
        // (the next run checks it), and the snapshot is incomplete. Every other job is in it,
        // with the states it saw.
        let byKey = Dictionary(uniqueKeysWithValues: written.jobs.map { ($0.key, $0) })
        #expect(!written.complete && byKey["t0"] == nil && byKey.count == jobCount - 1)
        func states(_ key: String) -> [WatchedPath]? { byKey[key].map { $0.paths.map { written.paths[Int($0)] } } }
        #expect(states("t2") == [record("src/2.c", state: 1, seenAt: 10), record("out/2.o", state: 1, seenAt: 10)])
        #expect(states("t1")?.last == record("shared.h", state: 2, seenAt: 20))
        for number in 3..<jobCount {
            #expect(
                states("t\(number)") == [
                    record("src/\(number).c", state: 2, seenAt: 20), record("out/\(number).o", state: 2, seenAt: 20),
                ]
            )
        }
    }

    @Test("a run's snapshot, written from the file of what it recorded, is the size it said and reads back whole")
    func recordedSnapshotIsWrittenWhole() throws {
        let directory = try TemporaryDirectory()
        let kiln = directory.path(".kiln")
        try FileManager.default.createDirectory(atPath: kiln, withIntermediateDirectories: true)
        let recorder = SnapshotRecorder(previous: nil, spillDirectory: kiln)
        // Enough to pass the spill's 64 KiB buffers; keys plain and with files, some long.
        var keys: [JobKey] = []
        for number in 0..<3000 {
            let key =
                number % 2 == 0
                ? JobKey(task: "build:\(number)")
                : JobKey(
                    task: "compile",
                    source: "src/é/" + String(repeating: "x", count: number % 300) + "\(number).c"
                )
            keys.append(key)
            let paths = [
                WatchedPath(absent: "out/\(number).o", seenAt: Int64(number)),
                WatchedPath(absent: "include/shared.h", seenAt: 1),
            ]
            recorder.record(key: key, checkedEveryRun: number % 7 == 0, paths: paths)
        }
        let contents = recorder.snapshot(
            taskfileIdentity: ContentHash(high: 1, low: 2),
            targets: [],
            published: PublishedSignatures(),
            expectedJobs: keys.count
        )
        #expect(contents.write(root: directory.path))
        let bytes = try #require(FileManager.default.contents(atPath: UpToDateSnapshot.path(root: directory.path)))
        let snapshot = try #require(UpToDateSnapshot.decode([UInt8](bytes)))
        #expect(snapshot.complete && snapshot.jobs.map(\.key) == keys.map(\.stored))
        #expect(snapshot.jobs.enumerated().allSatisfy { $1.checkedEveryRun == ($0 % 7 == 0) })
        #expect(snapshot.paths.count == keys.count + 1)
        let last = try #require(snapshot.jobs.last)
        #expect(last.paths.map { snapshot.paths[Int($0)].path } == ["out/2999.o", "include/shared.h"])
    }

    @Test("a snapshot whose recorded paths couldn't be read back is not written")
    func unreadableRecordsAreNotWritten() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path(".kiln"), withIntermediateDirectories: true)
        struct Unreadable: SnapshotContents {
            var snapshot: UpToDateSnapshot
            var taskfileIdentity: ContentHash { snapshot.taskfileIdentity }
            var targets: [String] { snapshot.targets }
            var complete: Bool { snapshot.complete }
            var watches: Bool { snapshot.watches }
            var anyCheckedEveryRun: Bool { snapshot.anyCheckedEveryRun }
            var pathCount: Int { snapshot.pathCount }
            func path(at position: Int) -> WatchedPath { snapshot.path(at: position) }
            var visitedJobCount: Int { snapshot.visitedJobCount }
            func forEachJob(
                _ body: (_ name: String, _ source: String?, _ checkedEveryRun: Bool, _ paths: ArraySlice<Int32>) -> Void
            ) { snapshot.forEachJob(body) }
            var publishedCount: Int { snapshot.publishedCount }
            func forEachPublished(_ body: (_ name: String, _ source: String?, _ signature: ContentHash) -> Void) {
                snapshot.forEachPublished(body)
            }
            var isIntact: Bool { false }
        }
        let recorder = SnapshotRecorder(previous: nil, spillDirectory: directory.path(".kiln"))
        recorder.record(key: JobKey(task: "job"), checkedEveryRun: false, paths: [WatchedPath(absent: "a", seenAt: 1)])
        let snapshot = try recorder.snapshot(expectedJobs: 1)
        #expect(snapshot.write(root: directory.path))
        #expect(FileManager.default.fileExists(atPath: UpToDateSnapshot.path(root: directory.path)))
        UpToDateSnapshot.remove(root: directory.path)
        #expect(!Unreadable(snapshot: snapshot).write(root: directory.path))
        #expect(!FileManager.default.fileExists(atPath: UpToDateSnapshot.path(root: directory.path)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln")).isEmpty)
    }
}
