import Testing

@testable import KilnCommandLine

/// A tool shaped like kiln: a default subcommand with every kind of option and a `--` tail, a
/// command whose last word captures the rest, and a command with subcommands of its own.
private let root = CommandSpec(
    name: "tool",
    abstract: "A tool.",
    subcommands: [
        CommandSpec(
            name: "run",
            abstract: "Run things.",
            options: [
                .value("taskfile", short: "t", help: "The file."),
                .value("jobs", short: "j", joined: true, help: "How many."),
                .flag("dry-run", short: "d", help: "Run nothing."),
                .flag("keep-going", short: "k", help: "Go on."),
                .repeatable("plugin-path", help: "A directory."),
                .value("wait-limit", help: "Seconds."),
                .value("format", help: "dot or json."),
                .value("hidden", help: "", hidden: true),
            ],
            positionals: [.many("tasks", help: "The tasks.")],
            keepsWordsAfterDashes: true
        ),
        CommandSpec(
            name: "hook",
            abstract: "A hook.",
            options: [.value("taskfile", short: "t", help: "The file.")],
            positionals: [.one("name", help: "The hook's name."), .rest("arguments", help: "Git's.")]
        ),
        CommandSpec(name: "list", abstract: "List.", options: [.flag("json", help: "JSON.")]),
        CommandSpec(
            name: "hooks",
            abstract: "Hooks.",
            subcommands: [
                CommandSpec(name: "install", abstract: "Install."),
                CommandSpec(name: "status", abstract: "Status.", options: [.flag("json", help: "JSON.")]),
            ],
            defaultSubcommand: "status"
        ),
    ],
    defaultSubcommand: "run"
)

private func parsed(_ words: [String]) throws -> ParsedArguments {
    guard case .command(let arguments) = try CommandLineParser.parse(words, root: root) else {
        Issue.record("\(words) asks for help or the version")
        throw UsageError("not a command", command: [])
    }
    return arguments
}

private func usageError(_ words: [String]) -> UsageError? {
    do {
        _ = try CommandLineParser.parse(words, root: root)
        return nil
    } catch {
        return error
    }
}

@Suite struct CommandLineParserTests {
    @Test(
        "every spelling of an option's value gives the same value",
        arguments: [
            ["run", "-j", "4"], ["run", "-j4"], ["run", "--jobs", "4"], ["run", "--jobs=4"], ["run", "-dj", "4"],
            ["run", "-dj4"], ["-j4"], ["run", "-j", "3", "-j", "4"], ["run", "build", "--jobs=4"],
        ]
    )
    func valueSpellings(words: [String]) throws {
        #expect(try parsed(words).value("jobs") == "4")
    }

    @Test("flags are seen alone, clustered, and among words")
    func flags() throws {
        for words in [
            ["run", "-d", "-k"], ["run", "-dk"], ["run", "-kd"], ["run", "a", "--dry-run", "b", "--keep-going"],
        ] {
            let arguments = try parsed(words)
            #expect(arguments.flag("dry-run") && arguments.flag("keep-going"), "\(words)")
        }
        let none = try parsed(["run"])
        #expect(!none.flag("dry-run") && !none.flag("keep-going") && none.value("jobs") == nil)
    }

    @Test("a repeatable option keeps every value in order")
    func repeatable() throws {
        let arguments = try parsed(["run", "--plugin-path", "a", "--plugin-path=b", "--plugin-path", "c"])
        #expect(arguments.values("plugin-path") == ["a", "b", "c"])
    }

    @Test("an option's value is the next word, whatever it looks like")
    func valuesThatLookLikeOptions() throws {
        #expect(try parsed(["run", "-t", "-x.yml"]).value("taskfile") == "-x.yml")
        #expect(try parsed(["run", "--wait-limit", "-1"]).value("wait-limit") == "-1")
        #expect(try parsed(["run", "--taskfile=a=b"]).value("taskfile") == "a=b")
        #expect(try parsed(["run", "--taskfile="]).value("taskfile") == "")
    }

