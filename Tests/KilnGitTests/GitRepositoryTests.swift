import Foundation
import KilnGit
import KilnGitFormat
import KilnTestSupport
import Testing

/// Changed files through libgit2, on real repositories the tests make with the git CLI.
@Suite("Changed files from git")
struct GitRepositoryTests {
    /// A repository with two committed files and a `.gitignore`.
    func repository() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-git")
        try git(["init", "-q", "-b", "main"], in: directory)
        _ = try directory.write("src/a.c", "int a;\n")
        _ = try directory.write("src/b.c", "int b;\n")
        _ = try directory.write(".gitignore", "build/\n*.log\n")
        try git(["add", "."], in: directory)
        try git(["commit", "-q", "-m", "first"], in: directory)
        return directory
    }

    @discardableResult
    func git(_ arguments: [String], in directory: TemporaryDirectory) throws -> String {
        try requireGit(arguments, in: directory.path)
    }

    func summary(_ changes: [GitChange]) -> [String] { changes.map(\.description) }

    /// The working-tree changes, asserting the fast path (index stat data, parallel) finds
    /// exactly what libgit2's status does.
    func workingTree(_ repository: GitRepository, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String]
    {
        let slow = summary(try repository.workingTreeChanges())
        let fast = summary(try repository.fastWorkingTreeChanges())
        #expect(fast == slow, "the fast status differs from libgit2's", sourceLocation: sourceLocation)
        return slow
    }

    @Test("a clean working tree has no changes")
    func clean() throws {
        let directory = try repository()
        defer { directory.remove() }
        #expect(try workingTree(GitRepository(containing: directory.path)).isEmpty)
    }

    @Test("modified, added, deleted, untracked; ignored files left out; found from a subdirectory")
    func everyKind() throws {
        let directory = try repository()
        defer { directory.remove() }
        _ = try directory.write("src/a.c", "int a = 1;\n")
        try FileManager.default.removeItem(atPath: directory.path("src/b.c"))
        _ = try directory.write("src/new.c", "int n;\n")
        _ = try directory.write("notes/todo.txt", "later\n")
        _ = try directory.write("build/out.o", "object\n")
        _ = try directory.write("run.log", "ignored\n")
        _ = try directory.write("src/staged.c", "int s;\n")
        try git(["add", "src/staged.c"], in: directory)
        let repository = try GitRepository(containing: directory.path("src"))
        #expect(repository.workingDirectory == directory.path)
        #expect(
            try workingTree(repository) == [
                "untracked notes/todo.txt", "modified src/a.c", "deleted src/b.c", "untracked src/new.c",
                "added src/staged.c",
            ]
        )
    }

    @Test("staged only: the index against HEAD, and a partly staged file counts once")
    func stagedOnly() throws {
        let directory = try repository()
        defer { directory.remove() }
        _ = try directory.write("src/a.c", "int a = 1;\n")
        try git(["add", "src/a.c"], in: directory)
        _ = try directory.write("src/a.c", "int a = 2;\n")  // a further, unstaged change
        _ = try directory.write("src/b.c", "int b = 1;\n")  // unstaged only
        _ = try directory.write("src/new.c", "int n;\n")  // untracked
        let repository = try GitRepository(containing: directory.path)
        #expect(summary(try repository.stagedChanges()) == ["modified src/a.c"])
        #expect(try workingTree(repository) == ["modified src/a.c", "modified src/b.c", "untracked src/new.c"])
    }

    @Test("a rename counts under both paths")
    func rename() throws {
        let directory = try repository()
        defer { directory.remove() }
        try git(["mv", "src/a.c", "src/renamed.c"], in: directory)
        let changes = try GitRepository(containing: directory.path).stagedChanges()
        #expect(summary(changes) == ["renamed src/a.c → src/renamed.c"])
        #expect(changes.first?.paths == ["src/a.c", "src/renamed.c"])
    }

    @Test("a mode change is a change")
    func modeChange() throws {
        let directory = try repository()
        defer { directory.remove() }
        chmod(directory.path("src/a.c"), 0o755)
        #expect(try workingTree(GitRepository(containing: directory.path)) == ["modified src/a.c"])
    }

    @Test("between two revisions: from their merge base, like git diff A...B")
    func betweenRevisions() throws {
        let directory = try repository()
        defer { directory.remove() }
        try git(["checkout", "-q", "-b", "feature"], in: directory)
        _ = try directory.write("src/feature.c", "int f;\n")
        try git(["add", "."], in: directory)
        try git(["commit", "-q", "-m", "feature"], in: directory)
        try git(["checkout", "-q", "main"], in: directory)
        _ = try directory.write("src/b.c", "int b = 2;\n")  // on main after the branch point: not in main...feature
        try git(["commit", "-q", "-am", "main moves on"], in: directory)
        let repository = try GitRepository(containing: directory.path)
        #expect(summary(try repository.changes(base: "main", head: "feature")) == ["added src/feature.c"])
        #expect(summary(try repository.changes(base: "feature", head: "main")) == ["modified src/b.c"])
        #expect(throws: GitError.self) { try repository.changes(base: "no-such-branch", head: "HEAD") }
        do {
            _ = try repository.changes(base: "no-such-branch", head: "HEAD")
        } catch {
            #expect(error.code == .unknownRevision)
            #expect(error.message.contains("'no-such-branch' does not name a commit"))
        }
    }

    @Test("a detached HEAD works like a branch")
    func detachedHead() throws {
        let directory = try repository()
        defer { directory.remove() }
        try git(["checkout", "-q", "--detach"], in: directory)
        _ = try directory.write("src/a.c", "int a = 3;\n")
        #expect(try workingTree(GitRepository(containing: directory.path)) == ["modified src/a.c"])
    }

    @Test("an empty repository: everything is new")
    func emptyRepository() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-git")
        defer { directory.remove() }
        try git(["init", "-q"], in: directory)
        _ = try directory.write("a.txt", "a\n")
        _ = try directory.write("b.txt", "b\n")
        try git(["add", "b.txt"], in: directory)
        #expect(try workingTree(GitRepository(containing: directory.path)) == ["untracked a.txt", "added b.txt"])
    }

    @Test("a submodule present: its inside isn't listed, the superproject's changes are")
    func submodule() throws {
        let inner = try repository()
        defer { inner.remove() }
        let directory = try repository()
        defer { directory.remove() }
        try git(
            ["-c", "protocol.file.allow=always", "submodule", "add", "-q", inner.path, "vendor/inner"],
            in: directory
        )
        try git(["commit", "-q", "-m", "submodule"], in: directory)
        _ = try directory.write("vendor/inner/src/a.c", "int a = 9;\n")  // a change inside the submodule
        _ = try directory.write("src/a.c", "int a = 4;\n")
        #expect(try workingTree(GitRepository(containing: directory.path)) == ["modified src/a.c"])
    }

    @Test("outside a repository: a clear error")
    func notARepository() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-nogit")
        defer { directory.remove() }
        do {
            _ = try GitRepository(containing: directory.path)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .notARepository)
            #expect(error.message == "\(directory.path) is not inside a git repository")
        }
    }
}

