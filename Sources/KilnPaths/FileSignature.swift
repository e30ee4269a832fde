#if canImport(Glibc)
    import Glibc
#endif

/// What `stat` says of a file that changes whenever its content can: device, inode, size, and
/// modification and status-change times to the nanosecond. **The one stat signature** kiln
/// compares: the stat cache of file hashes, the up-to-date snapshot and the hook plans all keep
/// this, and all trust it by one rule, ``isSettled(at:)``.
///
/// Threading: a value type.
public struct FileSignature: Hashable, Sendable {
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

    /// A signature from its parts.
    public init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, changed: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.changed = changed
    }

    /// File times come from the kernel's coarse clock, a few milliseconds per tick, so a file
    /// written again within a tick of being looked at can keep its signature while its content
    /// changes. A signature is trusted only when the file's mtime is more than this before the
    /// moment it was looked at (git's "racily clean" entries, with a margin for the tick).
    public static let racyWindow: Int64 = 50_000_000

    /// Whether a file seen with this signature at `seenAt` (``now()``) can be trusted to have
    /// the content seen then while the signature stays the same: it was last modified more than
    /// ``racyWindow`` before. **The one racy-file rule.**
    public func isSettled(at seenAt: Int64) -> Bool {
        seenAt - modified > Self.racyWindow
    }

    /// The signature of the file at `path` (symbolic links followed), `nil` when it doesn't exist.
    public static func of(_ path: String) -> FileSignature? {
        of(path, relativeTo: AT_FDCWD)
    }

    /// The signature of `path`, resolved against the directory open as `directory` when relative
    /// (fewer components for the kernel to walk than the absolute path, and no string to build).
    /// Without `followingLinks`, a link at `path` is described itself (`lstat`).
    public static func of(_ path: String, relativeTo directory: Int32, followingLinks: Bool = true) -> FileSignature? {
        var info = stat()
        // `withCString`: a short path (15 bytes or fewer, kept in the string itself) passed as is
        // would be copied to the heap for the call, 20k times in a look at a snapshot.
        let status = path.withCString { fstatat(directory, $0, &info, followingLinks ? 0 : AT_SYMLINK_NOFOLLOW) }
        guard status == 0 else { return nil }
        return FileSignature(
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        )
    }

    /// The real-time clock now, ns since the epoch (the clock file times are on).
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
