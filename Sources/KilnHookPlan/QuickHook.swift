import KilnGitFormat
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// The launcher's answer to `kiln hook pre-commit` (and `commit-msg`) when a commit affects
/// nothing the hook runs — the common case, and the one a person waits for on every commit.
///
/// It reads only what that answer needs: the Taskfile's location, the saved ``HookPlan``, the git
/// index, and the few HEAD trees its cache-tree doesn't vouch for (``StagedChanges`` over
/// ``GitObjectDatabase``). Anything else — no current plan, something affected, a repository its
/// readers don't know, options on the command line — is handed to the full `kiln hook`, which
/// gives the same answers with the CLI, the Taskfile and libgit2 loaded, and saves a new plan.
///
/// Threading: runs on the caller's thread; call it once, from `main`.
public enum QuickHook {
    /// The hooks whose files are the staged ones, which this answers.
    static let stagedHooks: Set<String> = ["pre-commit", "commit-msg"]

    /// Whether this answers `hook` (when its plan is current).
    public static func answers(_ hook: String) -> Bool {
        stagedHooks.contains(hook)
    }

    /// The exit status of `kiln ARGUMENTS…` when this path can answer it (having printed what
    /// the full command would), or `nil` to run the full command.
    ///
    /// - Parameter arguments: The command line, the executable's name first.
    public static func answer(_ arguments: [String]) -> Int32? {
        // Only `kiln hook NAME [-- GIT-ARGUMENTS…]`, as the hook scripts call it: no options.
        guard arguments.count >= 3, arguments[1] == "hook", !arguments[2].hasPrefix("-"),
            arguments.count == 3 || arguments[3] == "--"
        else { return nil }
        let hook = arguments[2]
        if environment("KILN_SKIP_HOOKS") == "1" { return 0 }
        guard stagedHooks.contains(hook) else { return nil }
        let clock = PhaseClock(title: "quick hook")
        let status = answer(hook, clock: clock)
        if status != nil { clock.print() }  // else the full command prints its own
        return status
    }

    /// The quick answer for a staged-files hook, or `nil`.
    private static func answer(_ hook: String, clock: PhaseClock) -> Int32? {
        // No Taskfile here: nothing to run; a hook never blocks for that.
        guard let taskfile = TaskfileDiscovery.discover(from: currentDirectory()) else { return 0 }
        let slash = taskfile.lastIndex(of: "/")!
        let root = slash == taskfile.startIndex ? "/" : String(taskfile[..<slash])
        guard let plan = HookPlan.load(root: root, hook: hook), plan.taskfilePath == taskfile else { return nil }
        clock.mark("plan")
        if plan.tasks.isEmpty { return 0 }  // the hook maps no task
        guard let changed = GitLayout.locate(from: plan.root)?.stagedFiles() else { return nil }
        clock.mark("staged files")
        let (affected, count) = plan.affects(changed)
        clock.mark("affected")
        guard !affected else { return nil }
        let message = "kiln hook \(hook): nothing affected (\(count) changed file\(count == 1 ? "" : "s"))\n"
        _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        return 0
    }

    private static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
