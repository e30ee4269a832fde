import Foundation
import KilnTestSupport
import Testing

/// `.kiln/` keeps itself out of git: it is made with a `.gitignore` holding `*`.
@Suite struct KilnDirectoryTests {
    @Test("after a run, git add -A in a repository with no .gitignore commits no build state")
    func buildStateIsNeverCommitted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  default:\n    sources: [a.txt]\n    cmds: ['true']\n"
        )
        try directory.write("a.txt", "a\n")
        try requireGit(["init", "-q"], in: directory.path)
        let run = try await KilnProcess.run(["run"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        #expect(directory.read(".kiln/.gitignore")?.contains("\n*\n") == true)
        try requireGit(["add", "-A"], in: directory.path)
        let staged = try requireGit(["diff", "--cached", "--name-only"], in: directory.path)
        #expect(staged.split(separator: "\n").sorted() == ["Taskfile.yml", "a.txt"], "\(staged)")
    }
}

/// Every file kiln keeps under `.kiln/` checks its own bytes: one changed byte and it is ignored,
/// rebuilt, and the user is told.
@Suite struct SealedFileTests {
    /// Replaces the first `from` in the file with `to` (same length), as a hand edit would.
    func edit(_ path: String, _ from: String, _ to: String) throws {
        var bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        let needle = Array(from.utf8)
        let start = try #require(
            (0...(bytes.count - needle.count)).first { Array(bytes[$0..<$0 + needle.count]) == needle }
        )
        bytes.replaceSubrange(start..<start + needle.count, with: Array(to.utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test("a hand-edited Taskfile cache is ignored and rebuilt: the Taskfile's command runs, not the edited one")
    func editedTaskfileCache() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  default:\n    cmds: ['echo hello > said.txt']\n")
        #expect(try await KilnProcess.run(["run"], in: directory.path).status == 0)
        try edit(directory.path(".kiln/taskfile.cache"), "hello", "HACKD")
        let run = try await KilnProcess.run(["run"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        #expect(directory.read("said.txt") == "hello\n", "\(run)")
        #expect(run.standardError.contains("taskfile.cache is damaged"), "\(run)")
        // Written anew: the next run says nothing.
        let again = try await KilnProcess.run(["run"], in: directory.path)
        #expect(!again.standardError.contains("damaged"), "\(again)")
    }

    @Test("a damaged snapshot is ignored (every job checked against the build state) and noted")
    func damagedSnapshot() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  default:\n    sources: [in.txt]\n    generates: [out.txt]\n    cmds: ['cp in.txt out.txt']\n"
        )
        try directory.write("in.txt", "one\n")
        #expect(try await KilnProcess.run(["run"], in: directory.path).status == 0)
        try edit(directory.path(".kiln/snapshot"), "out.txt", "OUT.txt")
        try directory.write("in.txt", "two\n")
        let run = try await KilnProcess.run(["run"], in: directory.path)
        #expect(run.status == 0, "\(run)")
        #expect(run.standardError.contains("snapshot is damaged"), "\(run)")
        #expect(directory.read("out.txt") == "two\n")
    }
}
