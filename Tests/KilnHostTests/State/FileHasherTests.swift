import Foundation
import KilnHost
import KilnPaths
import KilnTestSupport
import Synchronization
import Testing

@Suite("The stat cache")
struct FileHasherTests {

    @Test("an unchanged file that is old enough is not read again")
    func unchangedFileIsNotReadAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.c", "int a;")
        try setModificationTime(file, secondsAgo: 10)
        let first = FileHasher()
        #expect(try first.hash(file)?.source == .read)
        let second = FileHasher(known: first.records)
        let again = try #require(try second.hash(file))
        #expect(again.source == .recorded)
        #expect(again.hash == ContentHash.of("int a;"))
    }

    @Test("a change of content, size, mtime or inode makes the file read again")
    func changedFileIsReadAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.c", "int a;")
        try setModificationTime(file, secondsAgo: 10)
        let first = FileHasher()
        _ = try first.hash(file)
        // Same size, new content, new mtime.
        try directory.write("a.c", "int b;")
        try setModificationTime(file, secondsAgo: 5)
        let second = FileHasher(known: first.records)
        let changed = try #require(try second.hash(file))
        #expect(changed.source == .read)
        #expect(changed.hash == ContentHash.of("int b;"))
        // Replaced by rename with the same content and mtime: a new inode.
        let replacement = try directory.write("tmp", "int b;")
        try setModificationTime(replacement, secondsAgo: 5)
        let third = FileHasher(known: second.records)
        _ = rename(replacement, file)
        #expect(try third.hash(file)?.source == .read)
    }

    @Test("a file modified within the racy window of its hash is read again every time")
    func racyFileIsReadAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.c", "int a;")
        let status = try #require(FileSignature.of(file))
        // The clock says the hash was taken 10 ms after the file's mtime: too close to trust.
        let racyClock: @Sendable () -> Int64 = { status.modified + 10_000_000 }
        let first = FileHasher(now: racyClock)
        _ = try first.hash(file)
        let second = FileHasher(known: first.records, now: racyClock)
        #expect(try second.hash(file)?.source == .read)
        // Hashed a second later, the same record is trusted.
        let settledClock: @Sendable () -> Int64 = { status.modified + 1_000_000_000 }
        let third = FileHasher(now: settledClock)
        _ = try third.hash(file)
        #expect(try FileHasher(known: third.records).hash(file)?.source == .recorded)
    }

    @Test("a deleted file has no hash and its record is dropped")
    func deletedFileHasNoHash() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("a.c", "int a;")
        let hasher = FileHasher()
        _ = try hasher.hash(file)
        try FileManager.default.removeItem(atPath: file)
        #expect(try hasher.hash(file) == nil)
        #expect(hasher.records[file] == nil)
    }

    /// A stand-in index: vouches for listed paths whose status is the one given.
    struct Index: TrackedContent {
        var entries: [String: (status: FileSignature, id: ContentHash)]
        func contentID(of path: String, status: FileSignature) -> ContentHash? {
            entries[path].flatMap { $0.status == status ? $0.id : nil }
        }
        func computeContentID(of file: String) -> ContentHash? {
            // Any other function of the bytes.
            (try? FileContent.hash(file)).map { ContentHash(high: ~$0.high, low: ~$0.low) }
        }
    }

    @Test("a file the index vouches for isn't read; a record made that way is compared in its own algorithm")
    func trackedContent() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try directory.write("src/a.c", "int a;")
        try setModificationTime(file, secondsAgo: 10)
        let blob = ContentHash(high: 0xb10b, low: 1)
        let index = Index(entries: ["src/a.c": (try #require(FileSignature.of(file)), blob)])
        let hasher = FileHasher(root: directory.path, tracked: index)
        let vouched = try #require(try hasher.hash("src/a.c"))
        #expect(vouched.source == .index)
        #expect(vouched.digest == FileDigest(blob, .gitBlob))
        #expect(hasher.statistics.fromIndex == 1 && hasher.statistics.read == 0)
        // Asked for XXH3 (the record being compared was made by reading): read.
        let read = try #require(try hasher.hash("src/a.c", as: .xxh3))
        #expect(read.source == .read)
        #expect(read.digest == FileDigest(ContentHash.of("int a;"), .xxh3))
        // Touched: the index no longer vouches; a git-blob record is compared with the id
        // computed from the bytes, and that is kept (not read again while the status holds).
        try setModificationTime(file, secondsAgo: 5)
        let computed = try #require(try hasher.hash("src/a.c", as: .gitBlob))
        #expect(computed.source == .read)
        #expect(computed.digest.algorithm == .gitBlob)
        #expect(try hasher.hash("src/a.c", as: .gitBlob)?.source == .recorded)
        // With no preference and no index vouching: XXH3.
        #expect(try hasher.hash("src/a.c")?.digest.algorithm == .xxh3)
        // Without an index, a git-blob record can't be matched: XXH3, which differs (the job reruns).
        #expect(try FileHasher(root: directory.path).hash("src/a.c", as: .gitBlob)?.digest.algorithm == .xxh3)
    }

    @Test(
        "past its capacity the table lets go of saved records, reads them back from the build state, and keeps every unsaved one",
        arguments: [false, true]
    )
    func boundedTable(readingBackOnly: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try (0..<400).map { index in
            let file = try directory.write("src/f\(index).txt", "file \(index)")
            try setModificationTime(file, secondsAgo: 10)
            return "src/f\(index).txt"
        }
        let state = try BuildState(root: directory.path) { _ in }
        defer {
            state.close()
            state.lock?.release()
        }
        let capacity = 64
        // `lookup` asks the state for any path the table lacks; `readBack` (a run that loaded
        // every record at its start) only for those it let go of.
        let asked = Mutex(0)
        let read: @Sendable (String) -> HashedFile? = { path in
            asked.withLock { $0 += 1 }
            return state.loadFile(path: path)
        }
        let hasher =
            readingBackOnly
            ? FileHasher(root: directory.path, readBack: read, capacity: capacity)
            : FileHasher(root: directory.path, lookup: read, capacity: capacity)
        var saved: [String: HashedFile?] = [:]
        // The first 200 are hashed and saved in tens, as a run's jobs save theirs.
        for (offset, file) in files.prefix(200).enumerated() {
            #expect(try hasher.hash(file)?.source == .read)
            if offset % 10 == 9 {
                let taken = hasher.takeChangedRecords()
                #expect(taken.count == 10)
                saved.merge(taken) { _, new in new }
                state.save(changedFiles: taken)
            }
            // Never many more than the capacity: a shard lets go once it holds more than its part.
            #expect(hasher.keptCount <= capacity + 16 + 10)
        }
        #expect(saved.count == 200 && saved.values.allSatisfy { $0 != nil })
        // The other 200 are hashed and not taken: however far past the capacity, none is let go,
        // and a table full of them isn't scanned again at every record (a few passes a shard).
        let passes = hasher.statistics.letGoPasses
        for file in files.suffix(200) { _ = try hasher.hash(file) }
        #expect(hasher.keptCount >= 200)
        #expect(hasher.statistics.letGoPasses - passes <= 16 * 4)
        #expect(hasher.statistics.letGo >= 200 - capacity)
        let unsaved = hasher.takeChangedRecords()
        #expect(Set(unsaved.keys) == Set(files.suffix(200)))
        #expect(unsaved.values.allSatisfy { $0 != nil })
        // A saved record that was let go is read back from the state: not read from the file.
        let before = hasher.statistics.read
        for (index, file) in files.prefix(200).enumerated() {
            let found = try #require(try hasher.hash(file))
            #expect(found.source == .recorded)
            #expect(found.hash == ContentHash.of("file \(index)"))
        }
        #expect(hasher.statistics.read == before)
        // Asked: at most every first look and every look back (`readBack` is asked first looks
        // only in a shard that let go of records).
        #expect(asked.withLock { $0 } <= 400 + 200)
        #expect(asked.withLock { $0 } >= 200 - capacity)
        // Below its capacity, a table that only reads back asks nothing.
        let roomy = FileHasher(root: directory.path, readBack: read)
        asked.withLock { $0 = 0 }
        for file in files { _ = try roomy.hash(file) }
        #expect(asked.withLock { $0 } == 0)
        // Without a way to read them back, nothing is let go.
        let unbounded = FileHasher(root: directory.path, capacity: capacity)
        for file in files { _ = try unbounded.hash(file) }
        _ = unbounded.takeChangedRecords()
        #expect(unbounded.keptCount == files.count)
        unbounded.letGoOfSaved()
        #expect(unbounded.keptCount == files.count)

        // Once the run's records are saved, all of them go at once (the snapshot is made next);
        // records not yet taken stay, and one let go is read back, not read from its file.
        state.save(changedFiles: unsaved)
        state.save(changedFiles: roomy.takeChangedRecords())
        _ = try directory.write("src/new.txt", "new")
        try setModificationTime(directory.path("src/new.txt"), secondsAgo: 10)
        #expect(try roomy.hash("src/new.txt")?.source == .read)
        roomy.letGoOfSaved()
        #expect(roomy.keptCount == 1)
        let taken = roomy.takeChangedRecords()
        #expect(Array(taken.keys) == ["src/new.txt"])
        state.save(changedFiles: taken)
        roomy.letGoOfSaved()
        #expect(roomy.keptCount == 0)
        asked.withLock { $0 = 0 }
        let readBefore = roomy.statistics.read
        #expect(try roomy.hash(files[3])?.hash == ContentHash.of("file 3"))
        #expect(asked.withLock { $0 } == 1 && roomy.statistics.read == readBefore)
    }
}
