/// A value from a Taskfile — the `with:` map of a plugin task, for instance — with the place it
/// came from, so that a plugin's validation error can point at the line to fix.
///
/// Scalars keep their text; ask for the type you expect with ``string``, ``integer``, ``double`` or
/// ``bool``, or use the throwing accessors (``requireString(_:)`` and friends), whose errors name
/// the location and what was expected.
///
/// Threading: a value type; safe to pass between threads.
public struct ConfigurationValue: Sendable, CustomStringConvertible {
    /// The shape of a value.
    public enum Kind: Sendable {
        /// A scalar, as written (quotes removed).
        case scalar(String)
        /// A sequence.
        case list([ConfigurationValue])
        /// A mapping, in the order written.
        case map([(key: String, keyLocation: SourceLocation, value: ConfigurationValue)])
        /// `null`, `~` or nothing.
        case null
    }

    /// The value.
    public var kind: Kind
    /// Where it starts in the Taskfile.
    public var location: SourceLocation

    /// Creates a value.
    public init(_ kind: Kind, at location: SourceLocation) {
        self.kind = kind
        self.location = location
    }

    /// The text of a scalar.
    public var string: String? {
        if case .scalar(let text) = kind { return text }
        return nil
    }

    /// A scalar read as an integer.
    public var integer: Int? { string.flatMap { Int($0) } }

    /// A scalar read as a floating-point number.
    public var double: Double? { string.flatMap { Double($0) } }

    /// A scalar read as a YAML boolean (`true`/`false`, `yes`/`no`, `on`/`off`).
    public var bool: Bool? {
        switch string?.lowercased() {
        case "true", "yes", "on": true
        case "false", "no", "off": false
        default: nil
        }
    }

    /// The items of a list.
    public var list: [ConfigurationValue]? {
        if case .list(let items) = kind { return items }
        return nil
    }

    /// The entries of a map.
    public var map: [(key: String, keyLocation: SourceLocation, value: ConfigurationValue)]? {
        if case .map(let entries) = kind { return entries }
        return nil
    }

    /// The value of `key` in a map.
    public subscript(key: String) -> ConfigurationValue? {
        map?.first { $0.key == key }?.value
    }

    /// A short description of the kind, for messages: "a string", "a list", …
    public var kindDescription: String {
        switch kind {
        case .scalar: "a scalar"
        case .list: "a list"
        case .map: "a map"
        case .null: "null"
        }
    }

    /// The value as YAML-ish text, for messages.
    public var description: String {
        switch kind {
        case .scalar(let text): text
        case .list(let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .map(let entries): "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .null: "null"
        }
    }

    // MARK: Validation helpers for plugins

    /// The scalar text, or an error at this value's location.
    public func requireString(_ what: String) throws(TaskConfigurationError) -> String {
        guard let string else { throw .init("\(what) must be a string, not \(kindDescription)", at: location) }
        return string
    }

    /// The integer, or an error at this value's location.
    public func requireInteger(_ what: String) throws(TaskConfigurationError) -> Int {
        guard let integer else { throw .init("\(what) must be an integer, not '\(description)'", at: location) }
        return integer
    }

    /// The number, or an error at this value's location.
    public func requireDouble(_ what: String) throws(TaskConfigurationError) -> Double {
        guard let double else { throw .init("\(what) must be a number, not '\(description)'", at: location) }
        return double
    }

    /// The boolean, or an error at this value's location.
    public func requireBool(_ what: String) throws(TaskConfigurationError) -> Bool {
        guard let bool else { throw .init("\(what) must be true or false, not '\(description)'", at: location) }
        return bool
    }

    /// A list of strings (a single string counts as a list of one), or an error.
    public func requireStrings(_ what: String) throws(TaskConfigurationError) -> [String] {
        if let string { return [string] }
        guard let list else { throw .init("\(what) must be a string or a list of strings", at: location) }
        var strings: [String] = []
        for item in list { strings.append(try item.requireString("each item of \(what)")) }
        return strings
    }

    /// Throws if a map has keys other than `allowed`, naming the first unknown key and its place.
    public func rejectUnknownKeys(_ allowed: Set<String>, in what: String) throws(TaskConfigurationError) {
        guard let map else { throw .init("\(what) must be a map, not \(kindDescription)", at: location) }
        for entry in map where !allowed.contains(entry.key) {
            throw .init(
                "unknown key '\(entry.key)' in \(what); expected one of: \(allowed.sorted().joined(separator: ", "))",
                at: entry.keyLocation
            )
        }
    }
}

/// A task's configuration was rejected: what is wrong and where.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskConfigurationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, and what was expected.
    public var message: String
    /// Where in the Taskfile.
    public var location: SourceLocation?

    /// Creates an error.
    public init(_ message: String, at location: SourceLocation?) {
        self.message = message
        self.location = location
    }

    /// `file:line:column: message`.
    public var description: String {
        guard let location else { return message }
        return "\(location): \(message)"
    }
}
