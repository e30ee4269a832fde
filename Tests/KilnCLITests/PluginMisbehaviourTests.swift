import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A plugin's mistakes never make kiln lie or hang: an `exit(0)` in the middle of a build is no
/// success, and a plugin job that ignores cancellation doesn't keep Ctrl-C or SIGTERM from
/// ending kiln.
@Suite struct PluginMisbehaviourTests {
    func project(_ tasks: String) throws -> TemporaryDirectory {
        let build = (try KilnProcess.executable() as NSString).deletingLastPathComponent
        let directory = try TemporaryDirectory(prefix: "kiln-misbehaving")
        try directory.write(
            "Taskfile.yml",
            "version: '3'\nplugins: [\(build)/libkilntest-behaviours.so]\ntasks:\n" + tasks
        )
        return directory
    }

    @Test("a plugin job calling exit(0) mid-build ends kiln with status 70 and says the build is unfinished")
    func exitZeroIsNoSuccess() async throws {
        let directory = try project(
            """
              quits:
                plugin: quit
                with: {status: 0}
              after:
                deps: [quits]
                cmds: ['touch after.ran']

            """
        )
        defer { directory.remove() }
        let result = try await KilnProcess.run(["run", "after"], in: directory.path)
        #expect(result.status == 70, "\(result)")
        #expect(result.standardError.contains("exit() was called in the middle of the run"), "\(result)")
        #expect(!directory.exists("after.ran"))
    }

    @Test(
        "Ctrl-C and SIGTERM end kiln with 130 even while a plugin job ignores cancellation",
        arguments: [SIGINT, SIGTERM]
    )
    func interruptEndsDespiteAHangingJob(signal: Int32) async throws {
        let directory = try project(
            """
              stuck:
                plugin: hang
                with: {started: stuck.started}

            """
        )
        defer { directory.remove() }
        let kiln = try KilnProcess.start(["run", "stuck"], in: directory.path)
        let started = await waitUntil(within: 60) { directory.exists("stuck.started") }
        guard started else {
            kiln.send(SIGKILL)
            Issue.record("the job did not start: \(String(describing: try? await kiln.wait(within: 30)))")
            return
        }
        kiln.send(signal)
        let result = try await kiln.wait(within: 30)
        #expect(result.status == 130, "\(result)")
        #expect(result.standardError.contains("stuck did not stop"), "\(result)")
    }
}
