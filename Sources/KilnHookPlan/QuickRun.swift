import KilnGitFormat
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// The launcher's answer to `kiln run` (or `kiln`) when nothing changed since the last complete
/// run: what a person waits for after every save in a small project, where loading kiln's CLI
/// costs ten times the check.
///
/// It decides the way the full command does, with the same code: the run lock is taken, the
/// Taskfile cache's header says the Taskfiles and what their load read are the same
/// (``TaskfileCacheHeader``), and the up-to-date snapshot says every path it watches is
/// unchanged (``UpToDateSnapshot/noOp(root:taskfilePath:targets:requirementHolds:)``, the rule of
/// the full command's scan). Whatever it can't decide alone it hands to the full command, which
/// gives the same answer or runs: options on the command line (`--force`, `--json`…; only `-j`
/// is taken), `NAME=value` variables or `--`, a remote configured in the environment, a Taskfile
/// whose load read a special variable, a file hashed through git whose status moved (only the
/// git index can vouch for it), a task that watches, another run holding the lock, anything
/// changed. When a path changed, what its look found goes to the full command with it
/// (``UpToDateSnapshot/Handover``), which doesn't look again.
///
/// Threading: runs on the caller's thread; call it once, from `main`.
public enum QuickRun {
    /// What the launcher does with a command line (``answer(_:)``).
    ///
    /// Threading: a value type.
    package enum Answer: Equatable {
        /// Answered, having printed what the full command would: exit with this status.
        case answered(Int32)
        /// The full command runs, and a path the snapshot watches is known to have changed: it
        /// has work, and needn't look at the paths again (`kiln_cli_look_handed_over`, with the
        /// handover's bytes).
        case changeSeen(UpToDateSnapshot.Handover)
        /// The full command runs.
        case fullCommand
    }

    /// What to do with `kiln ARGUMENTS…`: answer it here, or run the full command.
    ///
    /// - Parameter arguments: The command line, the executable's name first.
    package static func answer(_ arguments: [String]) -> Answer {
        guard let targets = targets(arguments) else { return .fullCommand }
        // The remote settings (`KILN_REMOTE_…`) are checked by the full command even when it has
        // nothing to run.
        var variable = environ
        while let entry = variable.pointee {
            if strncmp(entry, "KILN_REMOTE_", 12) == 0 { return .fullCommand }
            variable += 1
        }
        let started = FileSignature.now()
        let clock = PhaseClock(title: "quick run")
        let jobs: Int
        switch look(targets: targets, clock: clock) {
        case .noOp(let snapshot) where !snapshot.watches: jobs = snapshot.jobCount
        case .changed(let handover): return .changeSeen(handover)
        default: return .fullCommand
        }
        let seconds = Double(FileSignature.now() - started) / 1e9
        var line = "kiln: done: 0 ran"
        if jobs > 0 { line += ", \(jobs) up to date" }
        line += " in \(formatDecimal(seconds, digits: 2)) s\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(1, $0.baseAddress, $0.count - 1) }
        clock.print()
        return .answered(0)
    }

    /// The targets of `kiln` or `kiln run TASK…`, or `nil` for any other command line: an option
    /// other than `-j` (the width of the cpu queue, which a no-op doesn't use), a `NAME=value`
    /// variable, `--`.
    static func targets(_ arguments: [String]) -> [String]? {
        guard arguments.count == 1 || arguments[1] == "run" else { return nil }
        var targets: [String] = []
        var words = arguments.dropFirst(2).makeIterator()
        while let word = words.next() {
            if word == "-j" || word == "--jobs" {
                guard let width = words.next(), isWidth(width) else { return nil }
            } else if word.hasPrefix("--jobs=") {
                guard isWidth(word.dropFirst(7)) else { return nil }
            } else if word.hasPrefix("-j") {
                guard isWidth(word.dropFirst(2)) else { return nil }
            } else if word.isEmpty || word.hasPrefix("-") || word.contains("=") {
                return nil
            } else {
                targets.append(word)
            }
        }
        return targets
    }

    /// Whether `text` is a width the full command accepts for `-j` (a whole number, at least 1).
    private static func isWidth(_ text: Substring) -> Bool {
        !text.isEmpty && text.count < 10 && text.allSatisfy { $0 >= "0" && $0 <= "9" } && Int(text)! >= 1
    }

    private static func isWidth(_ text: String) -> Bool { isWidth(Substring(text)) }

    /// What the snapshot says of a run of `targets` (``UpToDateSnapshot/Look``).
    private static func look(targets: [String], clock: PhaseClock) -> UpToDateSnapshot.Look {
        guard let taskfile = TaskfileDiscovery.discover(from: currentDirectory()) else { return .unknown }
        let slash = taskfile.lastIndex(of: "/")!
        let root = slash == taskfile.startIndex ? "/" : String(taskfile[..<slash])
        // As any run: one at a time. A run holding the lock is the full command's to report.
        let lock = RunLockFile.open(KilnDirectory(root: root).lock, create: false)
        guard lock >= 0 else { return .unknown }
        guard RunLockFile.take(lock) else {
            close(lock)
            return .unknown
        }
        defer { RunLockFile.release(lock) }
        clock.mark("lock")
        let look = UpToDateSnapshot.noOp(
            root: root,
            taskfilePath: taskfile,
            targets: targets,
            requirementHolds: requirementHolds
        )
        clock.mark("snapshot")
        return look
    }

    /// Whether something the Taskfile's load read besides its files is the same now: an
    /// environment variable, or the command line's variables (none here). A special variable
    /// (`CLI_ARGS`, `USER_WORKING_DIR`…) is the full command's to check.
    static func requirementHolds(_ key: String, _ valueHash: UInt64?) -> Bool {
        if key.hasPrefix("env:") {
            let value = getenv(String(key.dropFirst(4))).map { String(cString: $0) }
            return TaskfileCacheHeader.requirementHash(value) == valueHash
        }
        if key == "cli:variables" { return TaskfileCacheHeader.requirementHash("") == valueHash }
        return false
    }
}
