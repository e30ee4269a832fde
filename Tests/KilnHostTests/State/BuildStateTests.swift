import Foundation
import KilnHost
import KilnJobs
import KilnPaths
import KilnTestSupport
import Synchronization
import Testing

@Suite("The build state")
struct BuildStateTests {
    let record = JobRecord(
        signature: ContentHash(high: 1, low: 2),
        outputs: ["build/a.o": ContentHash(high: 3, low: 4)],
        finishedAt: 42
    )

    @Test("a saved record is there for the next run")
    func recordsSurviveReopening() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            let state = try BuildState(root: directory.path) { _ in }
            state.save(record, for: "compile src/a.c")
            state.save(files: [
                "src/a.c": HashedFile(
                    stat: FileSignature(device: 9, inode: 4, size: 3, modified: 1, changed: 2),
                    hash: ContentHash(high: 5, low: 6),
                    hashedAt: 7
                )
            ])
        }
        let state = try BuildState(root: directory.path) { _ in }
        #expect(state.loadJobs() == ["compile src/a.c": record])
        #expect(state.loadFiles()["src/a.c"]?.hash == ContentHash(high: 5, low: 6))
        state.remove(key: "compile src/a.c")
        #expect(state.loadJobs().isEmpty)
    }

    @Test("jobs saved from many threads at once are each committed with their files, and a forgotten file is gone")
    func concurrentSavesAreAllCommitted() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stat = FileSignature(device: 9, inode: 4, size: 3, modified: 1, changed: 2)
        let threads = 8
        let jobsPerThread = 150
        @Sendable func file(_ index: Int) -> HashedFile {
            HashedFile(stat: stat, hash: ContentHash(high: UInt64(index), low: 1), hashedAt: 7)
        }
        do {
            let state = try BuildState(root: directory.path) { _ in }
            state.save(files: ["stale.txt": file(0)])
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for job in 0..<jobsPerThread {
                    let index = thread * jobsPerThread + job
                    var changed: [String: HashedFile?] = ["in/\(index).txt": file(index)]
                    if index == 77 { changed["stale.txt"] = .some(nil) }
                    state.save(
                        JobRecord(
                            signature: ContentHash(high: UInt64(index), low: 0),
                            outputs: [:],
                            finishedAt: Int64(index)
                        ),
                        for: "job \(index)",
                        changedFiles: changed
                    )
                }
            }
            // Let go of the project as a run does: the writer thread may hold the state a moment
            // after the last commit, so its last reference isn't this scope's.
            state.close()
            state.lock?.release()
        }
        let state = try BuildState(root: directory.path) { _ in }
        let jobs = state.loadJobs()
        let files = state.loadFiles()
        #expect(jobs.count == threads * jobsPerThread)
        #expect(files.count == threads * jobsPerThread)
        #expect(files["stale.txt"] == nil)
        for index in 0..<(threads * jobsPerThread) {
            #expect(jobs["job \(index)"]?.finishedAt == Int64(index))
            #expect(files["in/\(index).txt"]?.hash == ContentHash(high: UInt64(index), low: 1))
        }
    }

    @Test(
        "records made without waiting: each is committed before its committed block runs, a handed-over one is made on another thread, and a committed block may save again"
    )
    func recordsWithoutWaiting() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let state = try BuildState(root: directory.path) { _ in }
        let threads = 8
        let jobsPerThread = 100
        let total = threads * jobsPerThread
        // Per job: whether its record was in the database when its committed block ran, and
        // whether it was made on the thread that asked (false for a handed-over one).
        let seen = Mutex([Int: (committedFirst: Bool, madeByCaller: Bool)]())
        let settled = DispatchSemaphore(value: 0)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for job in 0..<jobsPerThread {
                let index = thread * jobsPerThread + job
                let handingOver = index % 3 == 0
                let caller = pthread_self()
                let madeByCaller = Mutex(false)
                state.record(
                    making: {
                        madeByCaller.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 }
                        return BuildState.Write(
                            JobRecord(signature: ContentHash(high: UInt64(index), low: 0), outputs: [:], finishedAt: 1),
                            for: "job \(index)",
                            changedFiles: [:]
                        )
                    },
                    handingOver: handingOver,
                    committed: {
                        let committedFirst = state.loadJob(key: "job \(index)") != nil
                        // Every tenth saves again from its committed block: it commits there.
                        if index % 10 == 0 { state.save(record, for: "again \(index)") }
                        seen.withLock { $0[index] = (committedFirst, madeByCaller.withLock { $0 }) }
                        settled.signal()
                    }
                )
            }
        }
        for _ in 0..<total {
            #expect(settled.wait(timeout: .now() + 60) == .success, "a committed block never ran")
        }
        let results = seen.withLock { $0 }
        #expect(results.count == total)
        #expect(results.values.allSatisfy { $0.committedFirst })
        // A handed-over record is never made by the thread that asked for it.
        #expect(results.filter { $0.key % 3 == 0 }.values.allSatisfy { !$0.madeByCaller })
        state.close()
        state.lock?.release()
        let reopened = try BuildState(root: directory.path) { _ in }
        let jobs = reopened.loadJobs()
        #expect(jobs.count == total + total / 10)
        #expect(jobs["job 799"]?.signature == ContentHash(high: 799, low: 0))
        #expect(jobs["again 790"] == record)
    }

    @Test(
        "records that can wait share a commit: one that can't takes them with it, the writer thread takes batchLimit of them, then the timer, then close()"
    )
    func recordsThatCanWaitShareCommits() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // Committed blocks that ran, by job, and the thread each ran on.
        let settled = Mutex([Int: pthread_t]())
        @Sendable func write(_ index: Int, on state: BuildState, canWait: Bool, then: (@Sendable () -> Void)? = nil) {
            state.record(
                making: {
                    BuildState.Write(
                        JobRecord(signature: ContentHash(high: UInt64(index), low: 0), outputs: [:], finishedAt: 1),
                        for: "job \(index)",
                        changedFiles: [:]
                    )
                },
                canWait: canWait,
                committed: {
                    settled.withLock { $0[index] = pthread_self() }
                    then?()
                }
            )
        }
        func settledJobs() -> Set<Int> { Set(settled.withLock { $0.keys }) }
        do {
            // No timer fires in this part: what commits is what the writes themselves ask for.
            let state = try BuildState(root: directory.path, batchDelay: .seconds(3600))
            for index in 0..<5 { write(index, on: state, canWait: true) }
            #expect(state.commits == BuildState.Commits(records: 0, transactions: 0))
            #expect(settledJobs().isEmpty)
            // One that can't wait is committed at once, on this thread, with every one waiting.
            write(5, on: state, canWait: false)
            #expect(state.commits == BuildState.Commits(records: 6, transactions: 1))
            #expect(settledJobs() == Set(0...5))
            // batchLimit waiting are committed together, on the writer's thread, once the last of
            // them comes: the thread that ended the job goes on.
            let limit = BuildState.batchLimit
            for index in 6..<(6 + limit - 1) { write(index, on: state, canWait: true) }
            #expect(state.commits.transactions == 1)
            let writing = pthread_self()
            write(6 + limit - 1, on: state, canWait: true)
            let full = await waitUntil(within: 60) { settledJobs() == Set(0..<(6 + limit)) }
            #expect(full, "a full batch was never committed")
            #expect(state.commits == BuildState.Commits(records: 6 + limit, transactions: 2))
            #expect(settled.withLock { $0[6 + limit - 1].map { pthread_equal($0, writing) == 0 } ?? false })
            // Written while a commit is under way (from a committed block, as a job finishing
            // then would be), a record that can wait still waits.
            write(50, on: state, canWait: false) {
                for index in 51..<54 { write(index, on: state, canWait: true) }
            }
            #expect(state.commits == BuildState.Commits(records: 7 + limit, transactions: 3))
            #expect(settledJobs().isDisjoint(with: 51..<54))
            // Closing commits what waits.
            write(100, on: state, canWait: true)
            #expect(!settledJobs().contains(100))
            state.close()
            state.lock?.release()
            #expect(settledJobs().isSuperset(of: [51, 52, 53, 100]))
            #expect(state.commits == BuildState.Commits(records: 11 + limit, transactions: 4))
        }
        let reopened = try BuildState(root: directory.path, batchDelay: .milliseconds(30))
        #expect(reopened.loadJobs().count == 11 + BuildState.batchLimit)
        // The timer: records that can wait, and nothing else, are committed on the writer's thread.
        let caller = pthread_self()
        for index in 200..<203 { write(index, on: reopened, canWait: true) }
        let committed = await waitUntil(within: 60) { settledJobs().isSuperset(of: 200..<203) }
        #expect(committed, "the timer never committed what waited")
        // In one commit, unless the timer fired between two of the writes (a loaded machine).
        #expect(reopened.commits.records == 3)
        #expect((1...3).contains(reopened.commits.transactions), "\(reopened.commits)")
        #expect(settled.withLock { $0[200].map { pthread_equal($0, caller) == 0 } ?? false })
        #expect(reopened.loadJob(key: "job 202") != nil)
        reopened.close()
        reopened.lock?.release()
    }

    @Test("each file hash keeps the algorithm that made it: in the files table and in job records")
    func algorithmsAreRecorded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let stat = FileSignature(device: 9, inode: 4, size: 3, modified: 1, changed: 2)
        let withDigests = JobRecord(
            signature: ContentHash(high: 1, low: 2),
            outputs: ["build/a.o": ContentHash(high: 3, low: 4)],
            finishedAt: 42,
            inputs: [
                "src/a.c": FileDigest(ContentHash(high: 5, low: 6), .gitBlob),
                "src/b.c": FileDigest(ContentHash(high: 7, low: 8), .xxh3),
            ],
            discovered: ["include/a.h": FileDigest(ContentHash(high: 9, low: 10), .gitBlob)]
        )
        do {
            let state = try BuildState(root: directory.path) { _ in }
            state.save(withDigests, for: "compile src/a.c")
            state.save(files: [
                "src/a.c": HashedFile(stat: stat, hash: ContentHash(high: 5, low: 6), hashedAt: 7, algorithm: .gitBlob),
                "src/b.c": HashedFile(stat: stat, hash: ContentHash(high: 7, low: 8), hashedAt: 7),
            ])
        }
        let state = try BuildState(root: directory.path) { _ in }
        #expect(state.loadJob(key: "compile src/a.c") == withDigests)
        #expect(state.loadJob(key: "compile src/a.c")?.inputs["src/a.c"]?.algorithm == .gitBlob)
        #expect(state.loadFiles()["src/a.c"]?.algorithm == .gitBlob)
        #expect(state.loadFile(path: "src/b.c")?.algorithm == .xxh3)
    }

    @Test("a corrupt database is moved aside with a warning, and the run starts from nothing")
    func corruptDatabaseIsMovedAside() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.makeDirectory(".kiln")
        try directory.write(".kiln/state.db", String(repeating: "this is not an SQLite database\n", count: 200))
        let warnings = LockedValue<[String]>([])
        let state = try BuildState(root: directory.path) { line in warnings.withLock { $0.append(line) } }
        #expect(state.loadJobs().isEmpty)
        state.save(record, for: "job")
        #expect(state.loadJobs()["job"] == record)
        #expect(warnings.value.count == 1)
        #expect(warnings.value.first?.contains("moved it to") == true)
        let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path(".kiln"))
        #expect(entries.contains { $0.hasPrefix("state.db.corrupt-") })
    }

    @Test("a second run on the same project fails at once naming the first, or waits with wait: true")
    func oneRunAtATime() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var first: BuildState? = try BuildState(root: directory.path) { _ in }
        do {
            _ = try BuildState(root: directory.path) { _ in }
            Issue.record("a second state opened while the first holds the project")
        } catch {
            #expect(error.message.contains("pid \(getpid())"))
            #expect(error.message.contains("--wait"))
        }
        // A waiter gets the project once the first lets go.
        let opened = LockedValue(false)
        let waiter = Thread {
            if (try? BuildState(root: directory.path, wait: true) { _ in }) != nil { opened.withLock { $0 = true } }
        }
        waiter.start()
        try await Task.sleep(for: .milliseconds(100))
        #expect(opened.value == false)
        first = nil
        _ = first
        let deadline = Date().addingTimeInterval(10)
        while !opened.value, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(opened.value)
    }
}
