#if canImport(Glibc)
import Glibc
#endif

/// What `stat` says of a file that changes whenever its content can: device, inode, size, and
/// modification and status-change times to the nanosecond.
///
/// Threading: a value type.
public struct FileSignature: Sendable, Equatable {
    /// The device holding the file.
    public var device: UInt64
    /// Its inode: a file replaced by a rename has another.
    public var inode: UInt64
    /// Its size in bytes.
    public var size: Int64
    /// Modification time, ns since the epoch.
    public var modified: Int64
    /// Status-change time, ns since the epoch (any write, rename or `touch` moves it).
    public var changed: Int64

    /// The signature of the file at `path` (symbolic links followed), `nil` when it doesn't exist.
    public static func of(_ path: String) -> FileSignature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileSignature(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        )
    }

    /// The real-time clock now, ns since the epoch.
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
