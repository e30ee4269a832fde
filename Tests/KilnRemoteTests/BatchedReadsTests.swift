import Foundation
import Synchronization
import Testing

@testable import KilnRemote

/// The joining of small-blob reads (``BatchedReads``), with a stand-in for the server's
/// `BatchReadBlobs` that answers after a delay and records each request: the real server is in
/// KilnCLITests (every remote-cache test reads through it).
@Suite("Small-blob reads joined across concurrent look-ups")
struct BatchedReadsTests {
    /// A `BatchReadBlobs` stand-in: it answers each digest with bytes made from its hash, after
    /// `delay`, except the hashes in `lost` (NOT_FOUND); it records each request's digests.
    final class Server: Sendable {
        let requests = Mutex<[[String]]>([])
        let delay: Duration
        let lost: Set<String>

        init(delay: Duration = .milliseconds(20), lost: Set<String> = []) {
            self.delay = delay
            self.lost = lost
        }

        func answer(_ digests: [ProtoDigest]) async throws -> [BatchedReads.Answer] {
            requests.withLock { $0.append(digests.map(\.hash)) }
            try await Task.sleep(for: delay)
            return digests.map { digest in
                var answer = BatchedReads.Answer()
                answer.digest = digest
                if lost.contains(digest.hash) {
                    answer.status.code = 5
                    answer.status.message = "not found"
                } else {
                    answer.data = Data(digest.hash.utf8)
                }
                return answer
            }
        }
    }

    func digest(_ number: Int, size: Int64 = 10) -> ProtoDigest {
        var digest = ProtoDigest()
        digest.hash = "blob\(number)"
        digest.sizeBytes = size
        return digest
    }

    @Test(
        "reads asked for while 4 requests are under way go together in the next ones, each answered with its own blobs"
    )
    func concurrentReadsShareRequests() async throws {
        let server = Server()
        let reads = BatchedReads(limit: 1 << 20) { try await server.answer($0) }
        let results = try await withThrowingTaskGroup(of: (Int, [(ProtoDigest, Data)]).self) { group in
            for number in 0..<100 {
                group.addTask { (number, try await reads.read([digest(number)])) }
            }
            var results: [Int: [(ProtoDigest, Data)]] = [:]
            for try await (number, blobs) in group { results[number] = blobs }
            return results
        }
        #expect(results.count == 100)
        for (number, blobs) in results {
            #expect(blobs.count == 1 && blobs[0].0.hash == "blob\(number)" && blobs[0].1 == Data("blob\(number)".utf8))
        }
        let requests = server.requests.withLock { $0 }
        // Every digest asked once; far fewer requests than reads, never more than 4 at once.
        #expect(requests.flatMap { $0 }.sorted() == (0..<100).map { "blob\($0)" }.sorted())
        #expect(requests.count < 20, "\(requests.map(\.count))")
    }

    @Test("a request never carries more than the server's batch limit")
    func batchesKeepToTheLimit() async throws {
        let server = Server(delay: .milliseconds(5))
        let reads = BatchedReads(limit: 100) { try await server.answer($0) }
        let alone = try await reads.read([digest(0, size: 60)])
        #expect(alone.count == 1)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 1...40 {
                group.addTask { _ = try await reads.read([digest(number, size: 30)]) }
            }
            try await group.waitForAll()
        }
        for request in server.requests.withLock({ $0 }) {
            #expect(request.count <= 3, "30-byte blobs, 100-byte limit: \(request)")
        }
    }

    @Test("a blob the server lost fails only the read that asked for it; a failed request fails its reads")
    func failuresStayWithTheirReads() async throws {
        let server = Server(lost: ["blob7"])
        let reads = BatchedReads(limit: 1 << 20) { try await server.answer($0) }
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for number in 0..<20 {
                group.addTask { (number, (try? await reads.read([digest(number)])) != nil) }
            }
            var outcomes: [Int: Bool] = [:]
            for await (number, succeeded) in group { outcomes[number] = succeeded }
            return outcomes
        }
        for number in 0..<20 {
            #expect(outcomes[number] == (number != 7), "read \(number)")
        }

        struct Down: Error {}
        let broken = BatchedReads(limit: 1 << 20) { _ in throw Down() }
        await #expect(throws: Down.self) { try await broken.read([digest(1)]) }
        // The reads after a failure still get requests of their own.
        await #expect(throws: Down.self) { try await broken.read([digest(2)]) }
    }
}
