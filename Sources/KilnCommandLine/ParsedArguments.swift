/// What a command line gave one command: its options' values, its positional words, and the
/// words after `--`.
///
/// The accessors take an option's long name and check it against the command's spec: asking for
/// an option the command doesn't have, or a flag as a value, is a mistake in kiln, and stops it
/// at once rather than answering "not given" for ever.
///
/// Threading: a value type; `Sendable`.
public struct ParsedArguments: Sendable {
    /// The command's names from the root down: `["hooks", "install"]`.
    public let command: [String]
    let spec: CommandSpec
    /// Each option given, by long name: a flag's entries are empty strings, one per time.
    var given: [String: [String]] = [:]
    /// The positional words, in order (the command's captured rest included).
    public internal(set) var positionals: [String] = []
    /// The words after `--`, for a command that keeps them apart (``CommandSpec/keepsWordsAfterDashes``).
    public internal(set) var afterDashes: [String] = []

    init(command: [String], spec: CommandSpec) {
        self.command = command
        self.spec = spec
    }

    /// Whether the flag `long` was given.
    public func flag(_ long: String) -> Bool {
        check(long, .flag)
        return given[long] != nil
    }

    /// The value of the option `long`: the last one given, or `nil`.
    public func value(_ long: String) -> String? {
        check(long, .value)
        return given[long]?.last
    }

    /// Every value the repeatable option `long` was given, in order.
    public func values(_ long: String) -> [String] {
        check(long, .repeatable)
        return given[long] ?? []
    }

    /// The value of `long` as a whole number of at least `minimum`, or `nil` when not given.
    ///
    /// - Throws: A usage error naming the option when the value isn't such a number.
    public func integer(_ long: String, atLeast minimum: Int) throws(UsageError) -> Int? {
        guard let text = value(long) else { return nil }
        guard let number = Int(text) else {
            throw usageError("\(name(of: long)) takes a whole number, not '\(text)'")
        }
        guard number >= minimum else { throw usageError("\(name(of: long)) must be at least \(minimum)") }
        return number
    }

    /// The value of `long` as a number (`2`, `0.5`), or `nil` when not given.
    ///
    /// - Throws: A usage error naming the option when the value isn't a number.
    public func number(_ long: String) throws(UsageError) -> Double? {
        guard let text = value(long) else { return nil }
        guard let number = Double(text), number.isFinite else {
            throw usageError("\(name(of: long)) takes a number of seconds, not '\(text)'")
        }
        return number
    }

    /// The value of `long`, which must be one of `choices`, or `nil` when not given.
    ///
    /// - Throws: A usage error listing the choices.
    public func choice(_ long: String, among choices: [String]) throws(UsageError) -> String? {
        guard let text = value(long) else { return nil }
        guard choices.contains(text) else {
            let listed = choices.dropLast().joined(separator: ", ") + " or " + (choices.last ?? "")
            throw usageError("--\(long) must be \(listed), not '\(text)'")
        }
        return text
    }

    /// A usage error of this command, as a command's own check finds one.
    public func usageError(_ message: String) -> UsageError {
        UsageError(message, command: command)
    }

    /// `-j/--jobs`, or `--trace`: how an error names the option.
    private func name(of long: String) -> String {
        guard let short = spec.option(long: long)?.short else { return "--\(long)" }
        return "-\(short)/--\(long)"
    }

    private func check(_ long: String, _ kind: OptionSpec.Kind) {
        guard let option = spec.option(long: long) else {
            preconditionFailure("kiln \(command.joined(separator: " ")) has no option --\(long)")
        }
        precondition(option.kind == kind, "--\(long) is asked for as another kind of option than it is")
    }
}

/// A command line kiln can't take: an unknown option, a missing value, a word too many, or an
/// option's value that is out of range. Its exit status is 64 (`EX_USAGE`).
///
/// Threading: a value type; `Sendable`.
public struct UsageError: Error, Sendable, Equatable {
    /// What is wrong, naming the word or option.
    public let message: String
    /// The command it was found in, from the root down (empty for the root).
    public let command: [String]

    /// An error saying `message`, found in the command `command` names.
    public init(_ message: String, command: [String]) {
        self.message = message
        self.command = command
    }
}