    @Test("the words after -- are never options, and a command keeps them apart when it says so")
    func dashes() throws {
        let arguments = try parsed(["run", "build", "X=1", "--", "-x", "--y", "--", "z"])
        #expect(arguments.positionals == ["build", "X=1"])
        #expect(arguments.afterDashes == ["-x", "--y", "--", "z"])
        #expect(!arguments.flag("dry-run"))
        let bare = try parsed(["--", "build"])
        #expect(bare.command == ["run"] && bare.positionals.isEmpty && bare.afterDashes == ["build"])
    }

    @Test("a positional that captures the rest takes options and -- as they are")
    func capture() throws {
        let arguments = try parsed(["hook", "-t", "T.yml", "pre-push", "--", "origin", "-t", "--help"])
        #expect(arguments.value("taskfile") == "T.yml")
        #expect(arguments.positionals == ["pre-push", "--", "origin", "-t", "--help"])
        #expect(try parsed(["hook", "pre-commit"]).positionals == ["pre-commit"])
    }

    @Test("without a subcommand the default one runs, at every level")
    func defaultSubcommands() throws {
        #expect(try parsed([]).command == ["run"])
        #expect(try parsed(["build", "-d"]).command == ["run"])
        #expect(try parsed(["build", "-d"]).positionals == ["build"])
        #expect(try parsed(["hooks"]).command == ["hooks", "status"])
        #expect(try parsed(["hooks", "--json"]).flag("json"))
        #expect(try parsed(["hooks", "install"]).command == ["hooks", "install"])
        // A subcommand's name is a subcommand, not a task: `tool run list` names the task.
        #expect(try parsed(["list"]).command == ["list"])
        #expect(try parsed(["run", "list"]).positionals == ["list"])
    }

    @Test(
        "help and the version are asked for anywhere before --",
        arguments: [
            (["--help"], [String]()), (["-h"], []), (["help"], []), (["run", "--help"], ["run"]),
            (["-d", "-h"], ["run"]),
            (["run", "build", "--help=x"], ["run"]), (["help", "hooks", "install"], ["hooks", "install"]),
            (["hooks", "--help"], ["hooks"]), (["hooks", "status", "-h"], ["hooks", "status"]), (["-dh"], ["run"]),
        ]
    )
    func help(words: [String], path: [String]) throws {
        guard case .help(let asked) = try CommandLineParser.parse(words, root: root) else {
            Issue.record("\(words) is not a request for help")
            return
        }
        #expect(asked == path)
    }

    @Test("--version anywhere before -- asks for the version; after it, it is a word")
    func version() throws {
        for words in [["--version"], ["run", "--version"], ["run", "build", "--version"]] {
            guard case .version = try CommandLineParser.parse(words, root: root) else {
                Issue.record("\(words)")
                continue
            }
        }
        #expect(try parsed(["run", "--", "--version"]).afterDashes == ["--version"])
    }

    @Test(
        "a word kiln can't take is a usage error naming it, in the command it was found in",
        arguments: [
            (["run", "--no-such-option"], ["run"], "unknown option '--no-such-option'"),
            (["run", "--jbos", "2"], ["run"], "did you mean '--jobs'?"),
            (["run", "-x"], ["run"], "unknown option '-x'"),
            (["run", "-dx"], ["run"], "unknown option '-x' (in '-dx')"),
            (["run", "-j"], ["run"], "-j needs a value"),
            (["run", "--jobs"], ["run"], "--jobs needs a value"),
            (["run", "--dry-run=true"], ["run"], "--dry-run takes no value, but 'true' was given"),
            (["run", "-tT.yml"], ["run"], "-t takes a value: write -t 'T.yml' (in '-tT.yml')"),
            (["list", "extra"], ["list"], "unexpected argument 'extra'"),
            (["list", "--", "extra"], ["list"], "unexpected argument 'extra'"),
            (["hook"], ["hook"], "missing <name>: The hook's name."),
            (["hooks", "bogus"], ["hooks", "status"], "unexpected argument 'bogus'"),
            (["help", "bogus"], [], "no command 'bogus' to show the help of"),
        ]
    )
    func usageErrors(words: [String], command: [String], message: String) {
        let error = usageError(words)
        #expect(error?.command == command, "\(words)")
        #expect(error?.message.contains(message) == true, "\(words): \(String(describing: error))")
    }

    @Test("a hidden option is taken, and not suggested")
    func hidden() throws {
        #expect(try parsed(["run", "--hidden", "x"]).value("hidden") == "x")
        #expect(usageError(["run", "--hiden", "x"])?.message == "unknown option '--hiden'")
    }

