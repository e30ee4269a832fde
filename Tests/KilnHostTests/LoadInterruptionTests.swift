import Foundation
import KilnTestSupport
import Testing

@testable import KilnHost

/// A dynamic variable's command and the interrupt that stops a load (``LoadInterruption``).
@Suite struct LoadInterruptionTests {
    @Test("a command the load would start after the interrupt is not started")
    func noCommandStartsAfterTheInterrupt() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-load-interrupt")
        defer { directory.remove() }
        let interruption = LoadInterruption()
        interruption.interrupt(with: SIGINT)
        let result = DynamicVariables.run(
            "touch ran",
            directory: directory.path,
            environment: [:],
            interruption: interruption
        )
        guard case .failure(let failure) = result else {
            Issue.record("the command gave a value: \(result)")
            return
        }
        #expect(failure.description == "not started: kiln was interrupted (signal 2)")
        #expect(!FileManager.default.fileExists(atPath: directory.path("ran")))
    }

    @Test("the interrupt reaches the running command's whole group, a child holding its output included")
    func theInterruptReachesTheRunningGroup() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-load-interrupt")
        defer { directory.remove() }
        let interruption = LoadInterruption()
        let marker = directory.path("started")
        // The interrupt comes from another thread once the command has begun, as the signal
        // watcher's does. `sleep` is the shell's child here (a command follows it) and holds the
        // output pipe: signalling the shell alone would leave the read waiting the minute out.
        let signaller = Thread {
            for _ in 0..<600 where !FileManager.default.fileExists(atPath: marker) { usleep(50_000) }
            interruption.interrupt(with: SIGTERM)
        }
        signaller.start()
        // Unstopped, the command would take its minute and give "late": it fails, killed.
        let result = DynamicVariables.run(
            "touch started; sleep 60; echo late",
            directory: directory.path,
            environment: [:],
            interruption: interruption
        )
        guard case .failure(let failure) = result else {
            Issue.record("the command gave a value: \(result)")
            return
        }
        #expect(failure.description == "killed by signal 15")
    }

    @Test("a load that is never interrupted runs its commands as before")
    func uninterruptedCommandsGiveTheirOutput() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-load-interrupt")
        defer { directory.remove() }
        let result = DynamicVariables.run(
            "echo value",
            directory: directory.path,
            environment: [:],
            interruption: LoadInterruption()
        )
        #expect(try result.get() == "value")
    }
}
