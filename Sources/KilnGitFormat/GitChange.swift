/// A path that changed, and how.
///
/// Threading: a value type.
public struct GitChange: Sendable, Hashable, CustomStringConvertible {
    /// How a path changed.
    public enum Kind: String, Sendable {
        case added, modified, deleted, renamed, typeChanged = "type changed", untracked
    }

    /// The path, relative to the repository's working directory.
    public var path: String
    /// How it changed.
    public var kind: Kind
    /// For a rename, the path it had before.
    public var oldPath: String?

    /// A change of `path`; `oldPath` for a rename.
    public init(path: String, kind: Kind, oldPath: String? = nil) {
        self.path = path
        self.kind = kind
        self.oldPath = oldPath
    }

    /// Both paths of a rename; the path otherwise.
    public var paths: [String] { oldPath.map { [$0, path] } ?? [path] }

    /// `kind path` (`renamed old → new`).
    public var description: String {
        oldPath.map { "\(kind.rawValue) \($0) → \(path)" } ?? "\(kind.rawValue) \(path)"
    }

    /// `changes` without repeats, sorted by path (then kind): the order every reader reports.
    public static func uniqueSorted(_ changes: [GitChange]) -> [GitChange] {
        var seen = Set<GitChange>()
        return changes.filter { seen.insert($0).inserted }.sorted {
            ($0.path, $0.kind.rawValue) < ($1.path, $1.kind.rawValue)
        }
    }
}
