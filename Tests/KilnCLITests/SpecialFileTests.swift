import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// kiln opens only regular files, never blocking: a FIFO or a device where it expects a file is
/// refused (or ignored, for its own caches), and a run never waits on one.
@Suite struct SpecialFileTests {
    @Test("a FIFO where .kiln/snapshot should be is ignored: the run ends normally")
    func fifoSnapshot() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  default:\n    sources: [a.txt]\n    cmds: ['true']\n"
        )
        try directory.write("a.txt", "a\n")
        #expect(try await KilnProcess.run(["run"], in: directory.path).status == 0)
        unlink(directory.path(".kiln/snapshot"))
        #expect(mkfifo(directory.path(".kiln/snapshot"), 0o644) == 0)
        let run = try await KilnProcess.run(["run"], in: directory.path, within: 30)
        #expect(run.status == 0, "\(run)")
    }

    @Test(
        "an include naming a FIFO or /dev/zero is a located error, not a hang or a flood",
        arguments: ["fifo.yml", "/dev/zero"]
    )
    func specialInclude(target: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(mkfifo(directory.path("fifo.yml"), 0o644) == 0)
        try directory.write("Taskfile.yml", "version: '3'\nincludes:\n  other: \(target)\ntasks:\n  default: echo\n")
        let run = try await KilnProcess.run(["list"], in: directory.path, within: 30)
        #expect(run.status == 2, "\(run)")
        #expect(run.standardError.contains("Taskfile.yml:3:10: error: can't read Taskfile"), "\(run)")
        #expect(run.standardError.contains("not a regular file"), "\(run)")
    }

    @Test("a plugin path naming a FIFO is refused")
    func fifoPlugin() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(mkfifo(directory.path("libkiln-x.so"), 0o644) == 0)
        try directory.write("Taskfile.yml", "version: '3'\nplugins: [./libkiln-x.so]\ntasks:\n  default: echo\n")
        let run = try await KilnProcess.run(["list"], in: directory.path, within: 30)
        #expect(run.status == 2, "\(run)")
        #expect(run.standardError.contains("is not a regular file"), "\(run)")
    }

    @Test("a FIFO named as a source doesn't block the run")
    func fifoSource() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(mkfifo(directory.path("pipe"), 0o644) == 0)
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  default:\n    sources: [pipe]\n    cmds: ['true']\n"
        )
        let run = try await KilnProcess.run(["run"], in: directory.path, within: 30)
        #expect(run.status == 0, "\(run)")
    }

    @Test("a plugin under a directory its group can write, however far up, is refused")
    func groupWritableAncestor() async throws {
        let build = (try KilnProcess.executable() as NSString).deletingLastPathComponent
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.makeDirectory("shared/deeper/plugins")
        chmod(directory.path("shared"), 0o775)
        let copy = directory.path("shared/deeper/plugins/libkilntest-behaviours.so")
        try FileManager.default.copyItem(atPath: build + "/libkilntest-behaviours.so", toPath: copy)
        chmod(copy, 0o755)
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nplugins: [./shared/deeper/plugins/libkilntest-behaviours.so]\ntasks:\n  default: echo\n"
        )
        let run = try await KilnProcess.run(["list"], in: directory.path)
        #expect(run.status == 2, "\(run)")
        #expect(
            run.standardError.contains("the directory above it \(directory.path("shared")) is writable by its group"),
            "\(run)"
        )
    }
}
