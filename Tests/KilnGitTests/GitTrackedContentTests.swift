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
