/// One option of a command: a flag (`--json`), an option with a value (`--trace FILE`,
/// `--trace=FILE`), or one that may be given again and again (`--plugin-path DIR`, repeatable).
///
/// Threading: a value type; `Sendable`.
public struct OptionSpec: Sendable {
    /// What the option takes.
    public enum Kind: Sendable {
        /// No value: present or not.
        case flag
        /// One value; given twice, the last one counts (as ArgumentParser and Go's pflag do).
        case value
        /// One value each time, kept in order.
        case repeatable
    }

    /// The long name, without its dashes: `dry-run`.
    public let long: String
    /// The one-letter name, if any: `d` for `-d`.
    public let short: Character?
    /// Whether it takes a value, and how many times.
    public let kind: Kind
    /// One or more sentences for `--help`.
    public let help: String
    /// Whether the value may follow the letter directly, as in `-j4`.
    public let allowsJoinedValue: Bool
    /// Left out of `--help` (an option kiln passes itself, as `kiln hook` does to `kiln run`).
    public let isHidden: Bool

    private init(
        long: String,
        short: Character?,
        kind: Kind,
        help: String,
        allowsJoinedValue: Bool,
        isHidden: Bool
    ) {
        precondition(!long.isEmpty && !long.hasPrefix("-"), "an option's long name is given without dashes")
        self.long = long
        self.short = short
        self.kind = kind
        self.help = help
        self.allowsJoinedValue = allowsJoinedValue
        self.isHidden = isHidden
    }

    /// A flag: `--LONG`, and `-SHORT` when given.
    public static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .flag, help: help, allowsJoinedValue: false, isHidden: false)
    }

    /// An option with one value: `--LONG VALUE`, `--LONG=VALUE`, `-SHORT VALUE`, and `-SHORTVALUE`
    /// when `joined`.
    public static func value(
        _ long: String,
        short: Character? = nil,
        joined: Bool = false,
        help: String,
        hidden: Bool = false
    ) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .value, help: help, allowsJoinedValue: joined, isHidden: hidden)
    }

    /// An option that may be given more than once, each time with a value.
    public static func repeatable(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, kind: .repeatable, help: help, allowsJoinedValue: false, isHidden: false)
    }

    /// How `--help` and errors write it: `--trace <trace>`, `-j, --jobs <jobs>`.
    var synopsis: String {
        let value = kind == .flag ? "" : " <\(long)>"
        return (short.map { "-\($0), " } ?? "") + "--" + long + value
    }
}

/// A word of a command that is not an option: a task name, a hook's name.
///
/// Threading: a value type; `Sendable`.
public struct PositionalSpec: Sendable {
    /// How what it holds is named in `--help`: `tasks` is shown `<tasks>`.
    public let name: String
    /// One sentence for `--help`.
    public let help: String
    /// Takes every word left, not only one.
    public let isRepeated: Bool
    /// Must be given.
    public let isRequired: Bool
    /// Takes every word after it as it is, options and `--` included (`kiln hook NAME ARGS…`,
    /// whose arguments are git's).
    public let capturesRest: Bool

    /// Any number of words (none included).
    public static func many(_ name: String, help: String) -> PositionalSpec {
        PositionalSpec(name: name, help: help, isRepeated: true, isRequired: false, capturesRest: false)
    }

    /// Exactly one word.
    public static func one(_ name: String, help: String) -> PositionalSpec {
        PositionalSpec(name: name, help: help, isRepeated: false, isRequired: true, capturesRest: false)
    }

    /// Every word that follows, as it is.
    public static func rest(_ name: String, help: String) -> PositionalSpec {
        PositionalSpec(name: name, help: help, isRepeated: true, isRequired: false, capturesRest: true)
    }
}

/// What a command of the command line takes, and what `--help` says of it: its options, its
/// positional words, its subcommands.
///
/// One spec decides both what is accepted and what help shows, so the two never disagree.
///
/// Threading: a value type; `Sendable`.
public struct CommandSpec: Sendable {
    /// The word that names it on the command line: `run`.
    public let name: String
    /// One sentence: the first line of its help, and its line in its parent's list.
    public let abstract: String
    /// Paragraphs after the abstract (empty for none).
    public let discussion: String
    /// Its options, in the order `--help` lists them.
    public let options: [OptionSpec]
    /// In order; only the last may be repeated or capture the rest.
    public let positionals: [PositionalSpec]
    /// Whether the words after `--` are kept apart (``ParsedArguments/afterDashes``) rather than
    /// taken as positional words.
    public let keepsWordsAfterDashes: Bool
    /// The commands under it, in the order `--help` lists them; a command with subcommands takes
    /// no options or words of its own.
    public let subcommands: [CommandSpec]
    /// The subcommand a command line without one runs (`kiln build` is `kiln run build`).
    public let defaultSubcommand: String?

    /// A command; its fields say what each argument means.
    public init(
        name: String,
        abstract: String,
        discussion: String = "",
        options: [OptionSpec] = [],
        positionals: [PositionalSpec] = [],
        keepsWordsAfterDashes: Bool = false,
        subcommands: [CommandSpec] = [],
        defaultSubcommand: String? = nil
    ) {
        precondition(
            positionals.dropLast().allSatisfy { !$0.isRepeated && !$0.capturesRest },
            "only the last positional may take more than one word"
        )
        precondition(
            subcommands.isEmpty || options.isEmpty && positionals.isEmpty,
            "a command with subcommands takes no options or words of its own"
        )
        precondition(
            defaultSubcommand.map { name in subcommands.contains { $0.name == name } } ?? true,
            "the default subcommand is one of the subcommands"
        )
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.positionals = positionals
        self.keepsWordsAfterDashes = keepsWordsAfterDashes
        self.subcommands = subcommands
        self.defaultSubcommand = defaultSubcommand
    }

    /// The subcommand named `name`.
    public func subcommand(_ name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The option whose long name is `long`.
    func option(long: String) -> OptionSpec? {
        options.first { $0.long == long }
    }

    /// The option whose one-letter name is `short`.
    func option(short: Character) -> OptionSpec? {
        options.first { $0.short == short }
    }
}
