import Foundation
import KilnTestSupport
import Testing

/// `.kiln/` keeps itself out of git: it is made with a `.gitignore` holding `*`.
@Suite struct KilnDirectoryTests {
    @Test("after a run, git add -A in a repository with no .gitignore commits no build state")
    func buildStateIsNeverCommitted() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  default:\n    sources: [a.txt]\n    cmds: ['true']\n")
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
