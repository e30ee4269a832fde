/// A place in a Taskfile: file, line and column (both 1-based).
///
/// Threading: a value type; safe to pass between threads.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The Taskfile's path, as the user named it or as it was discovered.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column.
    public var column: Int

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`, the form editors and terminals turn into links.
    public var description: String { "\(file):\(line):\(column)" }
}