extension GitRepositoryTests {
    @Test("the staged changes from the git executable are libgit2's: modified, added, deleted, renamed")
    func stagedFromGitMatchesLibgit2() throws {
        let directory = try repository()
        defer { directory.remove() }
        _ = try directory.write("src/a.c", "int a = 1;\n")
        _ = try directory.write("src/new.c", "int n;\n")
        try git(["add", "src/a.c", "src/new.c"], in: directory)
        try git(["rm", "-q", "src/b.c"], in: directory)
        _ = try directory.write("docs/x.md", "# docs\n")
        try git(["add", "docs/x.md"], in: directory)
        try git(["commit", "-q", "-m", "more"], in: directory)
        try git(["mv", "docs/x.md", "docs/renamed.md"], in: directory)
        _ = try directory.write("src/a.c", "int a = 2;\n")
        try git(["add", "src/a.c"], in: directory)
        _ = try directory.write("src/unstaged.c", "int u;\n")
        let repository = try GitRepository(containing: directory.path)
        let fromGit = try #require(repository.stagedChangesFromGit())
        #expect(summary(fromGit) == summary(try repository.stagedChanges()))
        #expect(summary(fromGit) == ["renamed docs/x.md → docs/renamed.md", "modified src/a.c"])
    }
}

extension GitRepositoryTests {
    @Test("the fast status sees a same-size edit made right after the index was written (racily clean)")
    func racilyCleanEdit() throws {
        let directory = try repository()
        defer { directory.remove() }
        // Same size, written within the index's timestamp: only the content can tell.
        _ = try directory.write("src/a.c", "int z;\n")
        let repository = try GitRepository(containing: directory.path)
        #expect(try workingTree(repository) == ["modified src/a.c"])
        // Touched without a change: not a change.
        _ = try directory.write("src/a.c", "int a;\n")
        #expect(try workingTree(repository).isEmpty)
    }

    @Test("the fast status: symlinks, a file turned into a directory, and nested untracked and ignored files")
    func fastStatusShapes() throws {
        let directory = try repository()
        defer { directory.remove() }
        symlink("a.c", directory.path("src/link.c"))
        try git(["add", "src/link.c"], in: directory)
        try git(["commit", "-q", "-m", "link"], in: directory)
        try FileManager.default.removeItem(atPath: directory.path("src/link.c"))
        symlink("b.c", directory.path("src/link.c"))
        _ = try directory.write("new/deep/file.txt", "x\n")
        _ = try directory.write("new/deep/skip.log", "ignored\n")
        _ = try directory.write("build/out.o", "ignored\n")
        try FileManager.default.removeItem(atPath: directory.path("src/b.c"))
        try FileManager.default.createDirectory(atPath: directory.path("src/b.c"), withIntermediateDirectories: true)
        _ = try directory.write("src/b.c/inner.txt", "now a directory\n")
        let changes = try workingTree(GitRepository(containing: directory.path))
        #expect(changes.contains("modified src/link.c"))
        #expect(changes.contains("untracked new/deep/file.txt"))
        #expect(!changes.contains { $0.contains("skip.log") || $0.contains("out.o") })
    }
}
