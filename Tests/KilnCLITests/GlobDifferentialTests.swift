import Foundation
import KilnTestSupport
import Testing

/// `sources:` patterns mean what go-task's mean: for each pattern list, the real go-task
/// (`go-task-bin` from PyPI) lists the files with `for: sources`, kiln with an `each: sources`
/// task, on identical copies of a tree with hidden files, hidden directories, nested
/// directories, names with spaces and (in a second tree) symbolic links; the two lists must be
/// equal. Exclusions (`- exclude: PATTERN`) are applied in order, the last match deciding.
@Suite("sources globs, differentially against go-task")
struct GlobDifferentialTests {
    /// A tree with the cases globs differ on: hidden files and directories at several depths.
    static let plainTree: [String] = [
        "a/f1", "a/.dot", "a/b/f2", "a/b/c/f3", "a/.hid/f4", "a/b/.d2", "x/y/b", "x/b", "top.c", ".top/t.c",
        "src/main.c", "src/util.c", "src/util.h", "src/sub/deep.c", "src/.gen/hidden.c", "lib/lvm.c", "lib/lapi.c",
        "lib/ldo.c", "docs/a b.md", "docs/read.me", "n1/n2/n3/n4/leaf.txt",
    ]

    static let plainCases: [[String]] = [
        ["a/**"], ["a/**/*"], ["**/b"], ["a/**/f3"], ["a/**/c/*"], ["**/*.c"], ["*"], ["a/*"], ["**"], ["**/*"],
        ["a/b/**/*"], ["a/.*"], ["a/**/.*"], ["a/b"], ["a/**/b/**"], ["src/*.c"], ["src/**/*.c"],
        ["src/**/*.{c,h}"], ["src/*.{c,h}"], ["src/{main,util}.c"], ["lib/l*.c"], ["lib/lvm.c", "lib/l*.c"],
        ["src/**/*.c", "!src/sub/*.c"], ["!src/main.c", "src/*.c"], ["src/*.c", "!src/main.c"],
        ["src/*.c", "!src/main.c", "src/main.c"], [".top/*"], ["*/t.c"], [".*/*.c"], ["src/[mu]*.c"],
        ["src/?ain.c"], ["docs/*"], ["**/**"], ["a/**/**/f3"], ["nothing/**/*.c"], ["a/**/f*"], ["n1/**/*.txt"],
        ["n1/**"], ["**/n3/**"], ["src/*.[ch]"], ["**/.*"], ["a/b/**"], ["lib/l{vm,do}.c"], ["x/**/b", "!x/b"],
        ["./src/*.c"], ["src//*.h"], ["lib/*.c", "!lib/l*.c"], ["a/*/*"], ["*/*/f3", "a/*/*/f3"],
    ]

    /// A tree with symbolic links: one to a directory (go-task then walks `**` as a shell does)
    /// and one to a file.
    static let linkTree: [String] = ["s/real/r.c", "s/real/.h.c", "s/.hidden/h.c", "s/top.c", "plain/p.c"]
    static let linkCases: [[String]] = [
        ["**/*.c"], ["s/**/*.c"], ["s/*/*.c"], ["s/**"], ["**/r.c"], ["s/link/*"], ["plain/**/*.c"], ["*/*.c"],
    ]

