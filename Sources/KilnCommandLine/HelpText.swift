/// The text `--help` prints, and the lines a usage error ends with, made from a ``CommandSpec``.
///
/// Laid out as ArgumentParser laid kiln's help out before (OVERVIEW, USAGE, ARGUMENTS, OPTIONS,
/// SUBCOMMANDS, 80 columns), so what users read didn't move.
///
/// Threading: stateless; any thread.
public enum HelpText {
    /// The width help is wrapped to: lines are shorter, so a terminal this wide never wraps them.
    static let width = 80
    /// Where the column of explanations starts.
    static let labelWidth = 26

    /// `text`'s paragraphs: its runs of lines between blank ones.
    static func paragraphs(of text: String) -> [String] {
        var paragraphs: [String] = []
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.isEmpty {
                lines.append(line)
            } else if !lines.isEmpty {
                paragraphs.append(lines.joined(separator: "\n"))
                lines = []
            }
        }
        if !lines.isEmpty { paragraphs.append(lines.joined(separator: "\n")) }
        return paragraphs
    }

    /// The help of the command `path` names under `root` (`kiln` is `root.name`).
    public static func help(for path: [String], root: CommandSpec) -> String {
        let spec = command(path, root: root)
        var text = wrap("OVERVIEW: " + spec.abstract, indent: 0) + "\n"
        for paragraph in paragraphs(of: spec.discussion) {
            text += "\n" + wrap(paragraph, indent: 0) + "\n"
        }
        text += "\nUSAGE: " + usage(for: path, root: root) + "\n"
        if !spec.positionals.isEmpty {
            text += "\nARGUMENTS:\n"
            for positional in spec.positionals { text += row("<\(positional.name)>", positional.help) }
        }
        text += "\nOPTIONS:\n"
        for option in spec.options where !option.isHidden { text += row(option.synopsis, option.help) }
        text += row("--version", "Show the version.")
        text += row("-h, --help", "Show help information.")
        if !spec.subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n"
            for subcommand in spec.subcommands {
                let name = subcommand.name + (subcommand.name == spec.defaultSubcommand ? " (default)" : "")
                text += row(name, subcommand.abstract)
            }
            let words = [root.name, "help"] + path + ["<subcommand>"]
            text += "\n  See '\(words.joined(separator: " "))' for detailed help.\n"
        }
        return text
    }

    /// `kiln run [<options>] [<tasks> ...]`: how the command `path` names is written.
    public static func usage(for path: [String], root: CommandSpec) -> String {
        let spec = command(path, root: root)
        var words = [root.name] + path
        if !spec.subcommands.isEmpty {
            words.append("<subcommand>")
            return words.joined(separator: " ")
        }
        if !spec.options.isEmpty { words.append("[<options>]") }
        for positional in spec.positionals {
            let name = "<\(positional.name)>"
            words.append(
                positional.isRequired ? name : positional.isRepeated ? "[\(name) ...]" : "[\(name)]"
            )
        }
        if spec.keepsWordsAfterDashes { words.append("[-- <arguments> ...]") }
        return words.joined(separator: " ")
    }

    /// What kiln prints for a usage error: the message, the command's usage, where its help is.
    public static func error(_ error: UsageError, root: CommandSpec) -> String {
        let command = ([root.name] + error.command).joined(separator: " ")
        return "\(command): error: \(error.message)\n"
            + "Usage: \(usage(for: error.command, root: root))\n"
            + "  See '\(command) --help' for more information.\n"
    }

    /// The command `path` names; `root` when a name isn't one of its subcommands (the parser
    /// only hands over names it found).
    private static func command(_ path: [String], root: CommandSpec) -> CommandSpec {
        var spec = root
        for name in path {
            guard let subcommand = spec.subcommand(name) else { break }
            spec = subcommand
        }
        return spec
    }

    /// `  LABEL   explanation…`, the explanation wrapped in its column (on the next line when the
    /// label reaches into it).
    private static func row(_ label: String, _ explanation: String) -> String {
        let lead = "  " + label
        let body = wrap(explanation, indent: labelWidth)
        let column = String(body.dropFirst(labelWidth))
        guard lead.count <= labelWidth - 2 else { return lead + "\n" + body + "\n" }
        return lead + String(repeating: " ", count: labelWidth - lead.count) + column + "\n"
    }

    /// `text` wrapped at ``width`` columns, every line indented by `indent` spaces; a word longer
    /// than a line is left whole.
    static func wrap(_ text: String, indent: Int) -> String {
        let margin = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty, indent + line.count + 1 + word.count >= width {
                lines.append(margin + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        lines.append(margin + line)
        return lines.joined(separator: "\n")
    }
}
