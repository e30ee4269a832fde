import CKilnHost
import KilnPaths
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// go-task's dynamic variables (`vars: {NOW: {sh: date}}`): the command's standard output, one
/// trailing newline removed, run once per distinct command in a load (go-task's cache is keyed on
/// the command text too).
///
/// A Taskfile with one is loaded afresh on every run — its values can change between runs — and
/// the values count in the signatures of the jobs whose commands use them, like any variable's.
///
/// Each command runs in a process group of its own, which the guardian ends if kiln dies, and
/// which ``LoadInterruption`` signals when kiln is interrupted; once it has been, no command starts.
///
/// Threading: one instance per load, used by its thread.
final class DynamicVariables {
    private var results: [String: Result<String, Failure>] = [:]
    private let interruption: LoadInterruption?

    /// Variables whose commands stop when `interruption` comes (`nil`: only by themselves).
    init(interruption: LoadInterruption?) {
        self.interruption = interruption
    }
    /// The largest output kept: past it the command fails (a variable is text for a command line).
    static let outputLimit = 1 << 20

    /// Why a command gave no value.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The value of `command` run by `/bin/sh -c` in `directory` with `environment`.
    func value(of command: String, directory: String, environment: [String: String]) -> Result<String, Failure> {
        if let known = results[command] { return known }
        let result = Self.run(command, directory: directory, environment: environment, interruption: interruption)
        results[command] = result
        return result
    }

    static func run(
        _ command: String,
        directory: String,
        environment: [String: String],
        interruption: LoadInterruption? = nil
    ) -> Result<String, Failure> {
        if let signal = interruption?.signal {
            return .failure(Failure(description: "not started: kiln was interrupted (signal \(signal))"))
        }
        var pipe: [Int32] = [-1, -1]
        guard ckiln_pipe_cloexec(&pipe) == 0 else {
            return .failure(Failure(description: "can't make a pipe: \(String(cString: strerror(errno)))"))
        }
        let entries = environment.map { "\($0.key)=\($0.value)" }
        var pointers: [UnsafeMutablePointer<CChar>?] = entries.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        var pid: pid_t = 0
        let directoryToUse = Files.isDirectory(directory) ? directory : "/"
        let status = ckiln_spawn_shell_capturing(
            CommandShell.path(for: command),
            command,
            directoryToUse,
            &pointers,
            pipe[1],
            &pid
        )
        close(pipe[1])
        guard status == 0 else {
            close(pipe[0])
            return .failure(Failure(description: "can't start /bin/sh: \(String(cString: strerror(status)))"))
        }
        _ = ckiln_guardian_note(pid, 1)
        interruption?.started(pid)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var overflow = false
        while true {
            let count = read(pipe[0], &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            if output.count + count > outputLimit { overflow = true } else { output += buffer[..<count] }
        }
        close(pipe[0])
        // Waited for unreaped first: until neither the interrupt nor the guardian can signal the
        // group any more, the shell stays a zombie, so the group's id stays its own.
        var exited = siginfo_t()
        while waitid(P_PID, id_t(pid), &exited, WEXITED | WNOWAIT) < 0, errno == EINTR {}
        interruption?.finished(pid)
        _ = ckiln_guardian_note(pid, 0)
        var exit: Int32 = 0
        while waitpid(pid, &exit, 0) < 0, errno == EINTR {}
        if overflow { return .failure(Failure(description: "its output is over kiln's limit of \(outputLimit) bytes")) }
        // WIFEXITED/WEXITSTATUS, WIFSIGNALED/WTERMSIG.
        if exit & 0x7F != 0 { return .failure(Failure(description: "killed by signal \(exit & 0x7F)")) }
        let code = (exit >> 8) & 0xFF
        if code != 0 { return .failure(Failure(description: "exit status \(code)")) }
        var text = String(decoding: output, as: UTF8.self)
        if text.hasSuffix("\r\n") {
            text.removeLast()
        } else if text.hasSuffix("\n") {
            text.removeLast()
        }
        return .success(text)
    }
}
