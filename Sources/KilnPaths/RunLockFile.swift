#if canImport(Glibc)
    import Glibc
#endif

/// The project's run lock, `.kiln/lock`: held with `flock` by whoever reads or changes the
/// project's state as a run — the host's `ProjectLock` for a whole session, the launcher for a
/// no-op it answers from the snapshot — and holding the holder's process id, which another run
/// names when it finds the lock taken. Both take it here.
///
/// Threading: stateless; any thread. A descriptor it returns belongs to the caller.
package enum RunLockFile {
    /// Opens the lock file at `path` (creating it when `create`): its descriptor, or `-errno`.
    package static func open(_ path: String, create: Bool) -> Int32 {
        let descriptor = Glibc.open(
            path,
            O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0),
            0o644
        )
        return descriptor >= 0 ? descriptor : -errno
    }

    /// Takes the lock without waiting and writes this process's id into the file; `false` when
    /// another process holds it.
    package static func take(_ descriptor: Int32) -> Bool {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            return false
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        return true
    }

    /// Who holds the lock, as a run says it: `another kiln run (pid 123)`.
    package static func holder(_ descriptor: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        let pid = String(decoding: bytes.prefix(max(0, count)).prefix { $0 != 10 && $0 != 13 }, as: UTF8.self)
        return "another kiln run\(pid.isEmpty ? "" : " (pid \(pid))")"
    }

    /// Lets another run in, and closes the descriptor.
    package static func release(_ descriptor: Int32) {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
