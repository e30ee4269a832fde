import Foundation
import KilnGit
import KilnGitFormat
import KilnHost
import KilnPaths
import KilnTestSupport
import Testing

/// Hashing through git: the index's blob ids for clean tracked files, on real repositories.
@Suite("Hashing through git")
struct GitTrackedContentTests {
    let base = GitRepositoryTests()

    /// The first 32 hex digits of `git hash-object`.
    func blobPrefix(_ file: String, in directory: TemporaryDirectory) throws -> String {
        String(try base.git(["hash-object", file], in: directory).prefix(32))
    }

    @Test(
        "a clean tracked file's hash is its blob id from the index; dirty, untracked and racily clean files have none"
    )
    func vouching() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        for file in ["src/a.c", "src/b.c"] { try setModificationTime(directory.path(file), secondsAgo: 5) }
        try base.git(["add", "."], in: directory)  // records the aged status
        let content = try #require(GitTrackedContent(projectRoot: directory.path))
        func id(_ path: String) -> ContentHash? {
            FileSignature.of(directory.path(path)).flatMap { content.contentID(of: path, status: $0) }
        }
        #expect(id("src/a.c")?.description == (try blobPrefix("src/a.c", in: directory)))
        #expect(content.computeContentID(of: directory.path("src/a.c")) == id("src/a.c"), "the same id from the bytes")

        _ = try directory.write("src/b.c", "int b = 2;\n")
        _ = try directory.write("src/new.c", "int n;\n")
        let fresh = try #require(GitTrackedContent(projectRoot: directory.path))
        #expect(
            FileSignature.of(directory.path("src/b.c")).flatMap { fresh.contentID(of: "src/b.c", status: $0) } == nil,
            "dirty"
        )
        #expect(
            FileSignature.of(directory.path("src/new.c")).flatMap { fresh.contentID(of: "src/new.c", status: $0) }
                == nil,
            "untracked"
        )
        #expect(
            fresh.computeContentID(of: directory.path("src/b.c"))?.description
                == (try blobPrefix("src/b.c", in: directory))
        )

        // Staged within the index's own timestamp (the index's mtime not after the file's): the
        // file may have changed since without its status showing it, so it isn't vouched for.
        try setModificationTime(directory.path("src/b.c"), secondsAgo: 5)
        try base.git(["add", "src/b.c"], in: directory)
        let status = try #require(FileSignature.of(directory.path("src/b.c")))
        #expect(
            try #require(GitTrackedContent(projectRoot: directory.path)).contentID(of: "src/b.c", status: status) != nil
        )
        let fileTime = try #require(
            try FileManager.default.attributesOfItem(atPath: directory.path("src/b.c"))[.modificationDate] as? Date
        )
        try FileManager.default.setAttributes([.modificationDate: fileTime], ofItemAtPath: directory.path(".git/index"))
        #expect(
            try #require(GitTrackedContent(projectRoot: directory.path)).contentID(of: "src/b.c", status: status) == nil
        )
    }

    @Test(
        "a blob id computed here is git's, for empty, small and multi-block files and a symbolic link's target; a FIFO is none"
    )
    func blobIDsAreGits() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        var generator = SeededGenerator(seed: 11)
        // Lengths around SHA-1's 64-byte blocks (with git's "blob N\0" header in front) and
        // around the 64 KiB read size.
        for length in [0, 1, 45, 46, 47, 55, 56, 64, 119, 1000, 65_535, 65_536, 65_537, 200_000] {
            let file = directory.path("data\(length).bin")
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: URL(fileURLWithPath: file))
            let expected = try base.git(["hash-object", "--no-filters", file], in: directory).prefix(40)
            #expect(GitObjectID.blob(ofFileAt: file)?.description == String(expected), "\(length) bytes")
        }
        // A link's blob is its target's bytes.
        let target = "some/where/else.txt"
        let expected = try base.git(
            ["hash-object", "--no-filters", try directory.write("target", target)],
            in: directory
        )
        .prefix(40)
        #expect(Array(target.utf8).withUnsafeBytes { GitObjectID.blob(of: $0) }.description == String(expected))
        #expect(GitObjectID.blob(ofFileAt: directory.path("missing")) == nil)
        #expect(GitObjectID.blob(ofFileAt: directory.path) == nil, "a directory")
        // A FIFO in a file's place is refused at once, not waited on for a writer.
        #expect(mkfifo(directory.path("fifo"), 0o644) == 0)
        #expect(GitObjectID.blob(ofFileAt: directory.path("fifo")) == nil, "a FIFO")
    }

    @Test("a project in a subdirectory of the repository, an intent-to-add entry, and no repository at all")
    func placement() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        try setModificationTime(directory.path("src/a.c"), secondsAgo: 5)
        _ = try directory.write("src/later.c", "int later;\n")
        try base.git(["add", "src/a.c"], in: directory)
        try base.git(["add", "-N", "src/later.c"], in: directory)
        let content = try #require(GitTrackedContent(projectRoot: directory.path("src")))
        let a = try #require(FileSignature.of(directory.path("src/a.c")))
        #expect(content.contentID(of: "a.c", status: a)?.description == (try blobPrefix("src/a.c", in: directory)))
        #expect(content.contentID(of: "src/a.c", status: a) == nil, "paths are relative to the project")
        let later = try #require(FileSignature.of(directory.path("src/later.c")))
        #expect(content.contentID(of: "later.c", status: later) == nil, "intent-to-add has no content yet")

        let outside = try TemporaryDirectory(prefix: "kiln-nogit")
        defer { outside.remove() }
        #expect(GitTrackedContent(projectRoot: outside.path) == nil)
    }
}
