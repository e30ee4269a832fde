import KilnHost
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// The file lists `kiln hook` hands the `kiln run` it starts: the changed files (absolute, for
/// `--changed-files-from`) and the hook's files (relative, for `{{.staged_files}}` and the
/// commands' `KILN_HOOK_FILES_FROM`). Each is a file of this hook's own under `.kiln/hooks/`,
/// made with `mkstemp` (`O_EXCL`, mode 0600: never an existing file or link, never readable by
/// others) and removed when the run ends, so no list is left behind and none has a name another
/// user could guess and plant. The files are never passed in the environment or on the command
/// line, where 100,000 paths would fail with "Argument list too long"; `KILN_HOOK_FILES` is set
/// as well only when the list is short enough to be safe there (64 KiB).
///
/// Threading: used by one thread.
struct HookFileLists {
    /// The longest `KILN_HOOK_FILES` set in the environment.
    static let environmentLimit = 64 * 1024

    /// The changed files' list.
    let changed: String
    /// The hook files' list.
    let hookFiles: String

    /// Writes both lists.
    ///
    /// - Throws: ``Failure`` naming the file and the system's reason.
    init(root: String, changed: [String], hookFiles: [String]) throws(Failure) {
        let kiln = KilnDirectory(root: root)
        let made = kiln.createHooks()
        if made != 0 { throw Failure(path: kiln.hooks, reason: String(cString: strerror(made))) }
        Self.removeAbandoned(in: kiln.hooks)
        self.changed = try Self.write(changed, in: kiln.hooks)
        do {
            self.hookFiles = try Self.write(hookFiles, in: kiln.hooks)
        } catch {
            unlink(self.changed)
            throw error
        }
        let joined = hookFiles.joined(separator: "\n")
        if joined.utf8.count <= Self.environmentLimit {
            setenv("KILN_HOOK_FILES", joined, 1)
        } else {
            unsetenv("KILN_HOOK_FILES")
        }
        setenv("KILN_HOOK_FILES_FROM", self.hookFiles, 1)
    }

    /// Runs `argv` (with this process's environment) and waits for it; its exit status, or
    /// 128 + the signal that ended it. Ctrl-C reaches the run (it shares the terminal's process
    /// group), which stops cleanly; this process ignores it meanwhile, so it is there to remove
    /// the lists. With a `view`, the run sees its staged versions in place (``StagedView``).
    func run(_ argv: [String], view: StagedView? = nil) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
        }
        var pid = pid_t()
        if let view {
            switch System.spawn(argv, showing: view.bindings) {
            case .success(let child): pid = child
            case .failure(let failure):
                System.writeError(
                    "kiln hook: partly staged files need a private view to show the tasks their staged version, and \(failure); "
                        + "stage or stash the rest of those files, or commit with KILN_SKIP_HOOKS=1\n"
                )
                return 1
            }
        } else {
            let pointers = argv.map { strdup($0) } + [nil]
            defer { for pointer in pointers { free(pointer) } }
            let spawned = posix_spawn(&pid, argv[0], nil, &attributes, pointers, environ)
            guard spawned == 0 else {
                System.writeError("kiln hook: can't run \(argv[0]): \(String(cString: strerror(spawned)))\n")
                return 1
            }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return 1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Removes both lists.
    func remove() {
        unlink(changed)
        unlink(hookFiles)
    }

    private static func write(_ paths: [String], in directory: String) throws(Failure) -> String {
        var template = Array((directory + "/files-\(getpid())-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard descriptor >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let failure = Array(paths.joined(separator: "\n").utf8).withUnsafeBytes { Files.writeAll(descriptor, $0) }
        guard failure == 0 else {
            unlink(path)
            throw Failure(path: path, reason: String(cString: strerror(failure)))
        }
        return path
    }

    /// Removes what hooks killed before they could clean up left (`files-PID-*` lists and
    /// `staged-PID-*` directories, ``StagedView``) when their process is gone.
    static func removeAbandoned(in hooks: String) {
        for name in names(in: hooks) where name.hasPrefix("files-") || name.hasPrefix("staged-") {
            let fields = name.split(separator: "-")
            guard fields.count == 3, let pid = pid_t(fields[1]), !isAlive(pid) else { continue }
            let path = hooks + "/" + name
            if name.hasPrefix("files-") {
                unlink(path)
            } else {
                StagedView(bindings: [], directory: path).remove()
            }
        }
    }

    /// Whether `pid` is a process that hasn't ended (a zombie has).
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? Files.readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else {
            return true
        }
        return stat[stat.index(after: close)...].dropFirst().first != "Z"
    }

    /// The names in a directory (not `.` and `..`).
    static func names(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// A list that couldn't be written.
    struct Failure: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "can't write the hook's file list \(path): \(reason)" }
    }
}
