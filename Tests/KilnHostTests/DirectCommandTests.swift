import Foundation
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

#if canImport(Glibc)
    import Glibc
#endif

/// A simple command started without the shell (``CommandShell/directWords(_:)``) must do exactly
/// what `/bin/sh -e -c` does with it: each case runs the same command through a monitor that starts
/// it directly and one that always uses the shell, and compares the results and the output.
@Suite struct DirectCommandTests {
    /// A project directory with programs on a PATH of its own.
    struct Fixture {
        let directory: TemporaryDirectory
        let environment: [String: String]

        init() throws {
            directory = try TemporaryDirectory()
            let bin = try directory.makeDirectory("bin")
            let first = try directory.makeDirectory("first")
            let scripts = [
                "bin/selfsignal": "#!/bin/sh\nkill -USR1 $$\n",
                "bin/selfpipe": "#!/bin/sh\nkill -PIPE $$\n",
                "bin/parentname": "#!/bin/sh\ncat /proc/$PPID/comm\n",
                "bin/noshebang": "echo run by the shell as a script\n",
                "bin/tool": "#!/bin/sh\necho the second tool\n",
                "first/tool": "#!/bin/sh\necho not executable\n",
                "bin/onlyreadable": "#!/bin/sh\necho not executable\n",
            ]
            for (path, text) in scripts {
                let executable = path != "first/tool" && path != "bin/onlyreadable"
                // Written through a close-on-exec descriptor: a process another test starts
                // meanwhile would otherwise hold it open for writing, and running the script would
                // fail (ETXTBSY) until that process ended.
                let descriptor = open(
                    directory.path(path),
                    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                    executable ? 0o755 : 0o644
                )
                #expect(descriptor >= 0)
                _ = text.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
                close(descriptor)
            }
            _ = try directory.makeDirectory("real")
            _ = symlink(directory.path("real"), directory.path("link"))
            var environment = System.environment
            environment["PATH"] = "\(first):\(bin):" + (environment["PATH"] ?? "/usr/bin:/bin")
            environment["KILN_GOOD_NAME"] = "kept"
            environment["KILN-BAD-NAME"] = "dropped by the shell"
            environment["PWD"] = directory.path
            self.environment = environment
        }
    }

    static func run(
        _ command: String,
        directly: Bool,
        in directory: String,
        environment: [String: String]
    ) async -> (result: CommandResult?, output: String) {
        let monitor = ProcessMonitor(startsSimpleCommandsDirectly: directly)
        let output = TaskOutput()
        let result = HostMutex<CommandResult?>(nil)
        let done = Gate()
        _ = monitor.run(command, directory: directory, environment: environment, output: output) { ending in
            result.withLock { $0 = ending }
            done.open()
        }
        _ = await waitForResult(within: 30) { done.wait(seconds: 30) }
        return (result.withLock { $0 }, output.text)
    }

    /// Runs `command` both ways; expects the same result and output, and returns them.
    static func compare(
        _ command: String,
        in directory: String,
        environment: [String: String],
        sortingLines: Bool = false
    ) async -> (result: CommandResult?, output: String) {
        let direct = await run(command, directly: true, in: directory, environment: environment)
        let shell = await run(command, directly: false, in: directory, environment: environment)
        let sorted = { (text: String) in
            sortingLines ? text.split(separator: "\n").sorted().joined(separator: "\n") : text
        }
        #expect(direct.result == shell.result, "\(command)")
        #expect(sorted(direct.output) == sorted(shell.output), "\(command)")
        return direct
    }

