import CKilnHost
import KilnPaths
import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs commands with `posix_spawn` and watches all of them from one thread with epoll: each
/// child's output pipe and its pidfd. A running command therefore holds no pool thread.
///
/// Each command runs as `/bin/sh -c` (or bash: ``CommandShell``) in a process group of its own,
/// so terminating it reaches everything it started. A command that isn't interactive and is one
/// simple command (``CommandShell/directWords(_:)``) starts without the shell, as the shell would
/// start it; if a signal ends it, the monitor reports what the shell would have: its line
/// (`Segmentation fault`) in the output and exit status 128 + the signal. Output is read as it
/// arrives; the completion runs when the process has exited and its output has reached
/// end-of-file (or 200 ms after the exit, if a background grandchild keeps the pipe open).
///
/// The monitor can also watch a signalfd (``watchTerminationSignals(descriptor:_:)``), so Ctrl-C is
/// handled on its thread.
///
/// Threading: every member is safe from any thread. `@unchecked Sendable`: `children` is guarded by
/// its mutex; the epoll descriptor is only used through thread-safe system calls.
public final class ProcessMonitor: CommandRunner, @unchecked Sendable {
    private struct Child {
        var pid: pid_t
        var pidDescriptor: Int32
        var outputDescriptor: Int32
        var output: TaskOutput
        var completion: @Sendable (CommandResult) -> Void
        /// Started without the shell (``CommandShell/directWords(_:)``).
        var startedDirectly: Bool
        var result: CommandResult?
        /// The process dumped core (for the shell's `(core dumped)`).
        var dumpedCore = false
        var exitedAt: UInt64 = 0
        var outputClosed = false
        var killAt: UInt64?
        /// ``terminate(token:)`` sent SIGTERM (and maybe SIGKILL since).
        var terminated = false
        /// The monitor thread is reaping the shell: too late to terminate it.
        var reaping = false
        /// The shell exited after it was terminated. It is left a zombie — so its process id, the
        /// id of its process group, can't be reused — until the rest of the group is killed too.
        var exitedAfterTermination = false
    }

    private let epoll: Int32
    private let children = HostMutex<(next: UInt64, byToken: [UInt64: Child])>((1, [:]))
    private let signalHandler = HostMutex<(descriptor: Int32, handler: (@Sendable (Int32) -> Void)?)>((-1, nil))
    private static let signalToken: UInt64 = 0
    /// Seconds between SIGTERM and SIGKILL.
    public let terminationGrace: Double
    /// Whether exits are watched through pidfds (otherwise polled).
    private let usePidDescriptors: Bool
    /// Set once a child has no pidfd: only then does the loop poll (see ``reapWithoutPidDescriptors()``).
    private let someChildPolled = Atomic<Bool>(false)
    /// Whether simple commands start without the shell.
    private let startsSimpleCommandsDirectly: Bool

    /// Creates a monitor and starts its thread.
    ///
    /// The thread keeps the monitor alive for the rest of the process (it waits on the monitor's
    /// epoll descriptor forever): a monitor is made once per process. An unowned reference here
    /// once crashed `kiln list` at exit, when the monitor was freed under its running thread.
    ///
    /// - Parameters:
    ///   - terminationGrace: Seconds a terminated command gets before SIGKILL.
    ///   - usePidDescriptors: Watch exits through pidfds (the default). `false` polls instead, as
    ///     kiln does where `pidfd_open` fails; for tests of that path.
    ///   - startsSimpleCommandsDirectly: Start a simple command without the shell (the default).
    ///     `false` starts every command with the shell; for tests that compare the two.
    public init(terminationGrace: Double = 2, usePidDescriptors: Bool = true, startsSimpleCommandsDirectly: Bool = true)
    {
        epoll = ckiln_epoll_create()
        self.terminationGrace = terminationGrace
        self.usePidDescriptors = usePidDescriptors
        self.startsSimpleCommandsDirectly = startsSimpleCommandsDirectly
        System.startThread { [self] in self.loop() }
    }

