import Foundation
import KilnGit
import KilnGitFormat
import KilnTestSupport
import Testing

/// The index read directly (``GitIndex``) and what is built on it — the fast status and the
/// staged changes from the cache-tree — checked against git's own listing and libgit2's answers.
@Suite("The git index, read directly")
struct GitIndexTests {
    let base = GitRepositoryTests()

    /// `git ls-files -s` as the index reader sees it: `mode id stage\tpath`.
    func listing(_ index: GitIndex) -> String {
        index.entries.map { entry in
            "\(String(entry.mode, radix: 8)) \(entry.id) \(entry.stage)\t\(index.path(of: entry))\n"
        }.joined()
    }

    /// Asserts that the fast staged changes equal the git executable's and (unless told not to)
    /// libgit2's.
    func staged(_ repository: GitRepository, libgit2: Bool = true, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> [String]
    {
        let fast = base.summary(try repository.fastStagedChanges())
        if libgit2 {
            #expect(
                fast == base.summary(try repository.stagedChanges()),
                "differs from libgit2",
                sourceLocation: sourceLocation
            )
        }
        #expect(
            fast == base.summary(try #require(repository.stagedChangesFromGit())),
            "differs from git",
            sourceLocation: sourceLocation
        )
        return fast
    }

    @Test("versions 2, 3 and 4 read as git lists them, a path of over 4,095 bytes included")
    func versions() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        for folder in 0..<5 {
            for file in 0..<20 {
                _ = try directory.write(
                    "deep/f\(folder)/sub/file-with-a-longer-name-\(file).txt",
                    "\(folder) \(file)\n"
                )
            }
        }
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "more"], in: directory)
        let long = Array(repeating: String(repeating: "d", count: 200), count: 21).joined(separator: "/") + "/long.txt"
        try base.git(
            ["update-index", "--add", "--cacheinfo", "100644,e69de29bb2d1d6434b8b1d5391dd3e8a2e2f1e4a,\(long)"],
            in: directory
        )
        try base.git(["update-index", "--skip-worktree", long], in: directory)  // an extended flag: version 3
        let repository = try GitRepository(containing: directory.path)
        for version in ["3", "4", "2"] {
            if version == "2" { try base.git(["update-index", "--no-skip-worktree", long], in: directory) }
            try base.git(["update-index", "--index-version", version], in: directory)
            let index = try repository.index()
            #expect(listing(index) == (try base.git(["ls-files", "-s"], in: directory)), "version \(version)")
            // Decoded on demand (versions 2 and 3 point into the mapped file), the same entries.
            let lazy = try repository.index(decoding: .onDemand)
            #expect(listing(lazy) == listing(index), "version \(version), decoded on demand")
            #expect(lazy.entry(for: long)?.skipsWorktree == index.entry(for: long)?.skipsWorktree)
            #expect(index.entries.count == 104)
            // libgit2 1.5 misreads an index holding a path of over 4 KiB; git doesn't.
            #expect(try staged(repository, libgit2: false) == ["added \(long)"])
        }
    }

    @Test("the cache-tree: valid after a commit, invalid up the path of a staged change")
    func cacheTree() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        _ = try directory.write("docs/guide.md", "# guide\n")
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "docs"], in: directory)
        try base.git(["status", "--porcelain"], in: directory)  // git writes the cache-tree when it can
        let repository = try GitRepository(containing: directory.path)
        let clean = try #require(try repository.index().cacheTree)
        #expect(
            clean.id?.description
                == (try base.git(["rev-parse", "HEAD^{tree}"], in: directory)).trimmingCharacters(
                    in: .whitespacesAndNewlines
                )
        )
        #expect(try staged(repository).isEmpty)

        _ = try directory.write("src/a.c", "int a = 1;\n")
        try base.git(["add", "src/a.c"], in: directory)
        let changed = try #require(try repository.index().cacheTree)
        #expect(changed.id == nil)
        #expect(changed.children["src"]?.id == nil)
        #expect(changed.children["docs"]?.id == clean.children["docs"]?.id)
        #expect(try staged(repository) == ["modified src/a.c"])
    }

    @Test("staged: a directory replaced by a file, a deleted directory, a mode change, an exact rename")
    func stagedShapes() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        _ = try directory.write("lib/x/one.c", "1\n")
        _ = try directory.write("lib/x/two.c", "2\n")
        _ = try directory.write("tools/run.sh", "echo\n")
        _ = try directory.write("old/name.txt", "moved as is\n")
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "shapes"], in: directory)
        try base.git(["rm", "-rq", "lib/x"], in: directory)
        _ = try directory.write("lib/x", "now a file\n")
        try base.git(["rm", "-rq", "tools"], in: directory)
        chmod(directory.path("src/a.c"), 0o755)
        try base.git(["mv", "old/name.txt", "new-name.txt"], in: directory)
        try base.git(["add", "-A"], in: directory)
        let repository = try GitRepository(containing: directory.path)
        #expect(
            try staged(repository) == [
                "added lib/x", "deleted lib/x/one.c", "deleted lib/x/two.c", "renamed old/name.txt → new-name.txt",
                "modified src/a.c",
                "deleted tools/run.sh",
            ]
        )
        #expect(try base.workingTree(repository).count == 6)
    }

    @Test("an edited and moved file: a deletion and an addition here, a rename to git; the same paths either way")
    func similarRename() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        _ = try directory.write("src/long.c", (0..<40).map { "int line\($0);\n" }.joined())
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "long"], in: directory)
        try base.git(["mv", "src/long.c", "src/moved.c"], in: directory)
        _ = try directory.write("src/moved.c", (0..<41).map { "int line\($0);\n" }.joined())
        try base.git(["add", "src/moved.c"], in: directory)
        let repository = try GitRepository(containing: directory.path)
        let fast = try repository.fastStagedChanges()
        #expect(base.summary(fast) == ["deleted src/long.c", "added src/moved.c"])
        #expect(Set(fast.flatMap(\.paths)) == Set(try repository.stagedChanges().flatMap(\.paths)))
    }

    /// The paths `git status` lists (untracked files one by one).
    func gitStatusPaths(_ directory: TemporaryDirectory) throws -> Set<String> {
        let output = try base.git(["status", "--porcelain=v1", "-z", "-uall", "--no-renames"], in: directory)
        return Set(output.split(separator: "\0").map { String($0.dropFirst(3)) })
    }

    @Test("skip-worktree and intent-to-add entries, a nested repository, and a conflict: the paths git status lists")
    func unusualEntries() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        try base.git(["update-index", "--skip-worktree", "src/b.c"], in: directory)
        try FileManager.default.removeItem(atPath: directory.path("src/b.c"))
        _ = try directory.write("src/later.c", "int later;\n")
        try base.git(["add", "-N", "src/later.c"], in: directory)
        _ = try directory.write("vendored/lib/file.c", "int v;\n")
        try requireGit(["init", "-q"], in: directory.path("vendored/lib"))
        let repository = try GitRepository(containing: directory.path)
        // libgit2 1.5 ignores skip-worktree (it calls src/b.c deleted); git is the reference here.
        let changes = try repository.fastWorkingTreeChanges()
        #expect(Set(changes.flatMap(\.paths)) == (try gitStatusPaths(directory)))
        #expect(Set(changes.flatMap(\.paths)) == ["src/later.c", "vendored/lib/"])

        // A merge conflict: stages 1–3 of one path.
        try base.git(["update-index", "--no-skip-worktree", "src/b.c"], in: directory)
        try base.git(["checkout", "-q", "--", "src/b.c"], in: directory)
        try base.git(["rm", "-q", "--cached", "src/later.c"], in: directory)
        try base.git(["checkout", "-q", "-b", "other"], in: directory)
        _ = try directory.write("src/a.c", "int a = 100;\n")
        try base.git(["commit", "-q", "-am", "other"], in: directory)
        try base.git(["checkout", "-q", "main"], in: directory)
        _ = try directory.write("src/a.c", "int a = 200;\n")
        try base.git(["commit", "-q", "-am", "main"], in: directory)
        #expect(try runGit(["merge", "-q", "other"], in: directory.path).status != 0)
        let conflicted = try repository.fastStagedChanges()
        #expect(base.summary(conflicted) == ["modified src/a.c"])
        #expect(Set(try repository.fastWorkingTreeChanges().flatMap(\.paths)) == (try gitStatusPaths(directory)))
    }

    @Test("a split index, which this reader doesn't know, falls back to git")
    func splitIndex() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        _ = try directory.write("src/a.c", "int a = 5;\n")
        try base.git(["add", "src/a.c"], in: directory)
        try base.git(["update-index", "--split-index"], in: directory)
        let repository = try GitRepository(containing: directory.path)
        #expect(throws: GitError.self) { try repository.index() }
        do {
            _ = try repository.index()
        } catch {
            #expect(error.code == .unsupportedIndex)
        }
        #expect(base.summary(try repository.fastStagedChanges()) == ["modified src/a.c"])
    }

    @Test("the index is found without libgit2: from a subdirectory, and in a linked worktree (a .git file)")
    func locate() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        let top = try #require(GitLayout.locate(from: directory.path("src")))
        #expect(top.indexPath == directory.path(".git/index"))
        #expect(top.commonDirectory == top.gitDirectory)
        let worktree = directory.path + "-worktree"
        defer { try? FileManager.default.removeItem(atPath: worktree) }
        try base.git(["worktree", "add", "-q", worktree], in: directory)
        let expected = try requireGit(
            ["rev-parse", "--path-format=absolute", "--git-path", "index"],
            in: worktree + "/src"
        )
        let layout = try #require(GitLayout.locate(from: worktree + "/src"))
        let located = layout.indexPath
        #expect(located == expected.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(listing(try GitIndex(path: located)) == (try requireGit(["ls-files", "-s"], in: worktree)))
        // The worktree's objects and branches are the main repository's (its `commondir`).
        let common = try requireGit(["rev-parse", "--path-format=absolute", "--git-common-dir"], in: worktree)
        #expect(
            layout.commonDirectory.hasSuffix("/.git/worktrees/" + (worktree as NSString).lastPathComponent + "/../..")
                || layout.commonDirectory == common.trimmingCharacters(in: .whitespacesAndNewlines)
        )
        #expect(
            try layout.headCommit()?.description
                == (try requireGit(["rev-parse", "HEAD"], in: worktree)).trimmingCharacters(in: .whitespacesAndNewlines)
        )
        #expect(GitLayout.locate(from: "/") == nil)
    }

    @Test("many files in many directories: the counting walk finds exactly the untracked and changed ones")
    func manyFiles() throws {
        let directory = try base.repository()
        defer { directory.remove() }
        for folder in 0..<30 {
            for file in 0..<50 { _ = try directory.write("tree/d\(folder)/f\(file).c", "int f\(folder)_\(file);\n") }
        }
        _ = try directory.write(".gitignore", "build/\n*.log\n*.o\n")
        try base.git(["add", "."], in: directory)
        try base.git(["commit", "-q", "-m", "many"], in: directory)
        _ = try directory.write("tree/d3/f7.c", "edited\n")
        _ = try directory.write("tree/d4/new.c", "new\n")
        _ = try directory.write("tree/d5/f1.o", "ignored\n")
        try FileManager.default.removeItem(atPath: directory.path("tree/d6/f2.c"))
        _ = try directory.write("tree/d6/other.c", "same count, other name\n")
        _ = try directory.write("tree/d7/f3.c", "staged\n")
        try base.git(["add", "tree/d7/f3.c"], in: directory)
        let repository = try GitRepository(containing: directory.path)
        #expect(
            try base.workingTree(repository) == [
                "modified tree/d3/f7.c", "untracked tree/d4/new.c", "deleted tree/d6/f2.c", "untracked tree/d6/other.c",
                "modified tree/d7/f3.c",
            ]
        )
    }
}
