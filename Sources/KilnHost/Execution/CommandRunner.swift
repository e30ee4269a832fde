import KilnPluginAPI

/// Runs shell commands for the host — the seam between the scheduling code and real processes.
///
/// Threading: implementations are safe from any thread.
public protocol CommandRunner: Sendable {
    /// Starts `SHELL -c command`, the shell chosen by ``CommandShell``.
    ///
    /// - Parameters:
    ///   - command: The command line.
    ///   - directory: Where it runs.
    ///   - environment: Its complete environment.
    ///   - output: Receives its standard output and standard error, in arrival order.
    ///   - completion: Called once, on any thread, after the process exited and its output was read.
    /// - Returns: A handle to stop it.
    func run(
        _ command: String,
        directory: String,
        environment: [String: String],
        output: TaskOutput,
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand

    /// Starts `SHELL -c command` for go-task's `interactive: true`: it keeps kiln's standard
    /// input, output and error — and, when kiln has the terminal, gets it (its own process group
    /// in the foreground) until it exits. Its output isn't captured.
    ///
    /// - Parameters: As ``run(_:directory:environment:output:completion:)``, without `output`.
    /// - Returns: A handle to stop it.
    func runInteractive(
        _ command: String,
        directory: String,
        environment: [String: String],
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand
}

extension CommandRunner {
    /// A runner without a terminal to give runs the command as any other, its output dropped.
    public func runInteractive(
        _ command: String,
        directory: String,
        environment: [String: String],
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand {
        run(command, directory: directory, environment: environment, output: TaskOutput(), completion: completion)
    }
}

/// How a command ended.
///
/// Threading: a value type; safe to pass between threads.
public enum CommandResult: Sendable, Equatable {
    /// It exited with this status (0 is success).
    case exited(Int32)
    /// A signal killed it.
    case signaled(Int32)
    /// It couldn't be started; the text says why.
    case failedToStart(String)

    /// Whether it exited with status 0.
    public var succeeded: Bool { self == .exited(0) }

    /// For messages: "exit status 2", "killed by signal 15", …
    public var description: String {
        switch self {
        case .exited(let status): "exit status \(status)"
        case .signaled(let signal): "killed by signal \(signal)"
        case .failedToStart(let reason): "could not start: \(reason)"
        }
    }
}

/// A started command that can be stopped.
///
/// Threading: any thread.
public final class RunningCommand: Sendable {
    private let stop: @Sendable () -> Void

    /// Creates a handle whose ``terminate()`` calls `stop`.
    public init(terminate stop: @escaping @Sendable () -> Void) {
        self.stop = stop
    }

    /// Sends SIGTERM to the command's whole process group, then SIGKILL if it is still there
    /// after a grace period. The completion still runs once it is gone.
    public func terminate() { stop() }
}
