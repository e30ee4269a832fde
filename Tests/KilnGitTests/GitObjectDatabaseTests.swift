import Foundation
import KilnGit
import KilnGitFormat
import KilnTestSupport
import Testing

/// Git's objects and references read directly (``GitObjectDatabase``, ``GitLayout/headCommit()``),
/// checked against the git executable on real repositories: loose objects, packs with offset and
/// reference deltas, packed references, alternates.
@Suite("Git objects, read directly")
struct GitObjectDatabaseTests {
    let base = GitRepositoryTests()

    /// A repository with history: many similar trees (so a pack stores most as deltas), a
    /// symbolic link, an executable, a nested directory three deep.
    func history() throws -> TemporaryDirectory {
        let directory = try base.repository()
        for round in 0..<12 {
            for folder in 0..<6 {
                _ = try directory.write("lib/d\(folder)/deep/er/f\(round % 4).c", "int f\(folder)_\(round);\n")
            }
            _ = try directory.write("notes/round-\(round).md", "round \(round)\n")
            try base.git(["add", "."], in: directory)
            try base.git(["commit", "-q", "-m", "round \(round)"], in: directory)
        }
        _ = try directory.write("run.sh", "#!/bin/sh\n")
        chmod(directory.path("run.sh"), 0o755)
        symlink("src/a.c", directory.path("link"))
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "modes"], in: directory)
        return directory
    }

    /// Every tree of every commit on HEAD, as `git ls-tree` lists it and as the reader does.
    func compareEveryTree(_ directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let layout = try #require(GitLayout.locate(from: directory.path), sourceLocation: sourceLocation)
        let objects = try GitObjectDatabase(layout: layout)
        let commits = try base.git(["rev-list", "HEAD"], in: directory).split(separator: "\n").map(String.init)
        #expect(commits.count == 14, sourceLocation: sourceLocation)
        var trees = Set<String>()
        for commit in commits {
            let tree = try objects.treeOfCommit(try #require(GitObjectID(hex: commit)))
            #expect(
                tree.description
                    == (try base.git(["rev-parse", commit + "^{tree}"], in: directory)).trimmingCharacters(
                        in: .newlines
                    )
            )
            trees.insert(tree.description)
            for line in try base.git(["ls-tree", "-r", "-t", commit], in: directory).split(separator: "\n")
            where line.contains(" tree ") {
                trees.insert(String(line.split(separator: " ")[2].prefix(40)))
            }
        }
        for tree in trees {
            let listed = try objects.tree(try #require(GitObjectID(hex: tree))).map { entry in
                let mode = String(entry.mode, radix: 8)
                let type = entry.isTree ? "tree" : (entry.mode == 0o160000 ? "commit" : "blob")
                return
                    "\(String(repeating: "0", count: max(0, 6 - mode.count)))\(mode) \(type) \(entry.id)\t\(entry.name)\n"
            }.joined()
            #expect(
                listed == (try base.git(["ls-tree", tree], in: directory)),
                "tree \(tree)",
                sourceLocation: sourceLocation
            )
        }
        let blob = try base.git(["rev-parse", "HEAD:run.sh"], in: directory).trimmingCharacters(in: .newlines)
        let (kind, data) = try objects.read(try #require(GitObjectID(hex: blob)))
        #expect(kind == .blob && String(decoding: data, as: UTF8.self) == "#!/bin/sh\n", sourceLocation: sourceLocation)
        #expect(try layout.headCommit()?.description == commits.first, sourceLocation: sourceLocation)
    }

    /// How many objects of a pack are stored as deltas, from `git verify-pack -v`.
    func deltaCount(_ directory: TemporaryDirectory) throws -> Int {
        let packs = try FileManager.default.contentsOfDirectory(atPath: directory.path(".git/objects/pack")).filter {
            $0.hasSuffix(".idx")
        }
        var count = 0
        for pack in packs {
            let verbose = try base.git(["verify-pack", "-v", ".git/objects/pack/" + pack], in: directory)
            count +=
                verbose.split(separator: "\n").filter {
                    $0.split(separator: " ", omittingEmptySubsequences: true).count >= 7
                }.count
        }
        return count
    }

    @Test("loose objects: every tree and commit of the history, a blob, HEAD through a loose branch")
    func loose() throws {
        let directory = try history()
        defer { directory.remove() }
        #expect(!FileManager.default.fileExists(atPath: directory.path(".git/packed-refs")))
        try compareEveryTree(directory)
    }

    @Test("a pack with offset deltas (git gc), and HEAD through packed-refs")
    func offsetDeltas() throws {
        let directory = try history()
        defer { directory.remove() }
        try base.git(["gc", "-q", "--aggressive", "--prune=now"], in: directory)
        #expect(try deltaCount(directory) > 10, "the pack should store trees as deltas")
        #expect(FileManager.default.fileExists(atPath: directory.path(".git/packed-refs")))
        #expect(!FileManager.default.fileExists(atPath: directory.path(".git/refs/heads/main")))
        try compareEveryTree(directory)
    }

    @Test("a pack with reference deltas (no delta-base-offset), and a detached HEAD")
    func referenceDeltas() throws {
        let directory = try history()
        defer { directory.remove() }
        try base.git(
            ["-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f", "--depth=50"],
            in: directory
        )
        try base.git(["prune-packed"], in: directory)
        #expect(try deltaCount(directory) > 10)
        try base.git(["checkout", "-q", "--detach", "HEAD"], in: directory)
        try compareEveryTree(directory)
    }

    @Test("alternates: a clone sharing its source's objects reads them through objects/info/alternates")
    func alternates() throws {
        let directory = try history()
        defer { directory.remove() }
        let clone = directory.path + "-shared"
        defer { try? FileManager.default.removeItem(atPath: clone) }
        try requireGit(["clone", "-q", "--shared", directory.path, clone], in: directory.path)
        #expect(FileManager.default.fileExists(atPath: clone + "/.git/objects/info/alternates"))
        let layout = try #require(GitLayout.locate(from: clone))
        let objects = try GitObjectDatabase(layout: layout)
        let head = try #require(try layout.headCommit())
        #expect(
            head.description == (try requireGit(["rev-parse", "HEAD"], in: clone)).trimmingCharacters(in: .newlines)
        )
        #expect(try objects.entries(ofTree: try objects.treeOfCommit(head)).map(\.name).contains("lib"))
    }

    @Test("a new repository: HEAD has no commit; an unknown object and a SHA-256 repository are unsupported, not wrong")
    func edges() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-git-empty")
        defer { directory.remove() }
        try base.git(["init", "-q", "-b", "main"], in: directory)
        let layout = try #require(GitLayout.locate(from: directory.path))
        #expect(try layout.headCommit() == nil)
        let objects = try GitObjectDatabase(layout: layout)
        #expect(try objects.headTree() == nil)
        let absent = try #require(GitObjectID(hex: String(repeating: "ab", count: 20)))
        #expect(throws: GitError.self) { _ = try objects.read(absent) }
        do throws(GitError) {
            _ = try objects.read(absent)
        } catch {
            #expect(error.code == .unsupportedRepository)
        }
        let sha256 = try TemporaryDirectory(prefix: "kiln-git-sha256")
        defer { sha256.remove() }
        try base.git(["init", "-q", "--object-format=sha256"], in: sha256)
        let sha256Layout = try #require(GitLayout.locate(from: sha256.path))
        #expect(throws: GitError.self) { _ = try GitObjectDatabase(layout: sha256Layout) }
        do throws(GitError) {
            _ = try GitObjectDatabase(layout: sha256Layout)
        } catch {
            #expect(error.code == .unsupportedRepository)
        }
    }

    @Test("staged changes from a packed history: the same read directly and through libgit2")
    func stagedFromPack() throws {
        let directory = try history()
        defer { directory.remove() }
        try base.git(["gc", "-q", "--aggressive", "--prune=now"], in: directory)
        _ = try directory.write("lib/d2/deep/er/f1.c", "edited\n")
        _ = try directory.write("lib/d3/deep/new.c", "new\n")
        try base.git(["rm", "-q", "notes/round-3.md"], in: directory)
        try base.git(["mv", "lib/d5/deep/er/f0.c", "lib/d5/moved.c"], in: directory)
        try base.git(["add", "."], in: directory)
        let repository = try GitRepository(containing: directory.path)
        let index = try repository.index()
        let layout = try #require(GitLayout.locate(from: directory.path))
        let direct = base.summary(try StagedChanges.between(index, andHeadOf: try GitObjectDatabase(layout: layout)))
        #expect(direct == base.summary(try StagedChanges.between(index, andHeadOf: repository)))
        #expect(direct == base.summary(try #require(repository.stagedChangesFromGit())))
        #expect(
            direct == [
                "modified lib/d2/deep/er/f1.c", "added lib/d3/deep/new.c",
                "renamed lib/d5/deep/er/f0.c → lib/d5/moved.c",
                "deleted notes/round-3.md",
            ]
        )
    }
}
