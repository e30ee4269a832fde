#if canImport(Glibc)
    import Glibc
#endif

/// A job's failure in words: what the user reads under the failed task.
///
/// Threading: a value type.
public struct TaskFailure: Error, Sendable, CustomStringConvertible {
    /// The message.
    public var description: String

    /// A failure saying `description`.
    public init(_ description: String) {
        self.description = description
    }
}

/// File chores most task kinds share.
///
/// Threading: stateless; safe from any thread.
public enum TaskFiles {
    /// Creates the directories above `path` that don't exist yet (`mkdir -p` of its parent).
    ///
    /// - Throws: ``TaskFailure`` naming the directory that can't be created and why.
    public static func createParentDirectories(of path: String) throws(TaskFailure) {
        var parts = path.split(separator: "/").dropLast()
        var current = path.hasPrefix("/") ? "" : "."
        while !parts.isEmpty {
            current += "/" + parts.removeFirst()
            if mkdir(current, 0o755) != 0, errno != EEXIST {
                throw TaskFailure("can't create directory \(current): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// `path` as people read it in messages: relative to `root` when inside it.
    public static func shown(_ path: String, relativeTo root: String) -> String {
        path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }

    /// The system's message for the last failed call (`strerror(errno)`).
    public static var lastError: String { String(cString: strerror(errno)) }
}
