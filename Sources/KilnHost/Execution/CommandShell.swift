import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

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
/// A command that is one simple command — words only, nothing the shell would expand, quote,
/// redirect or assign, and a first word that is neither a builtin nor a reserved word
/// (``directWords(_:)``) — is started by kiln itself, as the shell would start it: the same
/// program, arguments and environment, without the shell's start-up (about a third of the cost of
/// starting `cp a b`). Only the process monitor's commands that aren't interactive do this (not
/// `sh:` variables, whose spawn is their own); the rest, and whatever the shell alone can answer
/// (a program not found, a script without `#!`), go through the shell.
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

    /// The words of `command` when `/bin/sh -e -c command` would only start one program with
    /// exactly these words as its arguments, so kiln may start it without the shell; nil otherwise.
    ///
    /// That holds when the command is ASCII words made of letters, digits and `_-./,+:@%^=`,
    /// separated by spaces or tabs — no quote, `$`, glob, `~`, `#`, redirection, separator or
    /// newline — and its first word holds no `=` (an assignment) and is none of the shell's
    /// builtins and reserved words, nor bash's words that make bash run it (``needsBash(_:)``).
    public static func directWords(_ command: String) -> [String]? {
        var command = command
        return command.withUTF8 { bytes -> [String]? in
            var words: [String] = []
            var start = -1
            for index in 0...bytes.count {
                let byte = index < bytes.count ? bytes[index] : UInt8(ascii: " ")
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                    if start >= 0 {
                        words.append(
                            String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                        )
                        start = -1
                    }
                } else if wordByte[Int(byte)] {
                    if start < 0 { start = index }
                } else {
                    return nil
                }
            }
            guard let first = words.first, !first.utf8.contains(UInt8(ascii: "=")), !shellWords.contains(first),
                !needsBash(bytes: bytes)
            else { return nil }
            return words
        }
    }

    /// The bytes a word started without the shell may hold: the shell passes them on as they are.
    private static let wordByte: [Bool] = (0..<256).map { byte in
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,+:@%^=".utf8.contains(UInt8(byte))
    }

    /// First words the shell runs itself, or reads as syntax: dash's builtins and reserved words,
    /// and bash's words (``bashWords``), which make bash run the command.
    private static let shellWords: Set<String> = Set(
        [
            ".", ":", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec",
            "exit", "export", "false", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read",
            "readonly", "return", "set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask",
            "unalias", "unset", "wait",
            "!", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then", "until", "while",
            "{", "}",
        ] + bashWords.map { String(decoding: $0, as: UTF8.self) }
    )

    /// Whether `command` uses something only bash (and go-task's interpreter) reads as meant.
    public static func needsBash(_ command: String) -> Bool {
        // Byte by byte: it is asked for every command kiln starts, and the String searches it used
        // cost 20,000 instructions a command (as much as the rest of a job's bookkeeping).
        var command = command
        return command.withUTF8(needsBash(bytes:))
    }

    private static func needsBash(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Most commands (`cc -c a.c -o a.o`) hold none of the bytes the syntax rules look for:
        // one pass over the bytes, then only the words.
        guard bytes.contains(where: { special[Int($0)] }) else {
            return contains(bytes, "pipefail") || contains(bytes, "echo -e") || hasWordAtCommandStart(bytes)
        }
        for marker in markers where contains(bytes, marker) { return true }
        return hasArithmeticCommand(bytes) || hasBraceExpansion(bytes) || hasBashParameterExpansion(bytes)
            || echoReadsEscapes(bytes) || hasWordAtCommandStart(bytes)
    }

    /// The bytes some syntax rule needs: `[ = $ < & | ( { \`.
    private static let special: [Bool] = (0..<256).map { "[=$<&|({\\".utf8.contains(UInt8($0)) }

    /// Texts that are bash's alone (or mean something else to dash).
    private static let markers: [StaticString] = [
        "[[", "]]", "==", "$'", "<<<", "&>", "|&", "<(", ">(", "=(", "pipefail", "RANDOM",
    ]

    /// bash's builtins that dash doesn't have.
    private static let bashWords: [[UInt8]] = [
        "source", "function", "declare", "typeset", "readarray", "mapfile", "shopt", "pushd", "popd", "let",
    ].map { Array($0.utf8) }

    /// Whether `needle` (ASCII) occurs in `bytes`.
    private static func contains(_ bytes: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let count = needle.utf8CodeUnitCount
        guard count > 0, bytes.count >= count else { return count == 0 }
        let first = needle.utf8Start.pointee
        var index = 0
        while index <= bytes.count - count {
            if bytes[index] == first, memcmp(bytes.baseAddress! + index, needle.utf8Start, count) == 0 { return true }
            index += 1
        }
        return false
    }

    /// Calls `body` with each part of `bytes` between `separators` (empty parts too), until it
    /// returns true; returns whether one did.
    private static func anySegment(
        _ bytes: UnsafeBufferPointer<UInt8>,
        separatedBy separators: StaticString,
        _ body: (UnsafeBufferPointer<UInt8>) -> Bool
    ) -> Bool {
        let isSeparator = UnsafeBufferPointer(start: separators.utf8Start, count: separators.utf8CodeUnitCount)
        var start = 0
        for index in 0...bytes.count where index == bytes.count || isSeparator.contains(bytes[index]) {
            if body(UnsafeBufferPointer(rebasing: bytes[start..<index])) { return true }
            start = index + 1
        }
        return false
    }

    /// `(( … ))` as a command (not POSIX's `$(( … ))`).
    private static func hasArithmeticCommand(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
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
    private static func hasBraceExpansion(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
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
    private static func hasBashParameterExpansion(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
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
    private static func echoReadsEscapes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard contains(bytes, "echo") else { return false }
        return anySegment(bytes, separatedBy: ";|&\n") { segment in
            // The words after the first `echo`, split at spaces.
            var afterEcho = false
            var first = true
            return anySegment(segment, separatedBy: " ") { word in
                if word.isEmpty { return false }
                guard afterEcho else {
                    afterEcho = word.elementsEqual("echo".utf8)
                    return false
                }
                defer { first = false }
                return first && word.elementsEqual("-e".utf8) || word.contains(UInt8(ascii: "\\"))
            }
        }
    }

    /// Whether one of bash's own words starts a command (the text's start, or after `;`, `&&`,
    /// `||`, `|`, a newline or `(`).
    private static func hasWordAtCommandStart(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        anySegment(bytes, separatedBy: ";|&\n(") { segment in
            let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            guard let start = segment.firstIndex(where: { !isBlank($0) }) else { return false }
            let end = segment[start...].firstIndex(where: isBlank) ?? segment.count
            let word = UnsafeBufferPointer(rebasing: segment[start..<end])
            return bashWords.contains { $0.count == word.count && $0.elementsEqual(word) }
        }
    }
}