    /// Starts the guardian that kills the commands' process groups when kiln ends, if it isn't
    /// running yet; the first command starts it otherwise. It is a fork, and after a fork every
    /// page this process had is copy-on-write: call this while the heap is small, before a run
    /// loads its Taskfile and plans (a run that forked it at its first command, its plan built,
    /// took a page fault and a copy for each page it then wrote: 11k of them in a 10k-task run).
    ///
    /// Threading: any thread; the guardian is started once.
    public static func startGuardian() {
        _ = ckiln_guardian_start()
    }

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread it starts later,
    /// and returns a signalfd that reads them (or -1). Call it first thing in `main`, before any
    /// other thread exists — a thread started earlier would still receive them and die.
    public static func blockTerminationSignals() -> Int32 {
        ckiln_block_termination_signals()
    }

    /// Calls `handler` on the monitor thread for each signal read from `descriptor` (made by
    /// ``blockTerminationSignals()``).
    public func watchTerminationSignals(descriptor: Int32, _ handler: @escaping @Sendable (Int32) -> Void) {
        guard descriptor >= 0 else { return }
        signalHandler.withLock { $0 = (descriptor, handler) }
        _ = ckiln_epoll_add(epoll, descriptor, Self.signalToken)
    }

    /// Starts a command; see ``CommandRunner/run(_:directory:environment:output:completion:)``.
    public func run(
        _ command: String,
        directory: String,
        environment: [String: String],
        output: TaskOutput,
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand {
        start(
            command,
            directory: directory,
            environment: environment,
            output: output,
            terminal: nil,
            completion: completion
        )
    }

    /// Starts an interactive command; see
    /// ``CommandRunner/runInteractive(_:directory:environment:completion:)``. Its output pipe
    /// stays kiln's (already at end-of-file): the process's exit ends it.
    public func runInteractive(
        _ command: String,
        directory: String,
        environment: [String: String],
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand {
        // The terminal is handed over only when it is kiln's to give: standard input is one,
        // and kiln's process group is in its foreground (not `kiln run … &`).
        let terminal: Int32 = ckiln_owned_terminal()
        let finish: @Sendable (CommandResult) -> Void = { result in
            if terminal >= 0 { _ = ckiln_take_terminal(terminal) }
            completion(result)
        }
        return start(
            command,
            directory: directory,
            environment: environment,
            output: TaskOutput(),
            terminal: terminal,
            completion: finish
        )
    }

    /// Starts `command`: its output into `output` — or, with `terminal` set (-1: no terminal to
    /// give), kiln's own standard streams.
    private func start(
        _ command: String,
        directory: String,
        environment: [String: String],
        output: TaskOutput,
        terminal: Int32?,
        completion: @escaping @Sendable (CommandResult) -> Void
    ) -> RunningCommand {
        var pipeEnds: [Int32] = [0, 0]
        guard ckiln_pipe_cloexec(&pipeEnds) == 0 else {
            completion(.failedToStart("pipe: \(String(cString: strerror(errno)))"))
            return RunningCommand {}
        }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        var pid: pid_t = 0
        var startedDirectly = false
        let status = withEnvironmentPointers(environment) { envp -> Int32 in
            if terminal == nil, startsSimpleCommandsDirectly, let words = CommandShell.directWords(command),
                withCStrings(words, { ckiln_spawn_direct($0, directory, envp, writeEnd, &pid) }) == 0
            {
                startedDirectly = true
                return 0
            }
            if let terminal {
                return ckiln_spawn_shell_interactive(
                    CommandShell.path(for: command),
                    command,
                    directory,
                    envp,
                    terminal,
                    &pid
                )
            }
            return ckiln_spawn_shell(CommandShell.path(for: command), command, directory, envp, writeEnd, &pid)
        }
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            var reason = String(cString: strerror(status))
            if status == ENOENT { reason += " (does the directory \(directory) exist?)" }
            completion(.failedToStart(reason))
            return RunningCommand {}
        }
        // Its group dies with kiln, however kiln ends (see ckiln_guardian_note).
        _ = ckiln_guardian_note(pid, 1)
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        let pidDescriptor = usePidDescriptors ? ckiln_pidfd_open(pid) : -1
        if pidDescriptor < 0 { someChildPolled.store(true, ordering: .relaxed) }
        let token = children.withLock { children -> UInt64 in
            let token = children.next
            children.next += 1
            children.byToken[token] = Child(
                pid: pid,
                pidDescriptor: pidDescriptor,
                outputDescriptor: readEnd,
                output: output,
                completion: completion,
                startedDirectly: startedDirectly
            )
            return token
        }
        // Tokens: output pipe = 2·token, pidfd = 2·token + 1 (0 is the signalfd).
        _ = ckiln_epoll_add(epoll, readEnd, token * 2)
        if pidDescriptor >= 0 { _ = ckiln_epoll_add(epoll, pidDescriptor, token * 2 + 1) }
        return RunningCommand { [weak self] in self?.terminate(token: token) }
    }

    /// Terminates every running command (SIGTERM now, SIGKILL after the grace period).
    public func terminateAll() {
        let tokens = children.withLock { Array($0.byToken.keys) }
        for token in tokens { terminate(token: token) }
    }

    /// Kills every running command's process group now (SIGKILL), without the grace period —
    /// for a second Ctrl-C. Each completion still runs once its command is gone.
    public func killAll() {
        let groups = children.withLock { children -> [pid_t] in
            var groups: [pid_t] = []
            for (token, var child) in children.byToken where child.result == nil && !child.reaping {
                child.terminated = true
                if child.exitedAfterTermination {
                    child.killAt = 0  // `completeFinished` kills the rest of the group and reaps the shell
                } else {
                    child.killAt = nil
                    groups.append(child.pid)
                }
                children.byToken[token] = child
            }
            return groups
        }
        // Safe outside the lock: a terminated shell is left unreaped, so its group id stays its own.
        for group in groups { _ = killpg(group, SIGKILL) }
    }

    /// The number of commands still running.
    public var runningCount: Int { children.withLock { $0.byToken.count } }

    /// Sends SIGTERM to the command's process group and schedules SIGKILL after the grace period.
    /// Whatever the group still holds once the shell has exited — a grandchild that ignores
    /// SIGTERM — is killed when the group's output ends or the grace period is over, whichever
    /// comes first, before the command completes: terminating a command leaves nothing behind.
    private func terminate(token: UInt64) {
        let pid = children.withLock { children -> pid_t? in
            guard var child = children.byToken[token], child.result == nil, !child.reaping,
                !child.exitedAfterTermination
            else { return nil }
            child.terminated = true
            child.killAt = Self.now() + UInt64(terminationGrace * 1e9)
            children.byToken[token] = child
            return child.pid
        }
        if let pid { _ = killpg(pid, SIGTERM) }
    }

    // MARK: The monitor thread

    private func loop() {
        var tokens = [UInt64](repeating: 0, count: 64)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = tokens.withUnsafeMutableBufferPointer {
                ckiln_epoll_wait(epoll, $0.baseAddress, 64, nextTimeout())
            }
            for index in 0..<max(0, Int(count)) {
                let token = tokens[index]
                if token == Self.signalToken {
                    handleSignal()
                } else if token % 2 == 0 {
                    readOutput(token: token / 2, buffer: &buffer)
                } else {
                    reap(token: token / 2)
                }
            }
            reapWithoutPidDescriptors()
            completeFinished()
        }
    }