    @Test("kiln and go-task match the same files for every pattern list", arguments: [false, true])
    func sameFiles(withLinks: Bool) async throws {
        let task = try Peers.executable("task")
        let tree = withLinks ? Self.linkTree : Self.plainTree
        let cases = withLinks ? Self.linkCases : Self.plainCases
        let scratch = try TemporaryDirectory(prefix: "kiln-glob-diff")
        defer { scratch.remove() }
        var mismatches: [String] = []
        for (index, patterns) in cases.enumerated() {
            // `!P` in a case stands for go-task's exclusion, `{exclude: P}`.
            let quoted = patterns.map { pattern in
                let text = pattern.hasPrefix("!") ? String(pattern.dropFirst()) : pattern
                let yaml = "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
                return pattern.hasPrefix("!") ? "{exclude: \(yaml)}" : yaml
            }.joined(separator: ", ")
            // Each tool gets its own fresh copy: neither sees the other's state directory.
            let goTaskTree = try makeTree(tree, links: withLinks, in: scratch.path("\(index)-go-task"))
            let kilnTree = try makeTree(tree, links: withLinks, in: scratch.path("\(index)-kiln"))
            let goTaskList = scratch.path("\(index)-go-task.list"), kilnList = scratch.path("\(index)-kiln.list")
            try """
            version: '3'
            tasks:
              t:
                sources: [\(quoted)]
                cmds:
                  - for: sources
                    cmd: printf '%s\\n' '{{.ITEM}}' >> \(goTaskList)
            """.write(toFile: goTaskTree + "/Taskfile.yml", atomically: true, encoding: .utf8)
            try """
            version: '3'
            tasks:
              t:
                each: sources
                sources: [\(quoted)]
                cmds: ["printf '%s\\\\n' '{{.source}}' >> \(kilnList)"]
            """.write(toFile: kilnTree + "/Taskfile.yml", atomically: true, encoding: .utf8)
            let goTaskRun = try runProgram(task, ["--silent", "t"], in: goTaskTree)
            let kilnRun = try await KilnProcess.run(["run", "t"], in: kilnTree)
            guard goTaskRun.status == 0, kilnRun.status == 0 else {
                mismatches.append(
                    "\(patterns): go-task exited \(goTaskRun.status) (\(goTaskRun.output)), kiln \(kilnRun)"
                )
                continue
            }
            let expected = lines(goTaskList), actual = lines(kilnList)
            if expected != actual {
                mismatches.append("\(patterns):\n  go-task: \(expected)\n  kiln:    \(actual)")
            }
        }
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) of \(cases.count) pattern lists differ:\n\(mismatches.joined(separator: "\n"))"
        )
    }

    /// Trees with `.gitignore` files (each a path and its lines), for `use_gitignore: true`.
    static let gitignoreTree: [String] = [
        "a.go", "b.log", "keep.log", "build/out.go", "build/keep.txt", "top.txt", "sub/top.txt", "docs/x/y/z.tmp",
        "docs/y.tmp", "docs/x/a.tmp", "trailing.txt", "sub/local.txt", "sub/anchored.txt", "sub/z/anchored.txt",
        "sub/deep/f.go", "sub/important.log", "sub/c.go", "other/local.txt", "sub/notes.md", "sub/README.md",
        "#hash.txt", "a/b/c/d.txt", "a/x/b/e.txt", "q1.txt", "qq.txt", "logs/2024/x.log", "logs/keep/y.txt",
        ".hidden.txt", "sub/.hidden/h.go",
    ]
    static let gitignoreCases: [(name: String, files: [String: String], git: Bool, directory: String?)] = [
        (
            "names, directories, anchors, negation, comments, escapes, trailing spaces",
            [".gitignore": "*.log\nbuild/\n/top.txt\n!keep.log\n# comment\ntrailing.txt   \n\\#hash.txt\n"], true, nil
        ),
        (
            "a nested .gitignore: below its directory only, over the root's",
            [
                ".gitignore": "*.log\n*.md\n",
                "sub/.gitignore": "local.txt\n/anchored.txt\ndeep/\n!important.log\n!README.md\n",
            ], true, nil
        ),
        (
            "a file under an ignored directory stays ignored; ** and classes",
            [
                ".gitignore":
                    "build/\n!build/keep.txt\ndocs/**/*.tmp\na/**/d.txt\nq?.txt\n[ab].go\nlogs/**\n!logs/keep/y.txt\n.hidden*\n"
            ],
            true, nil
        ),
        ("the task in a directory below the repository's root", [".gitignore": "*.go\nsub/local.txt\n"], true, "sub"),
        ("outside a git repository nothing is left out", [".gitignore": "*\n"], false, nil),
    ]

    @Test("use_gitignore: true leaves out the files go-task leaves out (each: sources and for: sources)")
    func gitignoredFiles() async throws {
        let task = try Peers.executable("task")
        let scratch = try TemporaryDirectory(prefix: "kiln-gitignore-diff")
        defer { scratch.remove() }
        var mismatches: [String] = []
        let patterns = "['**/*.go', '**/*.log', '**/*.txt', '**/*.md', '**/*.tmp']"
        for (index, example) in Self.gitignoreCases.enumerated() {
            var lists: [String: [String]] = [:]
            for tool in ["go-task", "kiln-each", "kiln-for"] {
                let tree = try makeTree(Self.gitignoreTree, links: false, in: scratch.path("\(index)-\(tool)"))
                for (path, text) in example.files {
                    try text.write(toFile: tree + "/" + path, atomically: false, encoding: .utf8)
                }
                if example.git { try requireGit(["init", "-q"], in: tree) }
                let list = scratch.path("\(index)-\(tool).list")
                let dir = example.directory.map { "    dir: \($0)\n" } ?? ""
                let body =
                    tool == "kiln-each"
                    ? "    each: sources\n    cmds: [\"printf '%s\\\\n' '{{.source}}' >> \(list)\"]\n"
                    : "    cmds:\n      - for: sources\n        cmd: printf '%s\\n' '{{.ITEM}}' >> \(list)\n"
                let taskfile =
                    "version: '3'\ntasks:\n  t:\n\(dir)    use_gitignore: true\n    sources: \(patterns)\n" + body
                try taskfile.write(toFile: tree + "/Taskfile.yml", atomically: true, encoding: .utf8)
                if tool == "go-task" {
                    let run = try runProgram(task, ["--silent", "t"], in: tree)
                    #expect(run.status == 0, "\(example.name): go-task: \(run.output)")
                } else {
                    let run = try await KilnProcess.run(["run", "t"], in: tree)
                    #expect(run.status == 0, "\(example.name): \(tool): \(run)")
                }
                lists[tool] = lines(list)
            }
            // The lists aren't empty, and the .gitignore files leave some files out (in a repository).
            let all = Self.gitignoreTree.filter { file in
                [".go", ".log", ".txt", ".md", ".tmp"].contains { file.hasSuffix($0) }
                    && (example.directory.map { file.hasPrefix($0 + "/") } ?? true)
            }
            let found = lists["go-task"] ?? []
            #expect(
                !found.isEmpty && (example.git ? found.count < all.count : found.count == all.count),
                "\(example.name): \(found)"
            )
            for tool in ["kiln-each", "kiln-for"] where lists[tool] != lists["go-task"] {
                mismatches.append(
                    "\(example.name):\n  go-task: \(lists["go-task"] ?? [])\n  \(tool): \(lists[tool] ?? [])"
                )
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }

    /// Makes `files` (each holding its own name) under `directory`, plus the Taskfile both tools
    /// see; with `links`, `s/link` → `real` and `s/alias.c` → `top.c`.
    private func makeTree(_ files: [String], links: Bool, in directory: String) throws -> String {
        for file in files {
            let path = directory + "/" + file
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true
            )
            try file.write(toFile: path, atomically: false, encoding: .utf8)
        }
        if links {
            try FileManager.default.createSymbolicLink(atPath: directory + "/s/link", withDestinationPath: "real")
            try FileManager.default.createSymbolicLink(atPath: directory + "/s/alias.c", withDestinationPath: "top.c")
        }
        return directory
    }

    /// The lines of a list file, sorted (kiln's jobs finish in any order); none when absent.
    private func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).sorted()
    }
}
