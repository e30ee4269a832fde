import Foundation
import KilnTestSupport
import Testing

/// Taskfile constructs that go-task accepts, run by both tools on identical copies of a project:
/// each leaves the same files with the same contents.
@Suite struct GoTaskCompatibilityTests {
    /// A case: the project's files, the task to run, and the files whose contents are compared.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var files: [String: String]
        var task: String
        var compared: [String]
        var environment: [String: String] = [:]
        /// Given after the task on both command lines (`NAME=value`, `--` and what follows).
        var arguments: [String] = []
        /// Whether the run succeeds (both tools must agree); files are compared either way.
        var succeeds = true
        /// Files neither tool may leave.
        var absent: [String] = []
        /// Runs of the same task after the first, each after its changes to the project.
        var reruns: [Rerun] = []
        var testDescription: String { name }
    }

    /// Changes made to both projects, then the task run again in both: files written (a `nil`
    /// text removes the file), and whether this run succeeds.
    struct Rerun: Sendable {
        var files: [String: String?] = [:]
        var succeeds = true
    }

    static let cases: [Case] = [
        Case(
            name: "an anchor inside tasks: used by vars: after them, and merge keys among the tasks",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    desc: &greeting hello
                    cmds: ['echo {{.V}} > v.out']
                  base: &base {cmds: ['echo base > base.out']}
                  u:
                    <<: *base
                    deps: [t]
                vars:
                  V: *greeting

                """
            ],
            task: "u",
            compared: ["v.out", "base.out"]
        ),
        Case(
            name: "an included directory holding Taskfile.yaml, or taskfile.dist.yml",
            files: [
                "Taskfile.yml":
                    "version: '3'\nincludes:\n  lib: ./lib\n  dist: ./dist\ntasks:\n  both:\n    deps: ['lib:hello', 'dist:hello']\n",
                "lib/Taskfile.yaml": "version: '3'\ntasks:\n  hello:\n    cmds: ['echo yaml > lib.out']\n",
                "dist/taskfile.dist.yml": "version: '3'\ntasks:\n  hello:\n    cmds: ['echo dist > dist.out']\n",
            ],
            task: "both",
            compared: ["lib.out", "dist.out"]
        ),
        Case(
            name: "a null item in deps is skipped",
            files: [
                "Taskfile.yml":
                    "version: '3'\ntasks:\n  a:\n    deps: [~, b, null]\n    cmds: ['echo a >> a.out']\n  b:\n    cmds: ['echo b > b.out']\n"
            ],
            task: "a",
            compared: ["a.out", "b.out"]
        ),
        Case(
            name: "a missing dir: is made before the first command",
            files: [
                "Taskfile.yml": "version: '3'\ntasks:\n  d:\n    dir: build/sub\n    cmds: ['echo here > made.out']\n"
            ],
            task: "d",
            compared: ["build/sub/made.out"]
        ),
        Case(
            name: "pipelines, default, join and if/else in commands",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  NAME: kiln
                  LIST: [a, b, c]
                  N: 3
                  FLAG: false
                tasks:
                  t:
                    cmds:
                      - echo '{{.NAME | upper}} {{default "fallback" .UNSET}} {{.LIST | join "-"}}' > out.txt
                      - echo '{{if eq .N 3}}three{{else}}other{{end}} {{if .FLAG}}on{{else}}off{{end}} {{add .N 1}}' >> out.txt
                      - echo '{{range $i, $v := .LIST}}{{$i}}{{$v}} {{end}}|{{len .LIST}}|{{printf "%05.1f" 2.5}}' >> out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "typed, ref and map variables, and variables built from variables",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  LIST: [x, y]
                  FIRST:
                    ref: index .LIST 0
                  ALIAS:
                    ref: .LIST
                  M:
                    map: {a: 1, b: [2, 3]}
                  A: one
                  B: '{{.A}}-two'
                  C: '{{.B}}-three'
                  NUM: 0x10
                  F: 1.50
                  Q: "42"
                tasks:
                  t:
                    vars:
                      LOCAL: '{{.C | upper}}'
                    cmds:
                      - echo '{{.FIRST}} {{.ALIAS}} {{.M.a}} {{index .M.b 1}} {{.M}} {{.LOCAL}}' > out.txt
                      - echo '{{.NUM}} {{.F}} {{printf "%T %T %T" .NUM .F .Q}} {{kindOf .ALIAS}}' >> out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "templates in env, dir and sources",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  SUB: work
                tasks:
                  t:
                    env:
                      GREETING: '{{.SUB | upper}}!'
                    dir: '{{.SUB}}/{{"deep" | lower}}'
                    sources: ['{{.SUB}}.txt']
                    cmds:
                      - echo "$GREETING {{base .TASKFILE_DIR | len | printf "%d" | len}}" > made.txt
                """,
                "work.txt": "x",
            ],
            task: "t",
            compared: ["work/deep/made.txt"]
        ),
        Case(
            name: "go-task's functions: OS, ARCH, exeExt, joinPath, shellQuote, splitArgs, catLines, now",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  ARGS: 'a "b c" d'
                tasks:
                  t:
                    cmds:
                      - echo '{{OS}} {{ARCH}} [{{exeExt}}] {{joinPath "a" "b/../c"}} {{splitArgs .ARGS | len}}' > out.txt
                      - echo {{shellQuote "it's here"}} {{q "$HOME"}} >> out.txt
                      - echo '{{catLines "x\\ny"}} {{now | date "2006" | len}} {{toJson (list 1 "a")}}' >> out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "ignore_error on a task and on one command",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps: [whole]
                    cmds:
                      - cmd: exit 3
                        ignore_error: true
                      - echo after >> out.txt
                  whole:
                    ignore_error: true
                    cmds: ['false', 'echo whole >> whole.txt']
                """
            ],
            task: "t",
            compared: ["out.txt", "whole.txt"]
        ),
        Case(
            name: "platforms: a task for another OS is skipped with its dependencies; commands filtered",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps: [windows-only]
                    cmds:
                      - cmd: echo linux >> out.txt
                        platforms: [linux]
                      - cmd: echo darwin >> out.txt
                        platforms: [darwin, windows/arm64]
                      - cmd: echo arch >> out.txt
                        platforms: [amd64, arm64]
                  windows-only:
                    platforms: [windows]
                    deps: [dep]
                    cmds: ['echo skipped > skipped.txt']
                  dep:
                    cmds: ['echo dep > dep.txt']
                """
            ],
            task: "t",
            compared: ["out.txt"],
            absent: ["skipped.txt", "dep.txt"]
        ),
        Case(
            name: "preconditions: met ones let the task run, and a failed one stops it before its commands",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps: [ok]
                    preconditions:
                      - test -f ok.txt
                      - sh: test -f missing.txt
                        msg: missing.txt is missing
                    cmds: ['echo ran > ran.txt']
                  ok:
                    preconditions: ['true']
                    cmds: ['echo ok > ok.txt']
                """
            ],
            task: "t",
            compared: ["ok.txt"],
            succeeds: false,
            absent: ["ran.txt"]
        ),
        Case(
            name: "aliases on the command line and in deps; cmd: as a task's only command; deps as {task:}",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    aliases: [b, compile]
                    deps: [{task: gen, silent: true}, g2]
                    cmd: echo built >> out.txt
                  gen:
                    desc: generates
                    summary: long text
                    label: 'generate {{.TASK}}'
                    cmds: ['echo gen > gen.txt']
                  second:
                    aliases: [g2]
                    silent: true
                    method: none
                    cmds: ['echo two > two.txt']
                """
            ],
            task: "compile",
            compared: ["out.txt", "gen.txt", "two.txt"]
        ),
        Case(
            name: "includes: vars, flatten, aliases, excludes, internal, and a templated path",
            files: [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib:
                    taskfile: ./lib
                    vars: {GREETING: hello}
                    aliases: [l]
                    excludes: [unwanted]
                  flat:
                    taskfile: flat.yml
                    flatten: true
                  hidden:
                    taskfile: hidden.yml
                    internal: true
                  os: ./Taskfile_{{OS}}.yml
                tasks:
                  all:
                    deps: [l:greet, from-flat, hidden:secret, os:which]
                    cmds: ['echo all >> all.txt']
                """,
                "lib/Taskfile.yml": """
                version: '3'
                vars:
                  WHO: '{{.GREETING | default "nobody"}} lib'
                tasks:
                  greet: echo '{{.WHO}}' > greet.txt
                  unwanted: echo no > unwanted.txt
                """,
                "flat.yml": "version: '3'\ntasks:\n  from-flat: echo flat > flat.txt\n",
                "hidden.yml": "version: '3'\ntasks:\n  secret: echo secret > secret.txt\n",
                "Taskfile_linux.yml": "version: '3'\ntasks:\n  which: echo linux > os.txt\n",
            ],
            task: "all",
            compared: ["greet.txt", "flat.txt", "secret.txt", "os.txt", "all.txt"],
            absent: ["unwanted.txt"]
        ),
        Case(
            name:
                "command-line variables take a main-file variable's place; task vars with default keep them; CLI_ARGS",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  VERSION: 1.0
                  DERIVED: 'v{{.VERSION}}'
                  LATE: '{{.EXTRA | default "unset when vars ran"}}'
                tasks:
                  t:
                    vars:
                      MODE: '{{.MODE | default "debug"}}'
                      FIXED: fixed
                    cmds:
                      - echo '{{.VERSION}} {{.DERIVED}} {{.LATE}} {{.EXTRA}} {{.MODE}} {{.FIXED}}' > out.txt
                      - echo "[{{.CLI_ARGS}}] {{len .CLI_ARGS_LIST}} {{index .CLI_ARGS_LIST 1}}" >> out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"],
            arguments: ["VERSION=2.5", "EXTRA=x y", "MODE=release", "FIXED=cli", "--", "-v", "a b", "c=d"]
        ),
        Case(
            name:
                "dynamic variables: file and task level, in the task's directory, with the variables in their environment",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  NAME: kiln
                  SHOUT:
                    sh: echo "$NAME" | tr a-z A-Z
                  LINES:
                    sh: printf 'one\\ntwo\\n\\n'
                tasks:
                  t:
                    dir: sub
                    vars:
                      HERE:
                        sh: basename "$(pwd)"
                      AGAIN:
                        sh: echo "$NAME" | tr a-z A-Z
                    cmds:
                      - echo '{{.SHOUT}} {{.HERE}} {{.AGAIN}} {{splitLines .LINES | len}}' > ../out.txt
                """,
                "sub/keep": "",
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "environment variables as variables; the environment wins over env:; env: is read before vars:",
            files: [
                "Taskfile.yml": """
                version: '3'
                env:
                  GREETING: from-taskfile
                  OTHER: other-{{.KILN_COMPAT_VAR}}
                vars:
                  FROM_ENV: '{{.KILN_COMPAT_VAR}}'
                tasks:
                  t:
                    env:
                      TASK_ONLY: task
                    cmds:
                      - echo "$GREETING {{.GREETING}} $OTHER {{.OTHER}} {{.FROM_ENV}} $TASK_ONLY {{.KILN_COMPAT_UNSET | default "none"}}" > out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"],
            environment: ["GREETING": "from-host", "KILN_COMPAT_VAR": "x"]
        ),
        Case(
            name: "special variables",
            files: [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib:
                    taskfile: lib/Taskfile.yml
                    dir: lib/work
                tasks:
                  t:
                    deps: [lib:inner]
                    cmds:
                      - echo '{{.TASK}} {{base .ROOT_DIR | len | printf "%T"}} {{base .ROOT_TASKFILE}} {{base .TASKFILE}} {{.CLI_FORCE}} {{.CLI_SILENT}} {{.PATH_LIST_SEPARATOR}}{{.FILE_PATH_SEPARATOR}}' > out.txt
                """,
                "lib/Taskfile.yml": """
                version: '3'
                tasks:
                  inner:
                    cmds:
                      - echo '{{.TASK}} {{relPath .ROOT_DIR .TASKFILE_DIR}} {{relPath .ROOT_DIR .TASK_DIR}} {{relPath .ROOT_DIR .TASKFILE}} {{relPath .ROOT_DIR .USER_WORKING_DIR}}' > inner.txt
                """,
                "lib/work/keep": "",
            ],
            task: "t",
            compared: ["out.txt", "lib/work/inner.txt"]
        ),
        Case(
            name: "requires: variables set on the command line, by the environment or the Taskfile, with enum",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  MODES: [debug, release]
                tasks:
                  t:
                    requires:
                      vars:
                        - FROM_CLI
                        - KILN_COMPAT_REQUIRED
                        - name: MODE
                          enum: [debug, release]
                        - name: LEVEL
                          enum: {ref: .MODES}
                    cmds: ['echo {{.FROM_CLI}} {{.KILN_COMPAT_REQUIRED}} {{.MODE}} {{.LEVEL}} > out.txt']
                """
            ],
            task: "t",
            compared: ["out.txt"],
            environment: ["KILN_COMPAT_REQUIRED": "env"],
            arguments: ["FROM_CLI=cli", "MODE=release", "LEVEL=debug"]
        ),
        Case(
            name: "requires: a missing variable or one outside its enum stops the task before it runs",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps: [other]
                    requires:
                      vars: [NEVER_SET_ANYWHERE]
                    cmds: ['echo ran > ran.txt']
                  other:
                    requires:
                      vars:
                        - name: MODE
                          enum: [a, b]
                    cmds: ['echo other > other.txt']
                """
            ],
            task: "t",
            compared: [],
            arguments: ["MODE=c"],
            succeeds: false,
            absent: ["ran.txt", "other.txt"]
        ),
        Case(
            name: "dotenv: the main file's and a task's, quoting, expansion, and env: and the environment winning",
            files: [
                "Taskfile.yml": """
                version: '3'
                dotenv: ['.env', 'missing.env', '{{.ROOT_DIR}}/second.env']
                env:
                  C: from-env
                vars:
                  V: '{{.A}}'
                tasks:
                  t:
                    dir: sub
                    dotenv: [task.env]
                    cmds:
                      - printf '%s|' "$A" "$B" "$C" "$D" "$E" "$F" "$G" "$H" "$I" "$J" "$K" "{{.V}}" "{{.D}}" > ../out.txt
                """,
                ".env": """
                # comment
                A=plain
                export B="double ${A} \\\\n x"
                C='single ${A}'
                D=unquoted # trailing comment
                E = spaced
                F: colon
                G=$A-expanded
                H="has # hash"
                I=from-first
                K=from-file
                """,
                "second.env": "I=from-second\nJ=second\n",
                "sub/task.env": "J=task-level\n",
            ],
            task: "t",
            compared: ["out.txt"],
            environment: ["K": "from-host"]
        ),
        Case(
            name: "for: over a list, a variable (split or a list), sources, generates and a matrix, with as:",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  WORDS: 'one two  three'
                  CSV: 'a,b,,c'
                  ARR: [p, q]
                tasks:
                  t:
                    sources: ['*.txt']
                    generates: ['out*']
                    cmds:
                      - for: [x, y]
                        cmd: echo "list {{.ITEM}}" >> out.log
                      - for: {var: WORDS}
                        cmd: echo "words {{.ITEM}}" >> out.log
                      - for: {var: CSV, split: ',', as: V}
                        cmd: echo "split [{{.V}}]" >> out.log
                      - for: {var: ARR}
                        cmd: echo "arr {{.ITEM}}" >> out.log
                      - for: sources
                        cmd: echo "src {{.ITEM}}" >> out.log
                      - for: generates
                        cmd: echo "gen {{.ITEM}}" >> out.log
                      - for: {matrix: {OS: [linux, darwin], ARCH: [amd64, arm64]}}
                        cmd: echo "m {{.ITEM.OS}}-{{.ITEM.ARCH}}" >> out.log
                """,
                "a.txt": "a",
                "b.txt": "b",
            ],
            task: "t",
            compared: ["out.log"]
        ),
        Case(
            name: "- task: calls run in order between commands, with vars rendered in the caller's scope",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  WHO: file
                tasks:
                  main:
                    vars: {LOCAL: caller}
                    cmds:
                      - echo start > out.txt
                      - task: greet
                        vars: {WHO: '{{.LOCAL}}-call', EXTRA: [1, 2]}
                      - echo middle >> out.txt
                      - task: greet
                      - task: fixed
                        vars: {FIXED: from-call, OTHER: seen, N: 2}
                      - echo end >> out.txt
                  greet:
                    cmds:
                      - echo 'hello {{.WHO}} {{.EXTRA | default "none"}} {{.TASK}}' >> out.txt
                  fixed:
                    vars:
                      FIXED: own
                      DERIVED: '{{.OTHER}}-derived-{{add .N 1}}'
                    cmds:
                      - echo '{{.FIXED}} {{.DERIVED}}' >> out.txt
                """
            ],
            task: "main",
            compared: ["out.txt"]
        ),
        Case(
            name: "for: over a list, a variable and a matrix calls a task per item; deps with vars and for",
            files: [
                "Taskfile.yml": """
                version: '3'
                run: when_changed
                vars:
                  ARCHES: amd64 arm64
                tasks:
                  all:
                    deps:
                      - task: prep
                        vars: {KIND: dep}
                      - for: [x, y]
                        task: prep
                        vars: {KIND: '{{.ITEM}}'}
                    cmds:
                      - for: [a, b]
                        task: item
                        vars: {V: 'list-{{.ITEM}}'}
                      - for: {var: ARCHES, as: ARCH}
                        task: item
                        vars: {V: 'var-{{.ARCH}}'}
                      - for: {matrix: {OS: [linux, darwin], N: ['1', '2']}}
                        task: item
                        vars: {V: '{{.ITEM.OS}}-{{.ITEM.N}}'}
                      - task: 'item'
                        vars: {V: 'prep-{{.KIND | default "unset"}}'}
                  prep:
                    cmds: ['echo prep {{.KIND}} > prep-{{.KIND}}.out']
                  item:
                    cmds: ['echo {{.V}} >> items.out']
                """
            ],
            task: "all",
            compared: ["items.out", "prep-dep.out", "prep-x.out", "prep-y.out"]
        ),
        Case(
            name:
                "with run: when_changed a task called twice with the same variables runs once, and a shared dependency too",
            files: [
                "Taskfile.yml": """
                version: '3'
                run: when_changed
                tasks:
                  main:
                    cmds:
                      - task: a
                      - task: b
                      - task: a
                      - task: c
                        vars: {X: 1}
                      - task: c
                        vars: {X: 2}
                      - task: c
                        vars: {X: 1}
                  a:
                    deps: [shared]
                    cmds: ['echo a >> log.out']
                  b:
                    deps: [shared]
                    cmds: ['echo b >> log.out']
                  c:
                    cmds: ['echo c{{.X}} >> log.out']
                  shared:
                    cmds: ['echo shared >> log.out']
                """
            ],
            task: "main",
            compared: ["log.out"]
        ),
        Case(
            name: "a called task and its dependencies run after the commands before the call",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    deps: [first]
                    cmds:
                      - rm -rf dist
                      - mkdir dist
                      - task: build
                      - cat dist/final.txt > result.txt
                  first:
                    cmds: ['echo first > first.txt']
                  build:
                    deps: [gen]
                    cmds: ['cat first.txt dist/gen.txt > dist/final.txt']
                  gen:
                    cmds: ['echo gen > dist/gen.txt']
                """
            ],
            task: "main",
            compared: ["result.txt"]
        ),
        Case(
            name: "a failing command before a call stops the task: the called task never runs",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    cmds:
                      - echo before > before.txt
                      - exit 4
                      - task: called
                      - echo after > after.txt
                  called:
                    cmds: ['echo called > called.txt']
                """
            ],
            task: "main",
            compared: ["before.txt"],
            succeeds: false,
            absent: ["called.txt", "after.txt"]
        ),
        Case(
            name: "calls resolve in the calling file's namespace, ':name' in the main file; names are templates",
            files: [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: ./lib
                tasks:
                  root-task:
                    cmds: ['echo root {{.X}} > root.out']
                  main:
                    vars: {WHICH: entry}
                    cmds:
                      - task: 'lib:{{.WHICH}}'
                """,
                "lib/Taskfile.yml": """
                version: '3'
                tasks:
                  entry:
                    cmds:
                      - task: helper
                        vars: {X: 1}
                      - task: ':root-task'
                        vars: {X: 2}
                  helper:
                    cmds: ['echo helper {{.X}} {{.TASK}} > helper.out']
                """,
            ],
            task: "main",
            compared: ["root.out", "helper.out"]
        ),
        Case(
            name: "status: a task whose tests all succeed is up to date; one that fails runs it",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  MARK: ready.txt
                tasks:
                  main:
                    deps: [done-already, to-do, mixed]
                    cmds: ['echo main >> log.txt']
                  done-already:
                    status: ['test -f {{.MARK}}', 'true']
                    cmds: ['echo done-already >> done.txt']
                  to-do:
                    status: ['test -f {{.MARK}}', 'test -f missing.txt']
                    cmds: ['echo to-do >> todo.txt']
                  mixed:
                    sources: [in.txt]
                    generates: [out.txt]
                    status: ['test -f {{.MARK}}']
                    cmds: ['cp in.txt out.txt', 'echo mixed >> mixed.txt']
                """,
                "ready.txt": "",
                "in.txt": "in",
            ],
            task: "main",
            compared: ["log.txt", "todo.txt", "mixed.txt", "out.txt"],
            absent: ["done.txt"]
        ),
        Case(
            name: "run: always runs a task again for each task that depends on it or calls it",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    deps: [a, b]
                    cmds:
                      - task: log
                      - task: log
                        vars: {X: 1}
                      - task: log
                      - task: once
                      - task: once
                  a:
                    deps: [shared]
                  b:
                    deps: [shared]
                  shared:
                    run: always
                    cmds: ['/bin/echo shared >> shared.txt']
                  log:
                    run: always
                    cmds: ['echo log{{.X | default ""}} >> log.txt']
                  once:
                    run: once
                    cmds: ['echo once >> once.txt']
                """
            ],
            task: "main",
            // `shared` runs twice at once (for a and for b): go-task's own `echo` writes the
            // word and the newline apart, so its two runs could interleave them
            // ("sharedshared" and two newlines, seen once in CI). /bin/echo writes its line once.
            compared: ["shared.txt", "log.txt", "once.txt"]
        ),
        Case(
            name: "commands in bash's syntax, and echo's escapes, mean what go-task's interpreter makes of them",
            files: [
                "Taskfile.yml": #"""
                version: '3'
                tasks:
                  t:
                    cmds:
                      - if [[ -f Taskfile.yml && 2 -gt 1 ]]; then echo 'double brackets' > out.txt; fi
                      - if [ "a" == "a" ]; then echo 'double equals' >> out.txt; fi
                      - echo "tab\there" >> out.txt
                      - echo 'backslash \n kept' >> out.txt
                      - echo {a,b}-x {1..3} >> out.txt
                      - X=hello; echo "${X/l/L} ${X:1:3} ${X^^}" >> out.txt
                      - A=(one two three); echo "${A[1]} ${#A[@]}" >> out.txt
                      - echo $'quoted\tc' >> out.txt
                      - N=3; (( N += 2 )); echo "n=$N $((N * 2))" >> out.txt
                      - cat <<< 'here string' >> out.txt
                      - set -o pipefail; false | true || echo 'pipefail seen' >> out.txt
                      - printf '%s|' posix "$(echo sub)" >> out.txt; echo >> out.txt
                      - echo "${UNSET:-default} ${#X}" >> out.txt
                """#
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "every command stops at its first failing statement (go-task's errexit)",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - echo one > out.txt; false; echo never >> out.txt
                """
            ],
            task: "t",
            compared: ["out.txt"],
            succeeds: false
        ),
        Case(
            name: "cd into a missing directory stops the command before it runs elsewhere",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - cmd: cd missing-dir 2>/dev/null; echo wrong-place > out.txt
                        ignore_error: true
                      - echo next > next.txt
                """
            ],
            task: "t",
            compared: ["next.txt"],
            absent: ["out.txt"]
        ),
        Case(
            name: "set: and shopt: at the file, task and command level",
            files: [
                "Taskfile.yml": """
                version: '3'
                set: [pipefail]
                tasks:
                  t:
                    shopt: [globstar]
                    cmds:
                      - if false | true; then echo piped-ok > out.txt; else echo pipefail > out.txt; fi
                      - echo a/**/*.txt >> out.txt
                      - cmd: if (echo "$NOPE_UNSET") 2>/dev/null; then echo set > u.txt; else echo unset-fails > u.txt; fi
                        set: [u]
                      - if (echo "$NOPE_UNSET") 2>/dev/null; then echo plain-ok >> u.txt; fi
                """,
                "a/x.txt": "",
                "a/b/y.txt": "",
            ],
            task: "t",
            compared: ["out.txt", "u.txt"]
        ),
        Case(
            name: "fromYaml, mustFromYaml, toYaml, sha1sum, sha256sum; a map variable's null entries are dropped",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  DOC: "name: kiln\\nports: [80, 443]\\nnested: {on: true, off: ~}\\nlist: [1, ~, x]"
                  BAD: "a: [unclosed"
                  M:
                    map: {a: 1, gone: ~, deep: {also: ~, kept: [1, ~]}}
                tasks:
                  t:
                    cmds:
                      - |
                        cat > out.txt <<'KILNEOF'
                        {{fromYaml .DOC}}
                        {{(fromYaml .DOC).name}} {{index (fromYaml .DOC).ports 1}} {{(fromYaml .DOC).nested}}
                        {{fromYaml "- a\\n- 2"}}|{{fromYaml "plain"}}|{{fromYaml ""}}|{{fromYaml .BAD}}
                        {{mustFromYaml .DOC | toYaml}}
                        {{sha1sum "hello"}} {{sha256sum "hello"}} {{sha1sum ""}} {{sha256sum .DOC}}
                        {{.M}} {{len .M}} {{toYaml .M}}
                        KILNEOF
                """
            ],
            task: "t",
            compared: ["out.txt"]
        ),
        Case(
            name: "TIMESTAMP (method: timestamp) is when the newest source was modified, a time with Go's methods",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    method: timestamp
                    sources: ['*.txt']
                    cmds:
                      - echo '{{.TIMESTAMP.Year}} {{if gt .TIMESTAMP.Unix 1000000000}}recent{{end}}' > ts.out
                """,
                "a.txt": "a",
            ],
            task: "t",
            compared: ["ts.out"]
        ),
        Case(
            name:
                "top-level output, interval, silent, method and run; an optional include that is missing; a prompt answered by --yes",
            files: [
                "Taskfile.yml": """
                version: '3'
                output: group
                interval: 500ms
                silent: true
                method: checksum
                run: when_changed
                includes:
                  extra:
                    taskfile: ./missing/Taskfile.yml
                    optional: true
                tasks:
                  t:
                    prompt: Really write out.txt?
                    cmds: ['echo asked > out.txt']
                """
            ],
            task: "t",
            compared: ["out.txt"],
            arguments: ["--yes"]
        ),
        Case(
            name: "failfast: a failing dependency fails the task, whose commands never run; prefix: is accepted",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  default:
                    deps: [ok, broken]
                    failfast: true
                    prefix: main
                    cmds: ['echo ran > main.txt']
                  ok: 'echo ok > ok.txt'
                  broken: 'exit 1'
                """
            ],
            task: "default",
            compared: [],
            succeeds: false,
            absent: ["main.txt"]
        ),
        Case(
            name: "preconditions run before a missing dir: is made, and a command can't run there",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    dir: not-yet
                    preconditions: ['ls']
                    cmds: ['echo ran > ../ran.txt']
                """
            ],
            task: "t",
            compared: [],
            succeeds: false,
            absent: ["ran.txt", "not-yet"]
        ),
        Case(
            name: "for: sources and generates on deps, and a matrix whose rows are refs to list variables",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  OSES: [linux, darwin]
                  ARCHES: [amd64]
                tasks:
                  main:
                    deps: [inputs, outputs]
                    cmds:
                      - for:
                          matrix:
                            OS: {ref: .OSES}
                            ARCH: {ref: .ARCHES}
                        task: note
                        vars: {FILE: '{{.ITEM.OS}}-{{.ITEM.ARCH}}'}
                  inputs:
                    sources: ['src/*.txt', {exclude: src/skip.txt}]
                    deps:
                      - for: sources
                        task: copy
                        vars: {FILE: '{{.ITEM}}'}
                    cmds: ['true']
                  outputs:
                    generates: ['gen/*.out']
                    deps:
                      - for: generates
                        task: note
                        vars: {FILE: '{{.ITEM}}'}
                    cmds: ['true']
                  copy:
                    cmds: ['cat {{.FILE}} > copied-{{base .FILE}}']
                  note:
                    cmds: ['echo {{.FILE}} >> notes.txt']
                """,
                "src/a.txt": "a\n",
                "src/b.txt": "b\n",
                "src/skip.txt": "skip\n",
                "gen/x.out": "",
            ],
            task: "main",
            compared: ["notes.txt", "copied-a.txt", "copied-b.txt"],
            absent: ["copied-skip.txt"]
        ),
        Case(
            name: "defer: commands run after the others, the last reached first, with EXIT_CODE after a failure",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  fails:
                    cmds:
                      - defer: echo "first {{.EXIT_CODE}}" >> log.txt
                      - echo one >> log.txt
                      - defer: echo "second code={{.EXIT_CODE}}" >> log.txt
                      - exit 3
                      - defer: echo never-reached >> log.txt
                      - echo never >> log.txt
                """
            ],
            task: "fails",
            compared: ["log.txt"],
            succeeds: false
        ),
        Case(
            name: "defer: after success EXIT_CODE is empty; a failing deferred command changes nothing",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  ok:
                    cmds:
                      - defer: echo "code=[{{.EXIT_CODE}}]" >> log.txt
                      - defer: echo failing >> log.txt && exit 2
                      - cmd: echo "main" >> log.txt
                      - defer:
                          echo "silent" >> log.txt
                        silent: true
                """
            ],
            task: "ok",
            compared: ["log.txt"]
        ),
        Case(
            name: "defer: on a task with ignore_error, a failure is no failure: EXIT_CODE stays empty",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  ignoring:
                    ignore_error: true
                    cmds:
                      - defer: echo "code=[{{.EXIT_CODE}}]" >> log.txt
                      - exit 5
                      - echo after >> log.txt
                """
            ],
            task: "ignoring",
            compared: ["log.txt"]
        ),
        Case(
            name: "defer: after a failed precondition, no deferred command runs",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  guarded:
                    preconditions: ['false']
                    cmds:
                      - defer: echo deferred > guarded.txt
                      - echo ran > guarded.txt
                """
            ],
            task: "guarded",
            compared: [],
            succeeds: false,
            absent: ["guarded.txt"]
        ),
        Case(
            name: "if: on commands — true, false, templates, shell tests, per item of for:",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  ENV: prod
                  ON: 'true'
                  OFF: 'false'
                tasks:
                  t:
                    cmds:
                      - cmd: echo literal-true >> log.txt
                        if: 'true'
                      - cmd: echo literal-false >> log.txt
                        if: 'false'
                      - cmd: echo eq-prod >> log.txt
                        if: '{{eq .ENV "prod"}}'
                      - cmd: echo eq-dev >> log.txt
                        if: '{{eq .ENV "dev"}}'
                      - cmd: echo direct-on >> log.txt
                        if: '{{.ON}}'
                      - cmd: echo direct-off >> log.txt
                        if: '{{.OFF}}'
                      - cmd: echo shell-test >> log.txt
                        if: '[ "{{.ENV}}" = prod ] && test -f Taskfile.yml'
                      - cmd: echo shell-fails >> log.txt
                        if: 'test -f missing-file'
                      - for: [a, b, c]
                        cmd: echo item-{{.ITEM}} >> log.txt
                        if: '[ "{{.ITEM}}" != b ]'
                      - cmd: echo and-or >> log.txt
                        if: '{{and (eq .ENV "prod") (or (eq .ON "true") false)}}'
                      - cmd: echo platforms-and-if >> log.txt
                        platforms: [linux, darwin]
                        if: 'true'
                """
            ],
            task: "t",
            compared: ["log.txt"]
        ),
        Case(
            name: "if: on tasks skips them with their deps; on calls, per item of for:, in the caller's variables",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  ENV: prod
                tasks:
                  main:
                    deps: [skipped, kept]
                    cmds:
                      - task: called
                        vars: {WHO: never}
                        if: 'false'
                      - task: called
                        vars: {WHO: '{{.ENV}}'}
                        if: '{{eq .ENV "prod"}}'
                      - for: [x, y]
                        task: called
                        vars: {WHO: '{{.ITEM}}'}
                        if: '{{ne .ITEM "x"}}'
                      - echo main >> main.txt
                  skipped:
                    if: '{{eq .ENV "dev"}}'
                    deps: [skipped-dep]
                    cmds: ['echo skipped > skipped.txt']
                  skipped-dep:
                    cmds: ['echo dep > skipped-dep.txt']
                  kept:
                    vars:
                      FLAG:
                        sh: echo yes
                    if: '{{eq .FLAG "yes"}}'
                    cmds: ['echo kept > kept.txt']
                  called:
                    cmds: ['echo called {{.WHO}} >> called.txt']
                """
            ],
            task: "main",
            compared: ["main.txt", "kept.txt", "called.txt"],
            absent: ["skipped.txt", "skipped-dep.txt"]
        ),
        Case(
            name: "wildcard task names: MATCH on the command line, in deps and calls, through aliases",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  start-*:
                    aliases: [s-*]
                    vars:
                      SERVICE: '{{index .MATCH 0}}'
                    cmds: ['echo "start {{.SERVICE}}" >> {{.SERVICE}}.txt']
                  '*-to-*':
                    cmds: ['echo "{{index .MATCH 0}} to {{index .MATCH 1}}" > copy.txt']
                  deploy-*:
                    cmds: ['echo "deploy {{.MATCH}}" > deploy.txt']
                  all:
                    deps: [start-web, {task: s-db, vars: {X: '1'}}]
                    cmds:
                      - task: a-b-to-c
                      - task: deploy-*
                """
            ],
            task: "all",
            compared: ["web.txt", "db.txt", "copy.txt", "deploy.txt"]
        ),
        Case(
            name: "a wildcard task run by a name it matches",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:*:
                    cmds: ['echo "building {{index .MATCH 0}} as {{.TASK}}" > out.txt']
                """
            ],
            task: "build:linux-amd64",
            compared: ["out.txt"]
        ),
        Case(
            name:
                "names in included files: each include level prefixes its namespace or takes off one ':', flattened levels do neither",
            files: [
                "Taskfile.yml": """
                version: '3'
                includes:
                  a: ./A.yml
                  c: ./C.yml
                tasks:
                  u: echo root > root-{{.BY}}.txt
                  all:
                    cmds: [{task: 'a:b:call'}, {task: 'a:b:dep'}, {task: 'a:b:local'}, {task: 'a:up'}, {task: 'c:flat'}, {task: 'c:flat-up'}]
                """,
                "A.yml": """
                version: '3'
                includes:
                  b: ./B.yml
                tasks:
                  u: echo a > a-{{.BY}}.txt
                  up: {cmds: [{task: ':u', vars: {BY: aup}}]}
                """,
                "B.yml": """
                version: '3'
                tasks:
                  call: {cmds: [{task: ':u', vars: {BY: bcall}}]}
                  dep: {deps: [{task: ':u', vars: {BY: bdep}}], cmds: ['echo b > b-dep.txt']}
                  local: {cmds: [{task: x}]}
                  x: echo b > b-x.txt
                """,
                "C.yml": """
                version: '3'
                includes:
                  d: {taskfile: ./D.yml, flatten: true}
                tasks:
                  u: echo c > c-{{.BY}}.txt
                """,
                "D.yml": """
                version: '3'
                tasks:
                  flat: {cmds: [{task: u, vars: {BY: dflat}}]}
                  flat-up: {cmds: [{task: ':u', vars: {BY: dflatup}}]}
                """,
            ],
            task: "all",
            compared: [
                "a-bcall.txt", "a-bdep.txt", "root-aup.txt", "c-dflat.txt", "root-dflatup.txt", "b-dep.txt", "b-x.txt",
            ],
            absent: ["root-bcall.txt", "root-bdep.txt", "a-aup.txt", "root-dflat.txt", "c-dflatup.txt"]
        ),
        Case(
            name: "a call in an included file to a name only the main file has fails",
            files: [
                "Taskfile.yml": "version: '3'\nincludes:\n  a: ./A.yml\ntasks:\n  f: echo root-f > wrong.txt\n",
                "A.yml": "version: '3'\ntasks:\n  g: {cmds: [{task: f}]}\n",
            ],
            task: "a:g",
            compared: [],
            succeeds: false,
            absent: ["wrong.txt"]
        ),
        Case(
            name: "platforms: on calls, where go-task's ignoring them changes nothing",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  all:
                    cmds:
                      - task: mac
                        platforms: [darwin]
                      - task: here
                        platforms: [linux, darwin]
                      - for: [a, b]
                        task: here
                        vars: {ITEM_NAME: '{{.ITEM}}'}
                        platforms: [linux]
                      - echo all >> log.txt
                  mac:
                    platforms: [darwin]
                    cmds: ['echo mac > mac.txt']
                  here:
                    cmds: ['echo here {{.ITEM_NAME | default "-"}} >> log.txt']
                """
            ],
            task: "all",
            compared: ["log.txt"],
            absent: ["mac.txt"]
        ),
        Case(
            name: "calls made by a called task wait for that task's turn",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  all:
                    cmds: [{task: one}, {task: two}, {task: three}]
                  one: {cmds: ['sleep 0.3; echo one >> log.txt']}
                  two: {cmds: [{task: inner}, {task: deeper}]}
                  inner: {cmds: ['echo inner >> log.txt']}
                  deeper: {cmds: [{task: deepest}]}
                  deepest: {cmds: ['echo deepest >> log.txt']}
                  three: {cmds: ['echo three >> log.txt']}
                """
            ],
            task: "all",
            compared: ["log.txt"]
        ),
        Case(
            name: "ignore_error on calls: the caller goes on after the called task fails, per call and per item",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    cmds:
                      - echo before >> log.txt
                      - task: flaky
                        ignore_error: true
                      - for: [x, y]
                        task: flaky
                        vars: {WHY: '{{.ITEM}}'}
                        ignore_error: true
                      - task: fine
                        ignore_error: true
                      - echo after >> log.txt
                  flaky:
                    cmds: ['echo flaky-{{.WHY | default "first"}} >> log.txt', 'exit 3', 'echo never >> log.txt']
                  fine:
                    cmds: ['echo fine >> log.txt']
                """
            ],
            task: "main",
            compared: ["log.txt"]
        ),
        Case(
            name: "ignore_error on a call doesn't excuse the same task where it is a plain dependency",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    deps: [flaky]
                    cmds:
                      - task: flaky
                        ignore_error: true
                      - echo after > after.txt
                  flaky:
                    cmds: ['echo flaky > flaky.txt', 'exit 3']
                """
            ],
            task: "main",
            compared: ["flaky.txt"],
            succeeds: false,
            absent: ["after.txt"]
        ),
        Case(
            name: "timeout: stops a command; ignore_error covers that, not a test (if:) that ran out; EXIT_CODE is 124",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - defer: echo "code=[{{.EXIT_CODE}}]" >> log.txt
                      - cmd: sleep 5; echo late > late.txt
                        timeout: 300ms
                        ignore_error: true
                      - echo after >> log.txt
                      - cmd: sleep 5
                        timeout: 200ms
                      - echo never >> log.txt
                  test:
                    cmds:
                      - defer: echo "code=[{{.EXIT_CODE}}]" >> test.txt
                      - cmd: echo tested > tested.txt
                        if: sleep 5
                        timeout: 0.3s
                        ignore_error: true
                      - echo never >> test.txt
                  both:
                    deps: [t, test]
                """
            ],
            task: "both",
            compared: ["log.txt", "test.txt"],
            succeeds: false,
            absent: ["late.txt", "tested.txt"]
        ),
        Case(
            name: "timeout: beside defer: stops the deferred command, and its failure changes nothing",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - defer: sleep 5; echo late > late.txt
                        timeout: 200ms
                      - defer: echo "code=[{{.EXIT_CODE}}]" >> log.txt
                      - echo main >> log.txt
                """
            ],
            task: "t",
            compared: ["log.txt"],
            absent: ["late.txt"]
        ),
        Case(
            name: "timeout: on a dependency and on a call bounds the called task; ignore_error on the call covers it",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps:
                      - task: quick
                        timeout: 1m
                    cmds:
                      - task: slow
                        vars: {WHO: first}
                        timeout: 300ms
                        ignore_error: true
                      - echo after >> log.txt
                      - task: slow
                        vars: {WHO: second}
                        timeout: 1h30m
                  quick: echo quick >> log.txt
                  slow:
                    cmds:
                      - '{{if eq .WHO "first"}}sleep 5{{end}}'
                      - echo "slow {{.WHO}}" >> log.txt
                """
            ],
            task: "t",
            compared: ["log.txt"]
        ),
        Case(
            name: "timeout: on a dependency that runs out fails the task that needs it",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    deps:
                      - task: slow
                        timeout: 200ms
                    cmds:
                      - echo t > t.txt
                  slow:
                    cmds:
                      - sleep 5
                      - echo slow > slow.txt
                """
            ],
            task: "t",
            compared: [],
            succeeds: false,
            absent: ["t.txt", "slow.txt"]
        ),
        Case(
            name:
                "defer: {task:} calls run when the task ends, after a failure too, the last written first, after the deferred commands",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - defer: {task: clean, vars: {WHAT: first}}
                      - echo main >> log.txt
                      - defer: {task: clean, vars: {WHAT: second}, silent: true}
                      - defer: echo "deferred command [{{.EXIT_CODE}}]" >> log.txt
                      - exit 3
                      - echo never >> log.txt
                  clean:
                    deps: [prepare]
                    cmds: ['echo "clean {{.WHAT}}" >> log.txt']
                  prepare:
                    run: always
                    cmds: ['echo prepare >> prepare.txt']
                """
            ],
            task: "t",
            compared: ["log.txt", "prepare.txt"],
            succeeds: false
        ),
        Case(
            name: "defer: {task:} written after the failing command isn't reached: it doesn't run",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - echo main >> log.txt
                      - exit 3
                      - defer: {task: clean}
                  clean: echo clean > clean.txt
                """
            ],
            task: "t",
            compared: ["log.txt"],
            succeeds: false,
            absent: ["clean.txt"]
        ),
        Case(
            name: "defer: {task:} whose task fails changes nothing; timeout: beside it stops it",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - defer: {task: failing}
                      - defer: {task: clean}
                      - defer: {task: slow}
                        timeout: 200ms
                      - echo main >> log.txt
                  failing:
                    cmds: ['echo failing >> log.txt', 'exit 1']
                  clean: echo clean >> log.txt
                  slow:
                    cmds: ['sleep 5', 'echo late > late.txt']
                """
            ],
            task: "t",
            compared: ["log.txt"],
            absent: ["late.txt"]
        ),
        Case(
            name: "defer: {task:} before a call and in a called task: the caller waits for the clean-up, then goes on",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  outer:
                    cmds:
                      - task: inner
                      - echo outer after >> log.txt
                  inner:
                    vars:
                      NAME: inner
                    cmds:
                      - defer: {task: clean, vars: {WHO: 'deferred {{.NAME}}'}}
                      - task: clean
                        vars: {WHO: 'called {{.NAME}}'}
                      - echo inner >> log.txt
                  clean: echo "clean {{.WHO}}" >> log.txt
                """
            ],
            task: "outer",
            compared: ["log.txt"]
        ),
        Case(
            name:
                "defer: commands written before a call run when the task ends, in their order among the deferred calls, with EXIT_CODE",
            files: [
                "Taskfile.yml": """
                version: '3'
                vars:
                  MARK: work.tmp
                tasks:
                  t:
                    cmds:
                      - defer: rm -f {{.MARK}}; echo "removed {{.MARK}} [{{.EXIT_CODE}}]" >> log.txt
                      - touch {{.MARK}}
                      - defer: {task: note}
                      - task: build
                      - defer: echo "last [{{.EXIT_CODE}}]" >> log.txt
                      - echo done >> log.txt
                      - exit 4
                  build: test -f work.tmp && echo built >> log.txt
                  note: echo noted >> log.txt
                """
            ],
            task: "t",
            compared: ["log.txt"],
            succeeds: false,
            absent: ["work.tmp"]
        ),
        Case(
            name: "a task with calls and sources/generates is decided whole at its start: up to date, none of it runs",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  docs:
                    sources: [in.txt]
                    generates: [out.txt]
                    cmds:
                      - echo start >> log.txt
                      - task: gen
                        vars: {WHAT: call}
                      - cp in.txt out.txt
                      - task: gen
                      - echo end >> log.txt
                  gen:
                    cmds: ['echo gen {{.WHAT | default "plain"}} >> log.txt']
                  after:
                    deps: [docs]
                    cmds: ['echo after >> log.txt']
                """,
                "in.txt": "one",
            ],
            task: "after",
            compared: ["log.txt", "out.txt"],
            reruns: [
                Rerun(),
                Rerun(files: ["in.txt": "two"]),
                Rerun(),
                Rerun(files: ["out.txt": nil]),
                Rerun(),
            ]
        ),
        Case(
            name: "a task with calls and status: is up to date when its tests succeed, and its calls aren't made",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  setup:
                    status: ['test -f ready.mark']
                    cmds:
                      - task: install
                      - touch ready.mark
                      - echo setup >> log.txt
                  install:
                    cmds: ['echo install >> log.txt']
                """
            ],
            task: "setup",
            compared: ["log.txt"],
            reruns: [Rerun(), Rerun(files: ["ready.mark": nil]), Rerun()]
        ),
        Case(
            name: "a task with calls and sources that fails after a call runs whole again the next time",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    sources: [in.txt]
                    cmds:
                      - echo first >> log.txt
                      - task: helper
                      - test ! -f fail.flag
                      - echo last >> log.txt
                  helper:
                    cmds: ['echo helper >> log.txt']
                """,
                "in.txt": "in",
                "fail.flag": "",
            ],
            task: "t",
            compared: ["log.txt"],
            succeeds: false,
            reruns: [Rerun(files: ["fail.flag": nil]), Rerun()]
        ),
        Case(
            name:
                "for: sources on a call and on a command after it, in a task with sources: the task's files, up to date the next time",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    sources: ['*.in']
                    cmds:
                      - for: sources
                        task: show
                        vars: {FILE: '{{.ITEM}}'}
                      - for: sources
                        cmd: echo cmd {{.ITEM}} >> seen.txt
                  show:
                    cmds: ['echo {{.FILE}} >> seen.txt']
                """,
                "a.in": "",
                "b.in": "",
            ],
            task: "t",
            compared: ["seen.txt"],
            reruns: [Rerun(), Rerun(files: ["c.in": ""])]
        ),
        Case(
            name: "a shell test in a call's if: runs when the call is reached, in the task's directory and environment",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    dir: sub
                    env: {MODE: on}
                    cmds:
                      - echo first >> ../log.txt
                      - task: a
                        if: test -f flag.a
                      - touch flag.b
                      - task: b
                        if: '[ -f flag.b ] && [ "$MODE" = on ]'
                      - for: [x, y]
                        task: c
                        vars: {W: '{{.ITEM}}'}
                        if: test {{.ITEM}} = y
                      - task: a
                        if: 'false || exit 3'
                      - echo last >> ../log.txt
                  a:
                    cmds: ['echo a >> log.txt']
                  b:
                    deps: [bdep]
                    cmds: ['echo b >> log.txt']
                  bdep:
                    cmds: ['echo bdep >> log.txt']
                  c:
                    cmds: ['echo c {{.W}} >> log.txt']
                """,
                "sub/.keep": "",
            ],
            task: "t",
            compared: ["log.txt", "sub/flag.b"]
        ),
        Case(
            name:
                "a task called twice, the first call's shell test failing: the second call makes it, after the first step",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    cmds:
                      - echo one >> log.txt
                      - task: a
                        if: test -f ready.flag
                      - touch ready.flag
                      - echo two >> log.txt
                      - task: a
                        if: test -f ready.flag
                      - echo three >> log.txt
                  a:
                    deps: [adep]
                    cmds: ['echo a >> log.txt']
                  adep:
                    cmds: ['echo adep >> log.txt']
                """
            ],
            task: "t",
            compared: ["log.txt"]
        ),
        Case(
            name:
                "a shell test in a task's if: runs when the task is reached, before its dependencies; when it fails none of it runs",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    deps: [maybe, never]
                    cmds:
                      - echo main >> log.txt
                      - task: called
                  maybe:
                    if: test -f flag.txt
                    deps: [dep]
                    cmds: ['echo maybe >> a.txt']
                  never:
                    dir: sub
                    if: '[ "$MODE" = on ] && [ -f here.txt ]'
                    deps: [dep2]
                    cmds:
                      - echo never >> ../b.txt
                      - task: helper
                  called:
                    if: test -f flag.txt
                    cmds: ['echo called >> log.txt']
                  dep:
                    cmds: ['echo dep >> a.txt']
                  dep2:
                    cmds: ['echo dep2 >> b.txt']
                  helper:
                    cmds: ['echo helper >> b.txt']
                """,
                "sub/here.txt": "",
            ],
            task: "main",
            compared: ["log.txt", "a.txt", "b.txt"],
            environment: ["MODE": "on"],
            reruns: [Rerun(files: ["flag.txt": ""]), Rerun(files: ["sub/here.txt": nil])]
        ),
        Case(
            name: "ignore_error: true on a task with calls covers its commands and the failures of the tasks it calls",
            files: [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  t:
                    ignore_error: true
                    cmds:
                      - echo one >> log.txt
                      - exit 3
                      - task: failing
                      - echo after >> log.txt
                      - exit 5
                      - echo last >> log.txt
                  failing:
                    cmds: ['echo failing >> log.txt', 'exit 4', 'echo never >> log.txt']
                """
            ],
            task: "t",
            compared: ["log.txt"]
        ),
    ]

    @Test("kiln leaves what go-task leaves", arguments: cases)
    func sameResult(example: Case) async throws {
        let task = try Peers.executable("task")
        let scratch = try TemporaryDirectory(prefix: "kiln-gotask")
        defer { scratch.remove() }
        for tool in ["go-task", "kiln"] {
            for (path, text) in example.files { try scratch.write(tool + "/" + path, text) }
        }
        let goTask = try runProgram(
            task,
            ["--silent", example.task] + example.arguments,
            in: scratch.path("go-task"),
            environment: example.environment
        )
        #expect((goTask.status == 0) == example.succeeds, "go-task: \(goTask.output)")
        let kiln = try await KilnProcess.run(
            ["run", "--silent", example.task] + example.arguments,
            in: scratch.path("kiln"),
            environment: example.environment
        )
        #expect((kiln.status == 0) == example.succeeds, "\(kiln)")
        for (number, rerun) in example.reruns.enumerated() {
            for tool in ["go-task", "kiln"] {
                for (path, text) in rerun.files {
                    if let text {
                        try scratch.write(tool + "/" + path, text)
                    } else {
                        unlink(scratch.path(tool + "/" + path))
                    }
                }
            }
            let goTask = try runProgram(
                task,
                ["--silent", example.task] + example.arguments,
                in: scratch.path("go-task"),
                environment: example.environment
            )
            #expect((goTask.status == 0) == rerun.succeeds, "go-task, run \(number + 2): \(goTask.output)")
            let kiln = try await KilnProcess.run(
                ["run", "--silent", example.task] + example.arguments,
                in: scratch.path("kiln"),
                environment: example.environment
            )
            #expect((kiln.status == 0) == rerun.succeeds, "kiln, run \(number + 2): \(kiln)")
        }
        for path in example.compared {
            let expected = scratch.read("go-task/" + path)
            #expect(expected != nil, "go-task left no \(path)")
            #expect(scratch.read("kiln/" + path) == expected, "\(path)")
        }
        for path in example.absent {
            #expect(scratch.read("go-task/" + path) == nil, "go-task left \(path)")
            #expect(scratch.read("kiln/" + path) == nil, "kiln left \(path)")
        }
    }
}
