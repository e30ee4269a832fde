#if canImport(Glibc)
    import Glibc
#endif

/// A file with no name, for bytes a process keeps out of memory: a job's long output, or what a
/// run records for every job.
///
/// Threading: any thread (it holds no state).
public enum AnonymousFile {
    /// Opens a new anonymous file in `directory` for reading and writing: `O_TMPFILE`, never
    /// visible and gone with its descriptor even after a crash; where the file system lacks it,
    /// a file made with `mkstemp` and unlinked at once. Returns its descriptor (close-on-exec),
    /// or `nil` when neither can be made.
    ///
    /// Threading: any thread.
    public static func open(in directory: String) -> Int32? {
        // O_TMPFILE (Linux: __O_TMPFILE | O_DIRECTORY), which Glibc's module doesn't export.
        let temporaryFile: Int32 = 0o20_000_000 | O_DIRECTORY
        let anonymous = Glibc.open(directory, temporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        if anonymous >= 0 { return anonymous }
        var template = Array((directory + "/spill-XXXXXX").utf8CString)
        let named = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard named >= 0 else { return nil }
        _ = fcntl(named, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return named
    }
}