    @Test func theProgramIsStartedWithoutTheShell() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let path = fixture.directory.path
        let direct = await Self.run("parentname", directly: true, in: path, environment: fixture.environment)
        let shell = await Self.run("parentname", directly: false, in: path, environment: fixture.environment)
        #expect(shell.output == "sh\n")
        #expect(direct.result == .exited(0))
        #expect(!direct.output.isEmpty && direct.output != "sh\n")
    }

    @Test func theEnvironmentIsTheOneTheShellPassesOn() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let (result, output) = await Self.compare(
            "env",
            in: fixture.directory.path,
            environment: fixture.environment,
            sortingLines: true
        )
        #expect(result == .exited(0))
        #expect(output.contains("KILN_GOOD_NAME=kept\n"))
        #expect(!output.contains("KILN-BAD-NAME"))
        // Variables dash sets its own way when it is given them.
        var special = fixture.environment
        special["IFS"] = "x"
        special["PPID"] = "1"
        special["OPTIND"] = "5"
        let shellSet = await Self.compare("env", in: fixture.directory.path, environment: special, sortingLines: true)
        #expect(shellSet.output.contains("OPTIND=1\n"))
        #expect(!shellSet.output.contains("IFS=x"))
    }

    @Test func pwdIsSetAsTheShellSetsIt() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let link = fixture.directory.path("link")
        let real = try #require(
            realpath(fixture.directory.path("real"), nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            }
        )
        var environment = fixture.environment
        // A PWD naming the directory, through a symbolic link: kept.
        environment["PWD"] = link
        #expect(await Self.compare("printenv PWD", in: link, environment: environment).output == link + "\n")
        // One naming another directory: the directory's real path.
        environment["PWD"] = "/"
        #expect(await Self.compare("printenv PWD", in: link, environment: environment).output == real + "\n")
        // None, or a relative one: the real path too.
        environment["PWD"] = nil
        #expect(await Self.compare("printenv PWD", in: link, environment: environment).output == real + "\n")
        environment["PWD"] = "link"
        #expect(await Self.compare("printenv PWD", in: link, environment: environment).output == real + "\n")
    }

    @Test func theShellAnswersWhatOnlyItKnows() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let path = fixture.directory.path
        let environment = fixture.environment
        let missing = await Self.compare("nosuchprogram x", in: path, environment: environment)
        #expect(missing.result == .exited(127))
        #expect(missing.output.contains("nosuchprogram: not found"))
        let script = await Self.compare("noshebang", in: path, environment: environment)
        #expect(script.result == .exited(0))
        #expect(script.output == "run by the shell as a script\n")
        let denied = await Self.compare("onlyreadable", in: path, environment: environment)
        // dash says so with status 127 (not POSIX's 126).
        #expect(denied.result == .exited(127))
        #expect(denied.output.contains("onlyreadable: Permission denied"))
        // An entry of PATH that isn't executable is passed over for the next one.
        #expect(await Self.compare("tool", in: path, environment: environment).output == "the second tool\n")
        // A relative PATH entry: the shell's to read.
        var relative = environment
        relative["PATH"] = "bin:/usr/bin:/bin"
        #expect(await Self.compare("selfsignal", in: path, environment: relative).result == .exited(138))
        #expect(await Self.compare("/bin/false", in: path, environment: environment).result == .exited(1))
    }

    /// Terminated by kiln (Ctrl-C, a timeout, a failure elsewhere), a program started directly ends
    /// with the signal, as the shell did when its group was signalled — no line, no 128 + N.
    @Test func aProgramKilnTerminatesEndsWithItsSignal() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let monitor = ProcessMonitor(terminationGrace: 30)
        let output = TaskOutput()
        let result = HostMutex<CommandResult?>(nil)
        let done = Gate()
        let handle = monitor.run(
            "sleep 1000",
            directory: fixture.directory.path,
            environment: fixture.environment,
            output: output
        ) { ending in
            result.withLock { $0 = ending }
            done.open()
        }
        handle.terminate()
        #expect(await waitForResult(within: 30) { done.wait(seconds: 30) } == true)
        #expect(result.withLock { $0 } == .signaled(SIGTERM))
        #expect(output.text == "")
    }

    @Test func aProgramEndedByASignalIsReportedAsTheShellReportsIt() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let path = fixture.directory.path
        let signaled = await Self.compare("selfsignal", in: path, environment: fixture.environment)
        #expect(signaled.result == .exited(128 + SIGUSR1))
        #expect(signaled.output == "User defined signal 1\n")
        // SIGPIPE: the status, without a line.
        let piped = await Self.compare("selfpipe", in: path, environment: fixture.environment)
        #expect(piped.result == .exited(128 + SIGPIPE))
        #expect(piped.output == "")
    }
}
