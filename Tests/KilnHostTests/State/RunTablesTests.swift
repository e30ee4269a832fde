import KilnPaths
import Testing

@testable import KilnHost

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

    @Test("an each: task's jobs publish by position; what they published is what a table by key said")
    func publishedByPosition() {
        let sources = ["a.c", "b.c", "sub/c.c", "z.c"]
        var byKey: [String: ContentHash] = [:]
        var table = PublishedSignatures()
        // The previous snapshot's table: the task's name, a job of this run's list, and a job
        // whose file is gone.
        table.named = [
            "compile": ContentHash(high: 9, low: 9),
            JobKey(task: "compile", source: "b.c").stored: ContentHash(high: 8, low: 8),
            JobKey(task: "compile", source: "gone.c").stored: ContentHash(high: 7, low: 7),
        ]
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
        recorder.record(key: JobKey(task: "job", source: "x"), alwaysRuns: true, paths: [first])
        recorder.record(key: JobKey(task: "other"), alwaysRuns: false, paths: [first])
        recorder.record(key: JobKey(task: "job", source: "x"), alwaysRuns: false, paths: [second])
        let snapshot = try recorder.snapshot(expectedJobs: 2)
        #expect(snapshot.complete)
        #expect(snapshot.jobs.map(\.key) == ["other", JobKey(task: "job", source: "x").stored])
        let job = try #require(snapshot.jobs.last)
        #expect(!job.alwaysRuns && job.paths.map { snapshot.paths[Int($0)].path } == ["second"])
    }
}
