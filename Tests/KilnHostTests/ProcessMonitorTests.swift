import KilnPluginAPI
import KilnTestSupport
import Synchronization
import Testing

@testable import KilnHost

#if canImport(Glibc)
    import Glibc
#endif

/// The process monitor: how commands are stopped.
@Suite struct ProcessMonitorTests {
    @Test func killAllStopsACommandThatIgnoresSIGTERMWithoutWaitingForTheGracePeriod() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A grace period no test would wait for: only SIGKILL now can end the command in time.
        let monitor = ProcessMonitor(terminationGrace: 3600)
        let result = HostMutex<CommandResult?>(nil)
        let done = Gate()
        let handle = monitor.run(
            "trap '' TERM; touch started; sleep 1000",
            directory: directory.path,
            environment: System.environment,
            output: TaskOutput()
        ) { ending in
            result.withLock { $0 = ending }
            done.open()
        }
        #expect(await waitUntil(within: 30) { directory.exists("started") })
        handle.terminate()
        monitor.killAll()
        #expect(await waitForResult(within: 30) { done.wait(seconds: 30) } == true)
        #expect(result.withLock { $0 } == .signaled(SIGKILL))
    }
}

/// Where `pidfd_open` fails (kernels before 5.3, some sandboxes, valgrind), a command's exit made
/// no event and every run hung; such children are polled now.
@Suite struct ProcessMonitorWithoutPidfdTests {
    @Test("without pidfds, a command's exit status and output still arrive", arguments: [0, 3])
    func exitIsNoticed(status: Int32) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let monitor = ProcessMonitor(usePidDescriptors: false)
        let result = HostMutex<CommandResult?>(nil)
        let output = TaskOutput()
        let done = Gate()
        _ = monitor.run(
            "echo hello; exit \(status)",
            directory: directory.path,
            environment: System.environment,
            output: output
        ) { ending in
            result.withLock { $0 = ending }
            done.open()
        }
        #expect(await waitForResult(within: 30) { done.wait(seconds: 30) } == true)
        #expect(result.withLock { $0 } == .exited(status))
        #expect(output.text == "hello\n")
    }

    @Test("without pidfds, a terminated command ends with its signal within the grace period")
    func terminationIsNoticed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let monitor = ProcessMonitor(terminationGrace: 1, usePidDescriptors: false)
        let result = HostMutex<CommandResult?>(nil)
        let done = Gate()
        let handle = monitor.run(
            "touch started; sleep 1000",
            directory: directory.path,
            environment: System.environment,
            output: TaskOutput()
        ) {
            ending in
            result.withLock { $0 = ending }
            done.open()
        }
        #expect(await waitUntil(within: 30) { directory.exists("started") })
        handle.terminate()
        #expect(await waitForResult(within: 30) { done.wait(seconds: 30) } == true)
        #expect(result.withLock { $0 } == .signaled(SIGTERM))
    }
}
