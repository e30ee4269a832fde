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

/// The environment a command gets: every variable, byte for byte, whatever its length or script.
@Suite struct CommandEnvironmentTests {
    /// Variables of every shape: empty values, `=` in a value, multi-byte UTF-8, a small string
    /// (stored inline) beside long ones, and enough of them that the block is large.
    static let variables: [String: String] = {
        var variables = [
            "EMPTY": "", "EQUALS": "a=b=c", "UNICODE": "héllo wörld ✓ 日本", "SMALL": "x",
            "LONG": String(repeating: "0123456789", count: 400), "PATH": "/usr/bin:/bin",
        ]
        for index in 0..<200 { variables["KILN_TEST_VARIABLE_\(index)"] = "value \(index) " + String(index * 7919) }
        return variables
    }()

    @Test func thePointerBlockHoldsEveryVariableAsKeyEqualsValue() {
        let read = withEnvironmentPointers(Self.variables) { envp -> [String] in
            var entries: [String] = []
            var index = 0
            while let entry = envp[index] {
                entries.append(String(cString: entry))
                index += 1
            }
            return entries
        }
        #expect(read.count == Self.variables.count)
        #expect(Set(read) == Set(Self.variables.map { "\($0.key)=\($0.value)" }))
        #expect(withEnvironmentPointers([:]) { $0[0] == nil })
    }

    @Test func aCommandSeesEveryVariable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let monitor = ProcessMonitor()
        let output = TaskOutput()
        let done = Gate()
        // `env -0`: entries end in NUL, so a value's own characters can't split one.
        _ = monitor.run("env -0", directory: directory.path, environment: Self.variables, output: output) { _ in
            done.open()
        }
        #expect(await waitForResult(within: 30) { done.wait(seconds: 30) } == true)
        let entries = output.text.split(separator: "\0", omittingEmptySubsequences: true).map(String.init)
        var seen: [String: String] = [:]
        for entry in entries {
            guard let equals = entry.firstIndex(of: "=") else { continue }
            seen[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
        }
        for (key, value) in Self.variables {
            #expect(seen[key] == value, "\(key)")
        }
    }
}
