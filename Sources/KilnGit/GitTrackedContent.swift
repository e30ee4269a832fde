import KilnGitFormat
import KilnHost
import KilnPaths
import Synchronization

/// Hashing through git: the index's blob ids as the content hashes of a project's clean tracked
/// files, so kiln doesn't read them (``TrackedContent``, the host's seam).
///
/// A file is vouched for when its index entry is a regular file at stage 0 (not skip-worktree,
/// not intent-to-add) whose recorded status — size, mtime, ctime, inode, as git compares them —
/// is the file's, and whose mtime is older than the index file (else it is racily clean: it may
/// have changed within the same timestamp). The index is read on first use.
///
/// Threading: any member from any thread; the index is loaded once under a mutex.
public final class GitTrackedContent: TrackedContent {
    private let indexPath: String
    /// The project root relative to the working directory, with a trailing `/` (empty at the top).
    private let prefix: String
    private let loaded = HostMutex<(done: Bool, index: GitIndex?)>((false, nil))

    /// The view of the repository holding `projectRoot`, or `nil` outside git. Finds the index
    /// without reading it (a few `stat` calls).
    public init?(projectRoot: String) {
        guard let location = GitLayout.locate(from: projectRoot) else { return nil }
        let top = location.workingDirectory
        if projectRoot == top {
            prefix = ""
        } else if projectRoot.hasPrefix(top + "/") {
            prefix = String(projectRoot.dropFirst(top.count + 1)) + "/"
        } else {
            return nil
        }
        indexPath = location.indexPath
    }

    /// The view of a repository's index read already, for paths relative to its working tree's top.
    public init(index: GitIndex) {
        prefix = ""
        indexPath = index.path
        loaded.withLock { $0 = (true, index) }
    }

    private var index: GitIndex? {
        loaded.withLock { state in
            if !state.done { state = (true, try? GitIndex(path: indexPath)) }
            return state.index
        }
    }

    /// The index's blob id for `path` (relative to the project root), first 128 bits, when the
    /// index vouches for the file with `status`; `nil` otherwise.
    ///
    /// Threading: any thread, concurrently.
    public func contentID(of path: String, status: FileSignature) -> ContentHash? {
        guard let index, let entry = index.entry(for: prefix.isEmpty ? path : prefix + path),
            entry.mode & 0o170000 == 0o100000,
            !entry.skipsWorktree, !entry.isIntentToAdd
        else { return nil }
        func seconds(_ time: Int64) -> UInt32 { UInt32(truncatingIfNeeded: time / 1_000_000_000) }
        func nanoseconds(_ time: Int64) -> UInt32 { UInt32(truncatingIfNeeded: time % 1_000_000_000) }
        guard UInt32(truncatingIfNeeded: status.size) == entry.size,
            UInt32(truncatingIfNeeded: status.inode) == entry.inode,
            seconds(status.modified) == entry.modified.seconds,
            nanoseconds(status.modified) == entry.modified.nanoseconds,
            seconds(status.changed) == entry.changed.seconds, nanoseconds(status.changed) == entry.changed.nanoseconds,
            Int64(entry.modified.seconds) * 1_000_000_000 + Int64(entry.modified.nanoseconds) < index.modified
        else { return nil }
        let id = entry.id.prefix128
        return ContentHash(high: id.high, low: id.low)
    }

    /// The blob id git would give the file's bytes now (`git hash-object --no-filters`, computed
    /// here: no libgit2), first 128 bits; `nil` when it can't be read.
    ///
    /// Threading: any thread, concurrently.
    public func computeContentID(of file: String) -> ContentHash? {
        guard let id = GitObjectID.blob(ofFileAt: file)?.prefix128 else { return nil }
        return ContentHash(high: id.high, low: id.low)
    }
}
