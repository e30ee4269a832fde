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