    private func handleSignal() {
        let (descriptor, handler) = signalHandler.withLock { ($0.descriptor, $0.handler) }
        while case let signal = ckiln_read_signal(descriptor), signal != 0 { handler?(signal) }
    }

    private func readOutput(token: UInt64, buffer: inout [UInt8]) {
        guard
            let (descriptor, output) = children.withLock({ children in
                children.byToken[token].map { ($0.outputDescriptor, $0.output) }
            })
        else { return }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                output.append(buffer[0..<count])
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                _ = ckiln_epoll_remove(epoll, descriptor)
                close(descriptor)
                children.withLock { $0.byToken[token]?.outputClosed = true }
            }
            return
        }
    }

    /// Where `pidfd_open` isn't available (kernels before 5.3, some sandboxes, valgrind), a
    /// child's exit makes no event: such children are polled (`waitpid` with `WNOHANG`) on every
    /// turn of the loop, which then wakes at least every ``pollInterval`` while one runs.
    private func reapWithoutPidDescriptors() {
        guard someChildPolled.load(ordering: .relaxed) else { return }
        let polled = children.withLock { children in
            children.byToken.compactMap { token, child in
                child.pidDescriptor < 0 && child.result == nil && !child.reaping && !child.exitedAfterTermination
                    ? (token, child.pid, child.terminated) : nil
            }
        }
        for (token, pid, terminated) in polled {
            if terminated {
                // Noticed without reaping it (`WNOWAIT`): a terminated shell stays a zombie.
                var info = siginfo_t()
                guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
                    info._sifields._sigchld.si_pid == pid
                else { continue }
            }
            reap(token: token)
        }
    }

    /// How often children without a pidfd are polled, in ms.
    private static let pollInterval: Int32 = 10

    private func reap(token: UInt64) {
        guard
            let (pid, pidDescriptor, terminated) = children.withLock({ children -> (pid_t, Int32, Bool)? in
                guard var child = children.byToken[token] else { return nil }
                // Decided under the lock: either `terminate` already ran, or it never will.
                if child.terminated {
                    child.exitedAfterTermination = true
                    child.exitedAt = Self.now()
                } else {
                    child.reaping = true
                }
                children.byToken[token] = child
                return (child.pid, child.pidDescriptor, child.terminated)
            })
        else { return }
        if terminated {
            // Reaped in `completeFinished`, after the rest of the group is killed.
            if pidDescriptor >= 0 {
                _ = ckiln_epoll_remove(epoll, pidDescriptor)
                close(pidDescriptor)
            }
            return
        }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        guard reaped == pid else {
            children.withLock { $0.byToken[token]?.reaping = false }
            return
        }
        _ = ckiln_guardian_note(pid, 0)
        if pidDescriptor >= 0 {
            _ = ckiln_epoll_remove(epoll, pidDescriptor)
            close(pidDescriptor)
        }
        let result: CommandResult = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
        children.withLock { children in
            children.byToken[token]?.result = result
            children.byToken[token]?.dumpedCore = status & 0x80 != 0
            children.byToken[token]?.exitedAt = Self.now()
        }
    }

    /// Completes children that exited and whose output ended (or whose grace ran out); sends
    /// SIGKILL to terminated children past their grace.
    private func completeFinished() {
        let now = Self.now()
        var done: [Child] = []
        var kill: [pid_t] = []
        var killAndReap: [Child] = []
        children.withLock { children in
            for (token, child) in children.byToken {
                if child.exitedAfterTermination {
                    if child.outputClosed || now >= child.killAt ?? 0 {
                        killAndReap.append(child)
                        children.byToken[token] = nil
                    }
                } else if child.result != nil, child.outputClosed || now - child.exitedAt > 200_000_000 {
                    done.append(child)
                    children.byToken[token] = nil
                } else if child.result == nil, let killAt = child.killAt, now >= killAt {
                    kill.append(child.pid)
                    children.byToken[token]?.killAt = nil
                }
            }
        }
        for pid in kill { _ = killpg(pid, SIGKILL) }
        for var child in killAndReap {
            // The shell is a zombie, so the group's id is still its own: nothing else can be hit.
            _ = killpg(child.pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(child.pid, &status, 0) < 0, errno == EINTR {}
            _ = ckiln_guardian_note(child.pid, 0)
            child.result = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
            done.append(child)
        }
        for child in done {
            if !child.outputClosed {
                _ = ckiln_epoll_remove(epoll, child.outputDescriptor)
                close(child.outputDescriptor)
            }
            var result = child.result ?? .exited(-1)
            if child.startedDirectly, !child.terminated, case .signaled(let signal) = result {
                // Not kiln's doing (kiln signals the whole group, which took the shell with it):
                // the shell would have outlived it, said so (not for SIGINT or SIGPIPE) and exited
                // with 128 + the signal.
                if signal != SIGINT, signal != SIGPIPE {
                    let name = strsignal(signal).map { String(cString: $0) } ?? "Signal \(signal)"
                    child.output.write(line: name + (child.dumpedCore ? " (core dumped)" : ""))
                }
                result = .exited(128 + signal)
            }
            child.completion(result)
        }
    }

    /// Milliseconds until the next deadline (output grace or SIGKILL), or -1 for none.
    private func nextTimeout() -> Int32 {
        let now = Self.now()
        var soonest: UInt64?
        var polling = false
        children.withLock { children in
            for child in children.byToken.values {
                if child.pidDescriptor < 0, child.result == nil, !child.exitedAfterTermination { polling = true }
                if child.exitedAfterTermination, !child.outputClosed {
                    soonest = min(soonest ?? .max, child.killAt ?? 0)
                }
                if child.result != nil, !child.outputClosed {
                    soonest = min(soonest ?? .max, child.exitedAt + 200_000_000)
                }
                if let killAt = child.killAt { soonest = min(soonest ?? .max, killAt) }
            }
        }
        guard let soonest else { return polling ? Self.pollInterval : -1 }
        let timeout = soonest <= now ? 0 : Int32(min((soonest - now) / 1_000_000 + 1, 1000))
        return polling ? min(timeout, Self.pollInterval) : timeout
    }

    private static func now() -> UInt64 { MonotonicClock.nanoseconds() }
}

