import Foundation
import KilnTestSupport
import Testing

/// The up-to-date snapshot through the real `kiln`: no-op runs on its word, changes it must see
/// (new and deleted files under globs, other targets, a damaged snapshot), and the commands that
/// say what a run would do without running (`--dry-run`, `status`, `explain`).
@Suite("Snapshot, dry run, status and explain")
struct SnapshotTests {
    let incremental = IncrementalTests()

    func snapshotExists(_ directory: TemporaryDirectory) -> Bool {
        FileManager.default.fileExists(atPath: directory.path(".kiln/snapshot"))
    }

    @Test("a run that ends well leaves a snapshot, and the next no-op run says so on its word")
    func noOpOnTheSnapshotsWord() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(snapshotExists(directory))
        _ = incremental.ran(directory)
        result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("kiln: done: 0 ran, 3 up to date"), "\(result)")
        #expect(incremental.ran(directory).isEmpty)
    }

    @Test("after a failed run only the failed job and what it stopped run again: the snapshot keeps the rest")
    func failedRunKeepsWhatSettled() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write("src/a.txt", "alpha, changed\n")
        try directory.write("src/b.txt", "beta, changed\n")
        let taskfile = try #require(directory.read("Taskfile.yml"))
        let failing = taskfile.replacingOccurrences(
            of: "- tr -d '#' < {{.source}} > {{.output}}",
            with: "- test {{.source}} != src/b.txt\n      - tr -d '#' < {{.source}} > {{.output}}"
        )
        try directory.write("Taskfile.yml", failing)
        var result = try await KilnProcess.run(["run", "-k"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/a.txt", "copy src/b.txt"])
        #expect(snapshotExists(directory))
        try directory.write("Taskfile.yml", taskfile)
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        // The Taskfile changed back: copy's command is what it was, so a's record (made with the
        // failing Taskfile) differs; b failed and has none; join never ran.
        #expect(incremental.ran(directory) == ["copy src/a.txt", "copy src/b.txt", "join"])
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(incremental.ran(directory).isEmpty)
    }

    @Test("a run that fails without touching the Taskfile reruns just the failed job next time")
    func failedJobAloneReruns() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write("src/b.txt", "beta, changed\n")
        try FileManager.default.createDirectory(
            atPath: directory.path("out/b.txt.blocker"),
            withIntermediateDirectories: true
        )
        // out/b.txt can't be written while it is a directory: copy src/b.txt fails.
        try FileManager.default.removeItem(atPath: directory.path("out/b.txt"))
        try FileManager.default.moveItem(
            atPath: directory.path("out/b.txt.blocker"),
            toPath: directory.path("out/b.txt")
        )
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/b.txt"])
        try FileManager.default.removeItem(atPath: directory.path("out/b.txt"))
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/b.txt", "join"])
        #expect(result.standardOutput.contains("copy src/a.txt: up to date"), "\(result)")
    }

    @Test("a new file matching an each: glob gets its job, though no watched file changed")
    func newFileUnderAGlob() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        // Once every status is old enough to trust, a run leaves a snapshot that vouches for all
        // of them: only the listed directory can tell of the new file.
        try await Task.sleep(for: .milliseconds(150))
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write("src/c.txt", "gamma\n")
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/c.txt", "join"])
    }

    @Test("a deleted source drops its job, and what depends on the task reruns")
    func deletedSourceUnderAGlob() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try FileManager.default.removeItem(atPath: directory.path("src/b.txt"))
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["join"])
    }

    @Test("a snapshot made for other targets isn't used: what they changed is seen")
    func otherTargets() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        try directory.write("src/a.txt", "alpha, changed\n")
        _ = incremental.ran(directory)
        var result = try await KilnProcess.run(["run", "copy"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/a.txt"])
        result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(incremental.ran(directory) == ["join"])
        #expect(directory.read("joined.txt") == "alpha, changed\nbeta\n")
    }

    @Test("a damaged snapshot is ignored: the run checks everything and comes to the same verdicts")
    func damagedSnapshot() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write(".kiln/snapshot", "KILNSNP\u{1}garbage")
        try directory.write("src/b.txt", "beta, changed\n")
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(incremental.ran(directory) == ["copy src/b.txt", "join"])
        #expect(snapshotExists(directory))
    }

    @Test("--dry-run lists exactly the jobs a real run then runs, and runs nothing")
    func dryRunIsExact() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        var result = try await KilnProcess.run(["run", "--dry-run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.isEmpty, "\(result)")
        try directory.write("src/a.txt", "alpha, again\n")
        result = try await KilnProcess.run(["run", "--dry-run", "--explain"], in: directory.path)
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("copy src/a.txt: mkdir -p out") }, "\(result)")
        #expect(lines.contains("    because input src/a.txt changed"), "\(result)")
        #expect(lines.contains { $0.hasPrefix("join: echo join") }, "\(result)")
        #expect(lines.contains("    because dependency copy runs first"), "\(result)")
        #expect(lines.count == 4, "\(result)")
        #expect(incremental.ran(directory).isEmpty)
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(incremental.ran(directory) == ["copy src/a.txt", "join"])
    }

    @Test("kiln status says what is out of date and why; --exit-code makes it the exit status")
    func status() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        var result = try await KilnProcess.run(["status"], in: directory.path)
        #expect(result.standardOutput.contains("kiln: 3 of 3 jobs out of date"), "\(result)")
        #expect(result.standardOutput.contains("  copy src/a.txt: no record of an earlier run"), "\(result)")
        _ = try await KilnProcess.run(["run"], in: directory.path)
        result = try await KilnProcess.run(["status", "--exit-code"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput == "kiln: up to date (3 jobs)\n", "\(result)")
        try FileManager.default.removeItem(atPath: directory.path("joined.txt"))
        result = try await KilnProcess.run(["status", "--exit-code"], in: directory.path)
        #expect(result.status == 1, "\(result)")
        #expect(
            result.standardOutput == "kiln: 1 of 3 jobs out of date\n  join: output joined.txt is missing\n",
            "\(result)"
        )
        result = try await KilnProcess.run(["status", "--json"], in: directory.path)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
        )
        #expect(object["jobs"] as? Int == 3)
        let stale = try #require(object["outOfDate"] as? [[String: Any]])
        #expect(stale.map { $0["job"] as? String } == ["join"])
        #expect(stale.first?["reason"] as? String == "output joined.txt is missing")
    }

    @Test("kiln explain gives every job's verdict without running anything")
    func explain() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = incremental.ran(directory)
        try directory.write("out/b.txt", "edited by hand\n")
        let result = try await KilnProcess.run(["explain"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(
            result.standardOutput == """
                copy src/a.txt: up to date
                copy src/b.txt: output out/b.txt was modified
                join: dependency copy runs first

                """,
            "\(result)"
        )
        #expect(incremental.ran(directory).isEmpty)
        #expect(directory.read("out/b.txt") == "edited by hand\n")
    }
}

