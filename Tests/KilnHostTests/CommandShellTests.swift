import Testing

@testable import KilnHost

/// The rule choosing `/bin/sh` or `/bin/bash` for a command. What the commands print, run by kiln
/// and by go-task, is compared in `GoTaskCompatibilityTests`; here: that plain POSIX commands keep
/// the faster shell, and each bash form is seen.
@Suite struct CommandShellTests {
    @Test(
        "POSIX commands run with /bin/sh",
        arguments: [
            "cc -c src/a.c -o build/a.o", "cp in.txt out.txt && echo done", "test -f x || exit 1",
            "echo \"$HOME\" ${USER:-nobody} ${#PATH} ${X%.c} ${Y#./}", "for f in *.c; do echo $f; done",
            "[ \"$a\" = \"b\" ] && echo same", "echo $(date) $((1 + 2))", "go build -ldflags '-s -w' ./...",
            "find . -name '*.o' -exec rm {} \\;", "printf '%s\\n' a b", "x=$(cat f); echo \"$x\" > out 2>&1",
            "cat <<EOF\nhello\nEOF", "awk '{print $1}' file", "echo 'ünïcödé' > out", "echo x -e",
            "sourced=1; echo $sourced", "letter=a", "", "echo",
        ]
    )
    func posix(command: String) {
        #expect(!CommandShell.needsBash(command), "\(command)")
    }

    @Test(
        "bash's syntax, and what dash reads otherwise, run with /bin/bash",
        arguments: [
            "[[ -f x ]] && echo y", "[ a == a ]", "(( n++ ))", "echo $'a\\tb'", "cat <<< word", "make &> log",
            "a |& b", "diff <(ls a) <(ls b)", "A=(x y)", "function f { :; }", "source env.sh", "shopt -s globstar",
            "pushd dir", "declare -A m", "set -o pipefail; false | true", "echo $RANDOM", "cp x.{c,h} dir",
            "echo {1..3}", "echo ${X/a/b}", "echo ${X:1:2}", "echo ${!NAME}", "echo ${X^^}", "echo ${A[@]}",
            "echo \"a\\tb\"", "echo -e 'x\\ny'", "true; let x=1", "echo ünï ${X/a/b}", "  pushd dir",
            "(source x)", "a && \tdeclare -A m", "echo -e", "x | echo a\\b",
        ]
    )
    func bash(command: String) {
        #expect(CommandShell.needsBash(command), "\(command)")
    }

    @Test("the chosen shell is bash only where it is needed, and only when the machine has it")
    func path() {
        #expect(CommandShell.path(for: "true") == "/bin/sh")
        #expect(CommandShell.path(for: "[[ 1 ]]") == (CommandShell.bash ?? "/bin/sh"))
    }
}

/// Which commands kiln starts without the shell (``CommandShell/directWords(_:)``): only those the
/// shell would start as one program with the same words. What they then do is compared with the
/// shell's in `DirectCommandTests`.
@Suite struct DirectWordsTests {
    @Test(
        "one simple command of plain words starts without the shell",
        arguments: [
            ("cp in.txt out.txt", ["cp", "in.txt", "out.txt"]),
            ("cc -c src/a.c -o build/a.o", ["cc", "-c", "src/a.c", "-o", "build/a.o"]),
            ("  go   build\t./...  ", ["go", "build", "./..."]),
            ("./configure --prefix=/usr", ["./configure", "--prefix=/usr"]),
            ("tool a=b x,y+z:1@2%3^4 -", ["tool", "a=b", "x,y+z:1@2%3^4", "-"]),
            ("time make", ["time", "make"]),
        ]
    )
    func direct(command: String, words: [String]) {
        #expect(CommandShell.directWords(command) == words)
    }

    /// Every byte: the word bytes keep a command direct; any other one (quotes, `$`, globs, `~`,
    /// `#`, redirections, separators, a newline, a control byte, a byte of UTF-8) sends it to the
    /// shell.
    @Test func everyByteTheShellReadsSendsTheCommandToTheShell() {
        let wordBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,+:@%^=".utf8)
        for byte in UInt8(1)...UInt8(255) where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
            let command = String(decoding: Array("cp a".utf8) + [byte] + Array("b c".utf8), as: UTF8.self)
            let words = CommandShell.directWords(command)
            if wordBytes.contains(byte) {
                #expect(words?.count == 3, "byte \(byte)")
            } else {
                #expect(words == nil, "byte \(byte)")
            }
        }
    }

    @Test(
        "assignments, builtins, reserved words and what needs bash go to the shell",
        arguments: [
            "", "   ", "A=1 make", "echo hi", "cd dir", "true", "false", "test -f x", "exit 1", "printf x",
            "pwd", "kill 1", "exec make", "command -v cc", "set -x", "export A", "read x", "wait", "umask 022",
            "type cc", "hash", ".", ":", "if", "then", "fi", "while", "for", "do", "done", "case", "esac", "in",
            "!", "{", "}", "source env.sh", "let x", "declare x", "pushd dir", "function", "grep pipefail f",
        ]
    )
    func shell(command: String) {
        #expect(CommandShell.directWords(command) == nil, "\(command)")
    }
}
