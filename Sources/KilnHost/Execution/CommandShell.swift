import KilnPaths

/// Which shell runs a command: **the one rule** for every command kiln starts — a task's commands,
/// its preconditions and `status:` tests, dynamic variables.
///
/// go-task runs commands with its own interpreter, which reads bash's syntax. Kiln runs them with
/// `/bin/sh` (dash on Debian: half of bash's start-up time, which counts for thousands of small
/// jobs) unless the command uses something dash reads differently — then with `/bin/bash`, when it
/// exists:
///
/// - bash's own syntax, which dash refuses: `[[ ]]`, `==` in a test, `(( ))`, `$'…'`, `<<<`,
///   `&>`, `|&`, `<(…)`, arrays, `function NAME`, `${VAR/…}`, `${VAR:1}`, `${!VAR}`,
///   `${VAR^^}`, `source`, `shopt`, `declare`, `pushd`, `set -o pipefail`;
/// - what dash accepts but means otherwise: brace expansion (`file.{c,h}`, `{1..3}`), `$RANDOM`,
///   and `echo` with a backslash or `-e` (dash's echo reads `\t`, bash's and go-task's don't).
///
/// A command that only looks like one of these (a `{a,b}` inside quotes, say) runs with bash,
/// which means the same thing there: a wrong guess costs half a millisecond, never a different
/// result.
///
/// Threading: stateless; any thread.
public enum CommandShell {
    /// The POSIX shell.
    public static let posix = "/bin/sh"
    /// bash, when this machine has it.
    public static let bash: String? = Files.exists("/bin/bash") ? "/bin/bash" : nil

    /// The shell that runs `command`.
    public static func path(for command: String) -> String {
        guard let bash, needsBash(command) else { return posix }
        return bash
    }

    /// The command line that runs `command`: its shell (``path(for:)``), `-e` (a failing statement
    /// ends it, as go-task runs every command), `-c`, the command. The process monitor's spawn
    /// (`ckiln_spawn_shell`) starts exactly this; a remote action's Command holds it.
    public static func arguments(for command: String) -> [String] {
        [path(for: command), "-e", "-c", command]
    }

    /// Whether `command` uses something only bash (and go-task's interpreter) reads as meant.
    public static func needsBash(_ command: String) -> Bool {
        // Most commands (`cc -c a.c -o a.o`) hold none of the bytes the syntax rules look for:
        // one pass over the bytes, then only the words.
        guard command.utf8.contains(where: { special[Int($0)] }) else {
            return command.contains("pipefail") || command.contains("echo -e")
                || hasWordAtCommandStart(command, bashWords)
        }
        for marker in markers where command.contains(marker) { return true }
        let bytes = Array(command.utf8)
        return hasArithmeticCommand(bytes) || hasBraceExpansion(bytes) || hasBashParameterExpansion(bytes)
            || echoReadsEscapes(command) || hasWordAtCommandStart(command, bashWords)
    }

    /// The bytes some syntax rule needs: `[ = $ < & | ( { \`.
    private static let special: [Bool] = (0..<256).map { "[=$<&|({\\".utf8.contains(UInt8($0)) }

    /// Texts that are bash's alone (or mean something else to dash).
    private static let markers = ["[[", "]]", "==", "$'", "<<<", "&>", "|&", "<(", ">(", "=(", "pipefail", "RANDOM"]

    /// bash's builtins that dash doesn't have.
    private static let bashWords: Set<String> = [
        "source", "function", "declare", "typeset", "readarray", "mapfile", "shopt", "pushd", "popd", "let",
    ]

    /// `(( … ))` as a command (not POSIX's `$(( … ))`).
    private static func hasArithmeticCommand(_ bytes: [UInt8]) -> Bool {
        var index = 1
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "("), bytes[index - 1] == UInt8(ascii: "("),
                index < 2 || bytes[index - 2] != UInt8(ascii: "$")
            {
                return true
            }
            index += 1
        }
        return false
    }

    /// `{a,b}` or `{1..3}` outside `${…}`: bash expands it, dash passes it on as it is.
    private static func hasBraceExpansion(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), index == 0 || bytes[index - 1] != UInt8(ascii: "$") else {
                index += 1
                continue
            }
            var end = index + 1
            var comma = false
            var dots = false
            while end < bytes.count, bytes[end] != UInt8(ascii: "}"), bytes[end] != UInt8(ascii: "{"),
                bytes[end] != UInt8(ascii: " "), bytes[end] != UInt8(ascii: "\n")
            {
                if bytes[end] == UInt8(ascii: ",") { comma = true }
                if bytes[end] == UInt8(ascii: "."), end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: ".") {
                    dots = true
                }
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "}"), comma || dots { return true }
            index = end
        }
        return false
    }

    /// `${!VAR}`, `${VAR/x/y}`, `${VAR:1}`, `${VAR^^}`, `${VAR,,}`, `${VAR[@]}`, `${VAR@Q}`: bash's
    /// forms (POSIX has `${VAR:-x}`, `${VAR:=x}`, `${VAR:?x}`, `${VAR:+x}`, `${#VAR}`, `%`, `#`).
    private static func hasBashParameterExpansion(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index + 2 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "$"), bytes[index + 1] == UInt8(ascii: "{") else { continue }
            var position = index + 2
            if bytes[position] == UInt8(ascii: "!") { return true }
            if bytes[position] == UInt8(ascii: "#") { continue }
            while position < bytes.count,
                bytes[position] == UInt8(ascii: "_")
                    || (bytes[position] | 0x20) >= UInt8(ascii: "a")
                        && (bytes[position] | 0x20) <= UInt8(ascii: "z")
                    || bytes[position] >= UInt8(ascii: "0") && bytes[position] <= UInt8(ascii: "9")
            {
                position += 1
            }
            guard position < bytes.count else { return false }
            switch bytes[position] {
            case UInt8(ascii: "/"), UInt8(ascii: "^"), UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "@"):
                return true
            case UInt8(ascii: ":"):
                if position + 1 < bytes.count, !"-=?+".utf8.contains(bytes[position + 1]) { return true }
            default: break
            }
        }
        return false
    }

    /// An `echo` whose arguments hold a backslash, or that says `-e`: dash's echo reads escapes
    /// (`\t`, `\n`) where bash's, and go-task's, print them as written.
    private static func echoReadsEscapes(_ command: String) -> Bool {
        guard command.contains("echo") else { return false }
        for segment in command.split(whereSeparator: { ";|&\n".contains($0) }) {
            let words = segment.split(separator: " ", omittingEmptySubsequences: true)
            guard let echo = words.firstIndex(where: { $0 == "echo" }) else { continue }
            let arguments = words[(echo + 1)...]
            if arguments.first == "-e" || arguments.contains(where: { $0.contains("\\") }) { return true }
        }
        return false
    }

    /// Whether one of `words` starts a command (the text's start, or after `;`, `&&`, `||`, `|`,
    /// a newline or `(`).
    private static func hasWordAtCommandStart(_ command: String, _ words: Set<String>) -> Bool {
        for segment in command.split(whereSeparator: { ";|&\n(".contains($0) }) {
            let first = segment.drop(while: { $0 == " " || $0 == "\t" }).prefix(while: { $0 != " " && $0 != "\t" })
            if words.contains(String(first)) { return true }
        }
        return false
    }
}