@Suite("Remote-cache keys")
struct RemoteKeysTests {
    let incremental = IncrementalTests()

    func keys(_ directory: TemporaryDirectory) async throws -> [String: [String: Any]] {
        let result = try await KilnProcess.run(["explain", "--remote-keys", "--json"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        var byJob: [String: [String: Any]] = [:]
        for line in result.standardOutput.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            // The job's command line stays "command"; the remote keys have an object of their own.
            #expect(!(object["command"] as? String ?? "sha256:").hasPrefix("sha256:"), "\(line)")
            let remote = try #require(object["remote"] as? [String: Any], "\(line)")
            #expect((remote["command"] as? String)?.hasPrefix("sha256:") ?? (remote["notCached"] != nil), "\(line)")
            byJob[try #require(object["job"] as? String)] = remote
        }
        return byJob
    }

    @Test("action and output digests come from the job and the files alone: the same without the build state")
    func keysNeedNoState() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        let before = try await keys(directory)
        #expect(Set(before.keys) == ["copy src/a.txt", "copy src/b.txt", "join"])
        try FileManager.default.removeItem(atPath: directory.path(".kiln"))
        let after = try await keys(directory)
        for (job, object) in before {
            #expect(after[job]?["action"] as? String == object["action"] as? String, "\(job)")
        }
        // An output's digest is the SHA-256 of the file, with its size.
        let outputs = try #require(after["join"]?["outputs"] as? [[String: Any]])
        let joined = try #require(outputs.first { $0["path"] as? String == "joined.txt" }?["digest"] as? String)
        // sha256sum of "alpha\nbeta\n", 11 bytes.
        #expect(joined == "sha256:e49c81e2d2f84e259d40e2fb8192f3bcd198b355184845d76d8f58807d0d78ee/11")
    }

    @Test("an input change changes its job's action digest, and its dependents' only through changed outputs")
    func keysFollowContent() async throws {
        let directory = try incremental.project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        let before = try await keys(directory)
        try directory.write("src/a.txt", "al#pha\n")  // the copy drops '#': out/a.txt stays the same
        _ = try await KilnProcess.run(["run"], in: directory.path)
        let after = try await keys(directory)
        #expect(after["copy src/a.txt"]?["action"] as? String != before["copy src/a.txt"]?["action"] as? String)
        #expect(after["copy src/b.txt"]?["action"] as? String == before["copy src/b.txt"]?["action"] as? String)
        #expect(after["join"]?["action"] as? String == before["join"]?["action"] as? String)
    }
}

extension RemoteKeysTests {
    @Test("with keep-depfile, the depfile stays and a header edit changes its includers' action digests (real cc -MMD)")
    func keptDepfileFeedsTheKeys() async throws {
        let directory = try incremental.cProject(keepDepfile: true)
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(directory.read("build/a.d")?.contains("a.h") == true)
        let before = try await keys(directory)
        try directory.write("include/b.h", "#define B_VALUE 3\n")
        let after = try await keys(directory)
        #expect(after["default src/b.c"]?["action"] as? String != before["default src/b.c"]?["action"] as? String)
        #expect(after["default src/a.c"]?["action"] as? String == before["default src/a.c"]?["action"] as? String)
    }
}
