import Foundation
import KilnTestSupport
import Testing

/// Hashing through git, end to end: the real `kiln` on a real repository, counting with
/// `KILN_DEBUG=hashes` how each file's hash was obtained.
@Suite("Hashing through git")
struct GitHashingTests {
    let incremental = IncrementalTests()

    /// The counts `KILN_DEBUG=hashes` printed: from the index, from records, read.
    struct Counts: Equatable {
        var index = 0
        var records = 0
        var read = 0
    }

    func run(_ directory: TemporaryDirectory, gitHashes: Bool = true) async throws -> Counts {
        // LD_DEBUG=files: the dynamic loader names every library it opens.
        var environment = ["KILN_DEBUG": "hashes", "LD_DEBUG": "files"]
        if !gitHashes { environment["KILN_GIT_HASHES"] = "0" }
        let result = try await KilnProcess.run(["run"], in: directory.path, environment: environment)
        #expect(result.status == 0, "\(result)")
        // Index entries, blob ids computed from bytes: all read here, without libgit2.
        #expect(!result.standardError.contains("libgit2"), "a run opened libgit2")
        guard let line = result.standardError.split(separator: "\n").first(where: { $0.hasPrefix("kiln: hashes: ") })
        else {
            return Counts()  // a no-op on the snapshot's word hashes nothing
        }
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        return Counts(index: numbers[0], records: numbers[1], read: numbers[2])
    }

    /// A committed project whose `check` task looks at each source (and writes no output, so
    /// every hash counted is a source's); its files' mtimes are in the past, so the index isn't
    /// racy about them.
    func repository() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-git-hashing")
        try directory.write("src/a.txt", "alpha\n")
        try directory.write("src/b.txt", "beta\n")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                each: sources
                sources: ['src/*.txt']
                cmds: ['echo "check {{.source}}" >> ran.log']

            """
        )
        try directory.write(".gitignore", ".kiln/\nran.log\n")
        for file in ["src/a.txt", "src/b.txt", "Taskfile.yml", ".gitignore"] {
            try setModificationTime(directory.path(file), secondsAgo: 10)
        }
        try requireGit(["init", "-q", "-b", "main"], in: directory.path)
        try requireGit(["add", "."], in: directory.path)
        try requireGit(["commit", "-q", "-m", "first"], in: directory.path)
        return directory
    }

    @Test(
        "clean tracked sources aren't read; a touch, a commit or an edit undone reruns nothing; an edit reruns its job"
    )
    func cleanSourcesAreNotRead() async throws {
        let directory = try repository()
        defer { directory.remove() }
        var counts = try await run(directory)
        #expect(incremental.ran(directory) == ["check src/a.txt", "check src/b.txt"])
        #expect(counts == Counts(index: 2, records: 0, read: 0), "both sources from the index")

        // Touched, then git refreshes its index: still clean. The index vouches for both in the
        // snapshot's check, so the run is a no-op; without the snapshot, the jobs' checks take
        // both hashes from the index. Nothing is read either way.
        // (Whole seconds apart: git's own stat check, built without nanoseconds, would take two
        // touches within a second for none and keep the old nanoseconds, which kiln doesn't trust.)
        func touch(_ secondsAgo: Double) throws {
            for file in ["src/a.txt", "src/b.txt"] {
                try setModificationTime(directory.path(file), secondsAgo: secondsAgo)
            }
            try requireGit(["status", "--porcelain"], in: directory.path)
        }
        try touch(5)
        counts = try await run(directory)
        #expect(incremental.ran(directory).isEmpty)
        #expect(counts == Counts(), "a no-op on the snapshot's word")
        try touch(7)
        try FileManager.default.removeItem(atPath: directory.path(".kiln/snapshot"))
        counts = try await run(directory)
        #expect(incremental.ran(directory).isEmpty)
        #expect(counts == Counts(index: 2, records: 0, read: 0))

        // An edit: read, and its job alone reruns.
        try directory.write("src/a.txt", "alpha, edited\n")
        counts = try await run(directory)
        #expect(incremental.ran(directory) == ["check src/a.txt"])
        #expect(counts == Counts(index: 0, records: 0, read: 1))
        // Committed: the record's XXH3 hash is still the file's, by its status.
        try requireGit(["commit", "-q", "-am", "edit"], in: directory.path)
        counts = try await run(directory)
        #expect(incremental.ran(directory).isEmpty)
        // b.txt's record is a blob id: rewritten with the same bytes, the index no longer vouches
        // for it, so the id is computed from them — the same, so nothing reruns.
        try directory.write("src/b.txt", "beta\n")
        counts = try await run(directory)
        #expect(incremental.ran(directory).isEmpty)
        #expect(counts == Counts(index: 0, records: 0, read: 1))
    }

    @Test("libKilnCLI.so neither needs libgit2 nor calls it directly: every call goes through the loader's table")
    func libgit2IsOpenedOnDemand() throws {
        let library = (try KilnProcess.executable() as NSString).deletingLastPathComponent + "/libKilnCLI.so"
        let needed = try runProgram("/usr/bin/readelf", ["--dynamic", "--wide", library], in: "/")
        #expect(needed.status == 0)
        #expect(needed.output.contains("libKilnJobs.so"), "readelf lists what it needs")
        #expect(!needed.output.contains("libgit2"))
        let symbols = try runProgram("/usr/bin/readelf", ["--dyn-syms", "--wide", library], in: "/")
        let direct = symbols.output.split(separator: "\n").filter { $0.contains(" UND ") && $0.contains(" git_") }
        #expect(direct.isEmpty, "libgit2 functions called directly: \(direct)")
    }

    @Test("with KILN_GIT_HASHES=0 every source is read, and the verdicts are the same")
    func disabled() async throws {
        let directory = try repository()
        defer { directory.remove() }
        let counts = try await run(directory, gitHashes: false)
        #expect(counts == Counts(index: 0, records: 0, read: 2))
        #expect(incremental.ran(directory) == ["check src/a.txt", "check src/b.txt"])
        // With git hashes again, the XXH3 records are compared as XXH3: nothing reruns but the edit.
        try directory.write("src/a.txt", "alpha, edited\n")
        _ = try await run(directory)
        #expect(incremental.ran(directory) == ["check src/a.txt"])
    }
}