    @Test("typed values are checked, and a bad one is named")
    func typedValues() throws {
        #expect(try parsed(["-j", "8"]).integer("jobs", atLeast: 1) == 8)
        #expect(try parsed([]).integer("jobs", atLeast: 1) == nil)
        #expect(throws: UsageError("-j/--jobs must be at least 1", command: ["run"])) {
            try parsed(["-j0"]).integer("jobs", atLeast: 1)
        }
        #expect(throws: UsageError("-j/--jobs takes a whole number, not 'x'", command: ["run"])) {
            try parsed(["-jx"]).integer("jobs", atLeast: 1)
        }
        #expect(try parsed(["--wait-limit", "0.5"]).number("wait-limit") == 0.5)
        #expect(throws: UsageError("--wait-limit takes a number of seconds, not 'soon'", command: ["run"])) {
            try parsed(["--wait-limit", "soon"]).number("wait-limit")
        }
        #expect(try parsed(["--format", "json"]).choice("format", among: ["dot", "json"]) == "json")
        #expect(throws: UsageError("--format must be dot or json, not 'svg'", command: ["run"])) {
            try parsed(["--format", "svg"]).choice("format", among: ["dot", "json"])
        }
    }

    @Test("edit distance counts insertions, removals and replacements")
    func editDistance() {
        #expect(CommandLineParser.editDistance("jobs", "jobs") == 0)
        #expect(CommandLineParser.editDistance("jbos", "jobs") == 2)
        #expect(CommandLineParser.editDistance("", "dir") == 3)
        #expect(CommandLineParser.editDistance("dir", "") == 3)
        #expect(CommandLineParser.editDistance("wait", "wait-limit") == 6)
    }
}

@Suite struct HelpTextTests {
    @Test("help lists every option that isn't hidden, every positional and the subcommands")
    func help() {
        let run = HelpText.help(for: ["run"], root: root)
        #expect(run.hasPrefix("OVERVIEW: Run things.\n"))
        #expect(run.contains("USAGE: tool run [<options>] [<tasks> ...] [-- <arguments> ...]\n"))
        for synopsis in [
            "  -t, --taskfile <taskfile>", "  -j, --jobs <jobs>", "  -d, --dry-run", "  --plugin-path <plugin-path>",
            "  <tasks>", "  --version", "  -h, --help",
        ] {
            #expect(run.contains(synopsis), "\(synopsis)")
        }
        #expect(!run.contains("--hidden"))
        let top = HelpText.help(for: [], root: root)
        #expect(top.contains("USAGE: tool <subcommand>\n"))
        #expect(top.contains("  run (default)           Run things.\n"))
        #expect(top.contains("  hooks                   Hooks.\n"))
        #expect(HelpText.help(for: ["hooks"], root: root).contains("  status (default)        Status.\n"))
        #expect(HelpText.usage(for: ["hook"], root: root) == "tool hook [<options>] <name> [<arguments> ...]")
        #expect(HelpText.usage(for: ["hooks", "install"], root: root) == "tool hooks install")
    }

    @Test("help is wrapped at 80 columns, explanations in their column")
    func wrapping() {
        let long = CommandSpec(
            name: "tool",
            abstract: String(repeating: "word ", count: 40),
            options: [
                .value("a-rather-long-option-name", help: String(repeating: "more ", count: 30)),
                .flag("short", help: "Fits."),
            ]
        )
        let text = HelpText.help(for: [], root: long)
        #expect(text.split(separator: "\n").allSatisfy { $0.count < 80 }, "\(text)")
        #expect(
            text.contains(
                "  --a-rather-long-option-name <a-rather-long-option-name>\n                          more more"
            )
        )
        #expect(text.contains("  --short                 Fits.\n"))
    }

    @Test("a usage error says what, the usage, and where the help is")
    func error() {
        let text = HelpText.error(UsageError("unknown option '--x'", command: ["run"]), root: root)
        #expect(
            text == """
                tool run: error: unknown option '--x'
                Usage: tool run [<options>] [<tasks> ...] [-- <arguments> ...]
                  See 'tool run --help' for more information.

                """
        )
    }
}
