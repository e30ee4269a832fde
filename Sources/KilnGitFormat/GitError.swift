/// A failure reading a repository — from this module's own readers or from libgit2 (whose
/// message is read with `git_error_last()` right after the failing call, on the same thread) —
/// or a repository that isn't there.
///
/// Threading: a value type.
public struct GitError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: Sendable, Equatable {
        /// The directory is not inside a git repository.
        case notARepository
        /// A revision (`--base`, `--head`) that doesn't name a commit.
        case unknownRevision
        /// An index this module's reader doesn't know (split, another version): libgit2 reads it
        /// instead.
        case unsupportedIndex
        /// A repository format this module's readers don't know (SHA-256 object ids, the reftable
        /// reference store, an object they can't find or decode): libgit2 reads it instead.
        case unsupportedRepository
        /// Any other failure.
        case failed
    }

    /// What kind of failure.
    public var code: Code
    /// What happened, for people.
    public var message: String
    /// The message.
    public var description: String { message }

    /// An error of kind `code` saying `message`.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}
