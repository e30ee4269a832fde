/// What a command line asks for.
///
/// Threading: a value type; `Sendable`.
public enum CommandLineRequest: Sendable {
    /// Run a command with what it was given.
    case command(ParsedArguments)
    /// Print the help of the command with these names (empty: the root's).
    case help([String])
    /// Print the version.
    case version
}

/// Reads a command line against a ``CommandSpec``: subcommands first, then the options and words
/// of the command they lead to.
///
/// What it accepts, as ArgumentParser did and getopt does:
/// - `--name VALUE`, `--name=VALUE`, `-n VALUE`, `-nVALUE` for an option that allows it (`-j4`);
/// - flags clustered, `-dk`, the last of them perhaps taking a value (`-dj 4`, `-dj4`);
/// - options and words in any order, up to `--`: the words after it are never options;
/// - `-h`, `--help` and `--version` anywhere before `--`; `kiln help [COMMAND…]`;
/// - a command line without a subcommand runs the default one (`kiln build` is `kiln run build`).
///
/// An option's value is the next word, whatever it looks like (`--taskfile -x.yml`): as getopt
/// and Go's pflag take it.
///
/// Threading: stateless; any thread.
public enum CommandLineParser {
    /// What `words` (the command line without the program's name) asks of `root`.
    ///
    /// - Throws: A ``UsageError`` naming the first word that can't be taken.
    public static func parse(_ words: [String], root: CommandSpec) throws(UsageError) -> CommandLineRequest {
        var spec = root
        var path: [String] = []
        var index = 0
        while !spec.subcommands.isEmpty {
            let word = index < words.count ? words[index] : nil
            if path.isEmpty, word == "help" {
                return .help(try helpPath(Array(words[(index + 1)...]), root: root))
            }
            if let word, let subcommand = spec.subcommand(word) {
                path.append(word)
                spec = subcommand
                index += 1
                continue
            }
            if word == "-h" || word == "--help" { return .help(path) }
            if word == "--version" { return .version }
            guard let name = spec.defaultSubcommand, let subcommand = spec.subcommand(name) else {
                let message = word.map { "unknown command '\($0)'" } ?? "a subcommand is needed"
                throw UsageError(message, command: path)
            }
            path.append(name)
            spec = subcommand
        }
        return try parseCommand(words[index...], spec: spec, path: path)
    }

    /// The options and words of one command.
    private static func parseCommand(
        _ words: ArraySlice<String>,
        spec: CommandSpec,
        path: [String]
    ) throws(UsageError) -> CommandLineRequest {
        var parsed = ParsedArguments(command: path, spec: spec)
        var rest = words
        func fail(_ message: String) -> UsageError { UsageError(message, command: path) }
        /// The next word: the value of the option written `spelled`.
        func nextValue(for spelled: String) throws(UsageError) -> String {
            guard let value = rest.popFirst() else { throw fail("\(spelled) needs a value") }
            return value
        }
        /// Takes `word` as the next positional word.
        func takePositional(_ word: String) throws(UsageError) {
            let slot = min(parsed.positionals.count, spec.positionals.count - 1)
            guard slot >= 0, parsed.positionals.count < spec.positionals.count || spec.positionals[slot].isRepeated
            else { throw fail("unexpected argument '\(word)'") }
            parsed.positionals.append(word)
        }
        /// Whether the next word fills a positional that takes every word left as it is.
        var capturing: Bool {
            parsed.positionals.count < spec.positionals.count
                ? spec.positionals[parsed.positionals.count].capturesRest
                : spec.positionals.last?.capturesRest == true
        }
        while let word = rest.popFirst() {
            if capturing {
                parsed.positionals.append(word)
                continue
            }
            if word == "--" {
                if spec.keepsWordsAfterDashes {
                    parsed.afterDashes = Array(rest)
                } else {
                    for word in rest { try takePositional(word) }
                }
                break
            }
            if word.hasPrefix("--") {
                let body = word.dropFirst(2)
                let equals = body.firstIndex(of: "=")
                let name = String(equals.map { body[..<$0] } ?? body)
                let inline = equals.map { String(body[body.index(after: $0)...]) }
                if name == "help" { return .help(path) }
                if name == "version" { return .version }
                guard let option = spec.option(long: name) else {
                    throw fail("unknown option '--\(name)'" + suggestion(for: name, in: spec))
                }
                if option.kind == .flag {
                    if let inline { throw fail("--\(name) takes no value, but '\(inline)' was given") }
                    parsed.given[name, default: []].append("")
                } else {
                    var value = inline ?? ""
                    if inline == nil { value = try nextValue(for: "--\(name)") }
                    parsed.given[name, default: []].append(value)
                }
            } else if word.hasPrefix("-"), word.count > 1 {
                var letters = word.dropFirst()
                while let letter = letters.popFirst() {
                    guard let option = spec.option(short: letter) else {
                        if letter == "h" { return .help(path) }
                        let within = word.count > 2 ? " (in '\(word)')" : ""
                        throw fail("unknown option '-\(letter)'\(within)")
                    }
                    if option.kind == .flag {
                        parsed.given[option.long, default: []].append("")
                        continue
                    }
                    let value: String
                    if letters.isEmpty {
                        value = try nextValue(for: "-\(letter)")
                    } else if option.allowsJoinedValue {
                        value = String(letters)
                        letters = ""
                    } else {
                        throw fail("-\(letter) takes a value: write -\(letter) '\(letters)' (in '\(word)')")
                    }
                    parsed.given[option.long, default: []].append(value)
                }
            } else {
                try takePositional(word)
            }
        }
        if let missing = spec.positionals.dropFirst(parsed.positionals.count).first(where: \.isRequired) {
            throw fail("missing <\(missing.name)>: \(missing.help)")
        }
        return .command(parsed)
    }

    /// `kiln help hooks install`: the names of the command whose help to print.
    private static func helpPath(_ words: [String], root: CommandSpec) throws(UsageError) -> [String] {
        var spec = root
        for (index, word) in words.enumerated() {
            guard let subcommand = spec.subcommand(word) else {
                throw UsageError("no command '\(word)' to show the help of", command: Array(words.prefix(index)))
            }
            spec = subcommand
        }
        return words
    }

    /// ` (did you mean '--dir'?)` for a long name one or two letters from one of the command's.
    private static func suggestion(for name: String, in spec: CommandSpec) -> String {
        let near = spec.options.filter { !$0.isHidden }.map(\.long).min {
            editDistance($0, name) < editDistance($1, name)
        }
        guard let near, editDistance(near, name) <= 2 else { return "" }
        return " (did you mean '--\(near)'?)"
    }

    /// How many letters must be inserted, removed or replaced to turn `a` into `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...max(a.count, 1) where i <= a.count {
            current[0] = i
            for j in 1...max(b.count, 1) where j <= b.count {
                let replace = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(replace, previous[j] + 1, current[j - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
