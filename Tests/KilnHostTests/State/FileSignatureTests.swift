import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

/// One stat signature and one racy-file rule, for the stat cache, the snapshot and hook plans.
@Suite struct FileSignatureTests {
    @Test("a signature is trusted only once the file is older than the racy window when seen, by every user of it")
    func oneRacyRule() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("a", "one\n")
        let signature = try #require(FileSignature.of(directory.path("a")))
        let justAfter = signature.modified + FileSignature.racyWindow / 2
        let wellAfter = signature.modified + FileSignature.racyWindow * 2
        #expect(!signature.isSettled(at: justAfter))
        #expect(signature.isSettled(at: wellAfter))
        // The stat cache: a record hashed within the window is hashed again.
        let racy = HashedFile(stat: signature, hash: ContentHash(high: 1, low: 2), hashedAt: justAfter)
        let hasher = FileHasher(known: ["a": racy], root: directory.path, now: { wellAfter })
        #expect(try hasher.hash("a")?.source != .recorded)
        let settled = HashedFile(stat: signature, hash: ContentHash(high: 1, low: 2), hashedAt: wellAfter)
        let trusting = FileHasher(known: ["a": settled], root: directory.path, now: { wellAfter })
        #expect(try trusting.hash("a")?.source == .recorded)
        // The snapshot: a path seen within the window isn't vouched for by its signature alone.
        let seenEarly = WatchedPath(
            path: "a",
            kind: .file,
            stat: signature,
            hash: ContentHash(high: 1, low: 2),
            seenAt: justAfter
        )
        let seenLate = WatchedPath(
            path: "a",
            kind: .file,
            stat: signature,
            hash: ContentHash(high: 1, low: 2),
            seenAt: wellAfter
        )
        guard case .unchanged = seenLate.compare(root: directory.path) else {
            Issue.record("a settled signature vouches for the path")
            return
        }
        if case .unchanged = seenEarly.compare(root: directory.path) {
            Issue.record("a racy signature vouched for the path")
        }
    }

    @Test("the device is part of the signature: the same inode on another file system is another file")
    func deviceCounts() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("a", "one\n")
        var signature = try #require(FileSignature.of(directory.path("a")))
        let same = signature
        signature.device &+= 1
        #expect(signature != same)
    }
}
