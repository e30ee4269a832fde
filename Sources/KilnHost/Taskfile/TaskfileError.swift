import KilnPluginAPI

/// A mistake in a Taskfile: what, where, and what was expected.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskfileError: Error, Sendable, CustomStringConvertible {
    /// The class of mistake. Compare with the static members.
    ///
    /// Threading: a value type.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The file doesn't exist or can't be read.
        public static let unreadableFile = Code("unreadable-file")
        /// The YAML itself is malformed.
        public static let syntax = Code("syntax")
        /// A key the format doesn't have.
        public static let unknownKey = Code("unknown-key")
        /// A value of the wrong type (a map where a list was expected, …).
        public static let wrongType = Code("wrong-type")
        /// A value of the right type but not allowed (a width of 0, …).
        public static let invalidValue = Code("invalid-value")
        /// Two tasks with one name.
        public static let duplicateTask = Code("duplicate-task")
        /// `deps:` or the command line names a task that doesn't exist.
        public static let unknownTask = Code("unknown-task")
        /// Tasks that depend on each other in a circle.
        public static let dependencyCycle = Code("dependency-cycle")
        /// A template uses a variable no one defined.
        public static let undefinedVariable = Code("undefined-variable")
        /// A variable a task `requires` is not set, or not to an allowed value.
        public static let missingVariable = Code("missing-variable")
        /// A go-task feature kiln doesn't take yet (the message says what to do instead).
        public static let unsupported = Code("unsupported")
        /// A template that doesn't parse, calls an unknown function, or fails when rendered.
        public static let invalidTemplate = Code("invalid-template")
        /// A task claims a resource no one defined.
        public static let undefinedResource = Code("undefined-resource")
        /// `plugin:` names a task kind no plugin provides.
        public static let unknownTaskKind = Code("unknown-task-kind")
        /// A plugin could not be loaded (not found, insecure, not a plugin, another ABI, a kind
        /// another plugin has).
        public static let pluginFailed = Code("plugin-failed")
        /// The task kind rejected the task's `with:` configuration.
        public static let configurationRejected = Code("configuration-rejected")
        /// A task would write outside the project root.
        public static let outsideRoot = Code("outside-root")
        /// Files that include each other in a circle.
        public static let includeCycle = Code("include-cycle")
        /// Two tasks declare the same output.
        public static let duplicateOutput = Code("duplicate-output")
        /// The stable name, e.g. `unknown-key`.
        public var description: String { name }

        /// The codes a mistake reported when a task is planned may have
        /// (``TaskOptions/DeferredError``), by their stable names.
        static let deferrable: [String: Code] = Dictionary(
            uniqueKeysWithValues: [invalidTemplate, invalidValue, unknownTask, unsupported, unknownKey, wrongType].map {
                ($0.name, $0)
            }
        )
    }

    /// The class of mistake.
    public var code: Code
    /// What is wrong and what was expected.
    public var message: String
    /// Where, if the mistake has a place.
    public var location: SourceLocation?
    /// Further places involved (the other tasks of a cycle, the first definition of a duplicate).
    public var notes: [(message: String, location: SourceLocation?)]

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        at location: SourceLocation?,
        notes: [(message: String, location: SourceLocation?)] = []
    ) {
        self.code = code
        self.message = message
        self.location = location
        self.notes = notes
    }

    /// `file:line:column: error: message`, then one line per note.
    public var description: String {
        var lines = ["\(location.map { "\($0): " } ?? "")error: \(message)"]
        for note in notes { lines.append("\(note.location.map { "\($0): " } ?? "")note: \(note.message)") }
        return lines.joined(separator: "\n")
    }
}

/// Every mistake found in a Taskfile; nothing runs while there is one.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskfileErrors: Error, Sendable, CustomStringConvertible {
    /// The mistakes, in the order they appear.
    public var errors: [TaskfileError]
    /// One block per mistake.
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

extension TaskfileErrors {
    /// The errors in reading order: mistakes without a place first, then by file (in the order the
    /// files were read), line and column; equal places keep the order they were found in.
    init(sorting errors: [TaskfileError], fileOrder: [String]) {
        let order = Dictionary(fileOrder.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        func key(_ error: TaskfileError, _ found: Int) -> (Int, Int, Int, Int) {
            guard let location = error.location else { return (-2, 0, 0, found) }
            return (order[location.file] ?? -1, location.line, location.column, found)
        }
        self.init(
            errors: errors.enumerated().sorted { key($0.element, $0.offset) < key($1.element, $1.offset) }.map(
                \.element
            )
        )
    }
}

/// The closest candidate to `name`, if it is close enough to be a likely typo.
func suggestion(for name: String, among candidates: some Sequence<String>) -> String? {
    TextHelpers.closest(to: name, among: candidates)
}

extension TaskfileError {
    /// What kiln says of a variable a template prints that nothing sets, wherever it is found
    /// (when the Taskfile loads, or when a run plans the task): a likely typo among `known`, or
    /// the ways to set it. `task` is the task the command-line example names.
    static func undefinedVariableMessage(_ name: String, task: String?, known: some Sequence<String>) -> String {
        var message = "undefined variable '\(name)'"
        if let close = suggestion(for: name, among: known) {
            message += "; did you mean '\(close)'?"
        } else if TaskfileLoader.eachVariables.contains(name) {
            message += "; it exists only in tasks with 'each: sources'"
        } else {
            message +=
                "; define it under 'vars:', give it on the command line (kiln run \(task ?? "TASK") \(name)=…), or write {{.\(name) | default \"\"}} if it may be unset"
        }
        return message
    }
}
