#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (or SIGTERM) for the commands a Taskfile's load runs: its dynamic variables (`sh:`).
///
/// A load runs those commands itself, before any run exists to interrupt, each in a process group
/// of its own. ``interrupt(with:)`` passes the signal on to the group running now, and every
/// command the load would start afterwards fails at once instead: without it, a signal that came
/// between two commands (or before the first) was noticed only once the load had run them all,
/// and a SIGTERM sent to kiln alone never reached the command at all.
///
/// Threading: every member is safe from any thread; ``interrupt(with:)`` is meant for the thread
/// that reads the signals, the rest for the loading thread.
public final class LoadInterruption: Sendable {
    private struct State {
        /// The signal that interrupted the load, once one has.
        var signal: Int32?
        /// The process groups of the commands running now.
        var running = Set<pid_t>()
    }

    private let state = HostMutex(State())

    /// An interruption that hasn't happened.
    public init() {}

    /// Interrupts the load: sends `signal` to the process group of every command it runs now, and
    /// makes every command it would start fail instead.
    public func interrupt(with signal: Int32) {
        let groups = state.withLock { state -> [pid_t] in
            if state.signal == nil { state.signal = signal }
            return Array(state.running)
        }
        // Safe outside the lock: a group's leader is reaped only after ``finished(_:)``, so its id
        // isn't reused before then.
        for group in groups { _ = killpg(group, signal) }
    }

    /// The signal that interrupted the load, or `nil`.
    public var signal: Int32? { state.withLock { $0.signal } }

    /// A command started in process group `group`. If the load was interrupted before the group
    /// was recorded, the group gets the signal here, so no interrupt falls between the check and
    /// the spawn.
    func started(_ group: pid_t) {
        let signal = state.withLock { state -> Int32? in
            state.running.insert(group)
            return state.signal
        }
        if let signal { _ = killpg(group, signal) }
    }

    /// The command of process group `group` has ended; call before reaping its leader.
    func finished(_ group: pid_t) {
        _ = state.withLock { $0.running.remove(group) }
    }
}