/// Calls `body` with a NULL-terminated `KEY=VALUE` array.
///
/// Every string goes into one block, copied from its UTF-8 bytes: a string built by
/// interpolation and `strdup`ed per variable cost about 2,400 instructions a variable, 70,000
/// per command started with a usual environment.
func withEnvironmentPointers<Result>(
    _ environment: [String: String],
    _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
) -> Result {
    var size = 0
    for (key, value) in environment { size += key.utf8.count + value.utf8.count + 2 }
    let block = UnsafeMutablePointer<CChar>.allocate(capacity: max(size, 1))
    defer { block.deallocate() }
    let pointers = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: environment.count + 1)
    defer { pointers.deallocate() }
    var offset = 0
    var index = 0
    for (key, value) in environment {
        pointers[index] = block + offset
        index += 1
        offset = copyUTF8(key, to: block, at: offset)
        block[offset] = CChar(UInt8(ascii: "="))
        offset = copyUTF8(value, to: block, at: offset + 1)
        block[offset] = 0
        offset += 1
    }
    pointers[index] = nil
    return body(UnsafePointer(pointers))
}

/// Calls `body` with a NULL-terminated array of `strings` as C strings (all in one block).
func withCStrings<Result>(
    _ strings: [String],
    _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
) -> Result {
    let size = strings.reduce(0) { $0 + $1.utf8.count + 1 }
    let block = UnsafeMutablePointer<CChar>.allocate(capacity: max(size, 1))
    defer { block.deallocate() }
    let pointers = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: strings.count + 1)
    defer { pointers.deallocate() }
    var offset = 0
    for (index, string) in strings.enumerated() {
        pointers[index] = block + offset
        offset = copyUTF8(string, to: block, at: offset)
        block[offset] = 0
        offset += 1
    }
    pointers[strings.count] = nil
    return body(UnsafePointer(pointers))
}

/// Copies `string`'s UTF-8 bytes to `block` at `offset`; returns the offset after them.
private func copyUTF8(_ string: String, to block: UnsafeMutablePointer<CChar>, at offset: Int) -> Int {
    let copied = string.utf8.withContiguousStorageIfAvailable { bytes -> Int in
        if let base = bytes.baseAddress {
            UnsafeMutableRawPointer(block + offset).copyMemory(from: base, byteCount: bytes.count)
        }
        return offset + bytes.count
    }
    if let copied { return copied }
    var end = offset
    for byte in string.utf8 {
        block[end] = CChar(bitPattern: byte)
        end += 1
    }
    return end
}
