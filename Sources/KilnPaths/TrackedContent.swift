/// What a version-control index knows of the project's files: for a tracked file that is clean,
/// the id of its content, without reading it (git's blob id). The host's seam for git (KilnGit
/// implements it; the host doesn't import it), passed to ``IncrementalState``.
///
/// Threading: implementations are safe to call from any thread, concurrently.
public protocol TrackedContent: Sendable {
    /// The content id the index records for `path` (relative to the project root), when the
    /// file's status is `status` — the status the index recorded, and not so recent that the file
    /// could have changed since without its status showing it. `nil` otherwise: untracked,
    /// modified, or racily clean.
    func contentID(of path: String, status: FileSignature) -> ContentHash?

    /// The same id computed from the file's bytes (`file` is absolute), for a file whose record
    /// holds an id from the index but that the index no longer vouches for. `nil` when it can't
    /// be read.
    func computeContentID(of file: String) -> ContentHash?
}
