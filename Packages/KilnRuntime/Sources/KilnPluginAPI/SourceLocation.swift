/// A place in a Taskfile: file, line and column (both 1-based).
///
/// Threading: a value type; safe to pass between threads.
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    /// The Taskfile's path, as the user named it or as it was discovered.
    public var file: String
    // 32-bit storage: a large Taskfile holds many locations.
    private var storedLine: Int32
    private var storedColumn: Int32

    /// 1-based line.
    public var line: Int {
        get { Int(storedLine) }
        set { storedLine = Int32(clamping: newValue) }
    }

    /// 1-based column.
    public var column: Int {
        get { Int(storedColumn) }
        set { storedColumn = Int32(clamping: newValue) }
    }

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.storedLine = Int32(clamping: line)
        self.storedColumn = Int32(clamping: column)
    }

    /// `file:line:column`, the form editors and terminals turn into links.
    public var description: String { "\(file):\(line):\(column)" }
}
