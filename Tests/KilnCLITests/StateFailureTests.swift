import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// When kiln can't write its state, it says why — read-only, or a full disk, naming the path —
/// and a healthy state is never called damaged or moved aside.
@Suite(.serialized) struct StateFailureTests {
    static let taskfile =
        "version: '3'\ntasks:\n  default:\n    sources: [in.txt]\n    generates: [out.txt]\n    cmds: ['cp in.txt out.txt']\n"

    @Test("a read-only .kiln: its own message and exit status 4, not 'another run' (3)")
    func readOnlyState() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("Taskfile.yml", Self.taskfile)
        try directory.write("in.txt", "one\n")
        #expect(try await KilnProcess.run(["run"], in: directory.path).status == 0)
        let kiln = try KilnProcess.executable()
        let result: (status: Int32, output: String)
        if getuid() == 0 {
            // Root writes through permissions: make .kiln a read-only bind mount of itself.
            let kilnDirectory = directory.path(".kiln")
            try #require(try runProgram("/bin/mount", ["--bind", kilnDirectory, kilnDirectory], in: "/").status == 0)
            defer { _ = try? runProgram("/bin/umount", [kilnDirectory], in: "/") }
            try #require(try runProgram("/bin/mount", ["-o", "remount,ro,bind", kilnDirectory], in: "/").status == 0)
            result = try runProgram(kiln, ["run"], in: directory.path)
        } else {
            chmod(directory.path(".kiln"), 0o555)
            defer { chmod(directory.path(".kiln"), 0o755) }
            result = try runProgram(kiln, ["run"], in: directory.path)
        }
        #expect(result.status == 4, "\(result.output)")
        #expect(
            result.output.contains("can't write kiln's state at \(directory.path(".kiln/lock"))"),
            "\(result.output)"
        )
        #expect(result.output.contains("must be able to write it"), "\(result.output)")
    }

    @Test(
        "a full disk is reported as a full disk, naming the path; the state is not moved aside",
        .enabled(if: getuid() == 0)
    )
    func fullDisk() async throws {
        let mountPoint = try TemporaryDirectory(prefix: "kiln-full-disk")
        defer { mountPoint.remove() }
        let mounted = try runProgram("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path], in: "/")
        try #require(mounted.status == 0, "\(mounted.output)")
        defer { _ = try? runProgram("/bin/umount", [mountPoint.path], in: "/") }
        let project = mountPoint.path + "/project"
        try FileManager.default.createDirectory(atPath: project, withIntermediateDirectories: true)
        try Self.taskfile.write(toFile: project + "/Taskfile.yml", atomically: false, encoding: .utf8)
        try "one\n".write(toFile: project + "/in.txt", atomically: false, encoding: .utf8)
        #expect(try await KilnProcess.run(["run"], in: project).status == 0)
        // Fill the disk to the last block.
        _ = try runProgram("/bin/dd", ["if=/dev/zero", "of=\(mountPoint.path)/fill", "bs=4k"], in: "/")
        try? "two\n".write(toFile: project + "/in.txt", atomically: false, encoding: .utf8)
        let full = try await KilnProcess.run(["run"], in: project)
        let said = full.standardOutput + full.standardError
        #expect(said.contains("disk is full") || said.contains("No space left on device"), "\(full)")
        #expect(said.contains(project + "/.kiln"), "names the path: \(full)")
        #expect(!said.contains("damaged"), "\(full)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: project + "/.kiln")
        #expect(!entries.contains { $0.contains("corrupt") }, "\(entries)")
        #expect(entries.contains("state.db"))
        // Room again: the state is as healthy as it was, and nothing is called damaged.
        unlink(mountPoint.path + "/fill")
        let after = try await KilnProcess.run(["run"], in: project)
        #expect(after.status == 0, "\(after)")
        #expect(!(after.standardOutput + after.standardError).contains("damaged"), "\(after)")
    }
}
