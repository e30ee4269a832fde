import Foundation

/// `kiln-bench git`: on a generated repository of 100k files with a handful of changes, the time
/// kiln takes to find the changed files and what they affect (`kiln affected`) beside
/// `git status --porcelain`, and a pre-commit hook with nothing affected (`kiln hook pre-commit`)
/// beside lefthook's (`lefthook run pre-commit`), all in one run, median of 5.
struct GitBenchmark {
    var kiln: String
    var lefthook: String
    var files: Int
    var workDirectory: String

    func run() throws {
        let directory = workDirectory + "/git-\(files / 1000)k"
        try generate(directory)
        // A handful of changes: two edits, one staged file, two untracked files.
        try "edited\n".write(toFile: directory + "/src/d5/f5.c", atomically: false, encoding: .utf8)
        try "edited\n".write(toFile: directory + "/src/d50/f7.c", atomically: false, encoding: .utf8)
        try "new\n".write(toFile: directory + "/src/d9/new.c", atomically: false, encoding: .utf8)
        try "notes\n".write(toFile: directory + "/notes.txt", atomically: false, encoding: .utf8)
        try "# readme, staged\n".write(toFile: directory + "/README.md", atomically: false, encoding: .utf8)
        _ = runChild(["/usr/bin/git", "add", "README.md"], in: directory)

        func median(_ arguments: [String], environment: [String: String] = [:], before: () -> Void = {}) -> Double {
            before()
            // Warm the page cache and kiln's Taskfile cache.
            _ = timeDirect(arguments, in: directory, environment: environment)
            return (0..<5).map { _ in
                before()
                return timeDirect(arguments, in: directory, environment: environment)
            }.sorted()[2]
        }
        let gitStatus = median(["/usr/bin/git", "status", "--porcelain"])
        let kilnAffected = median([kiln, "affected", "lint"])
        let kilnHook = median([kiln, "hook", "pre-commit"])  // the launcher answers, from the plan the warm-up saved
        // The Taskfile touched just before: the saved plan is out of date, so the full hook runs.
        let kilnFullHook = median([kiln, "hook", "pre-commit"]) {
            _ = runChild(["/usr/bin/touch", "Taskfile.yml"], in: directory)
        }
        let lefthookHook = median([lefthook, "run", "pre-commit"])

        // Hashing through git: `check` reads every source; each source is touched (same bytes) and
        // git refreshes its index, so every file looks changed to a stat cache and only content
        // can tell. From the index (no file read), or by reading each file.
        let sources = "src"
        // Whole seconds apart each time: git's stat check (built without nanoseconds) sees a
        // touch within the same second as none, and keeps the old times in its index.
        var touchTime = Int(Date().timeIntervalSince1970) - 10_000
        func touchEverything() {
            touchTime += 2
            _ = runChild(
                ["/usr/bin/find", sources, "-name", "*.c", "-exec", "touch", "-d", "@\(touchTime)", "{}", "+"],
                in: directory
            )
            _ = runChild(["/usr/bin/git", "status", "--porcelain"], in: directory)
        }
        // Each way from its own state: records keep the algorithm that made them.
        func upToDateAfterTouch(_ environment: [String: String]) -> Double {
            try? FileManager.default.removeItem(atPath: directory + "/.kiln")
            _ = runChild([kiln, "run", "check"], in: directory, environment: environment, timeout: 600)
            return median([kiln, "run", "check"], environment: environment, before: touchEverything)
        }
        let fromIndex = upToDateAfterTouch([:])
        let reading = upToDateAfterTouch(["KILN_GIT_HASHES": "0"])

        print("kiln-bench git — a repository of \(files) files, 2 edited, 1 staged, 2 untracked; median of 5 runs\n")
        var table = Table(headers: ["what", "command", "median ms", "kiln ÷ peer"])
        table.add(["changed files", "git status --porcelain", format(gitStatus * 1000, digits: 1), ""])
        table.add([
            "changed files + affected tasks", "kiln affected lint", format(kilnAffected * 1000, digits: 1),
            format(kilnAffected / gitStatus) + "×",
        ])
        table.add([
            "pre-commit, nothing affected", "lefthook run pre-commit", format(lefthookHook * 1000, digits: 1), "",
        ])
        table.add([
            "pre-commit, nothing affected", "kiln hook pre-commit", format(kilnHook * 1000, digits: 1),
            format(kilnHook / lefthookHook) + "×",
        ])
        table.add([
            "pre-commit, Taskfile just touched", "kiln hook pre-commit (full)", format(kilnFullHook * 1000, digits: 1),
            format(kilnFullHook / lefthookHook) + "×",
        ])
        table.add([
            "\(files) sources touched: up to date", "kiln run check (KILN_GIT_HASHES=0: read)",
            format(reading * 1000, digits: 1), "",
        ])
        table.add([
            "\(files) sources touched: up to date", "kiln run check (git index blob ids)",
            format(fromIndex * 1000, digits: 1), format(fromIndex / reading) + "×",
        ])
        print(table.render())
        print(
            "\nTargets: finding the changed files ≤ git status --porcelain; kiln hook pre-commit with nothing affected ≤ 20 ms."
        )
        print("Each command is spawned directly (no shell or time(1) in front): start-up is part of a hook's time.")
        print(
            "kiln hook pre-commit is answered by the launcher from the plan the previous hook saved; with the Taskfile"
        )
        print(
            "just touched, that plan is out of date and the full hook (libKilnCLI.so loaded, the Taskfile read) answers."
        )
    }

    /// The repository, made once: `files` small C files in directories of 1,000, a Taskfile whose
    /// lint task looks at docs/*.md only (and whose check task reads every C file), and a
    /// lefthook.yml doing the same as lint.
    private func generate(_ directory: String) throws {
        guard !FileManager.default.fileExists(atPath: directory + "/.git/kiln-bench-ready-2") else {
            _ = runChild(["/usr/bin/git", "checkout", "-q", "--", "."], in: directory)
            _ = runChild(["/usr/bin/git", "reset", "-q"], in: directory)
            _ = runChild(["/usr/bin/git", "clean", "-qfd", "src", "notes.txt"], in: directory)
            return
        }
        try? FileManager.default.removeItem(atPath: directory)
        for folder in 0..<(files / 1000) {
            let path = directory + "/src/d\(folder)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for file in 0..<1000 {
                try "int f\(folder)_\(file);\n".write(toFile: path + "/f\(file).c", atomically: false, encoding: .utf8)
            }
        }
        try """
        version: '3'
        hooks:
          pre-commit: [lint]
        tasks:
          lint:
            sources: ['docs/*.md']
            cmds: ['true']
          check:
            sources: ['src/**/*.c']
            cmds: ['true']

        """.write(toFile: directory + "/Taskfile.yml", atomically: false, encoding: .utf8)
        try """
        pre-commit:
          commands:
            lint:
              glob: "docs/*.md"
              run: "true"

        """.write(toFile: directory + "/lefthook.yml", atomically: false, encoding: .utf8)
        try ".kiln/\nbuild/\n".write(toFile: directory + "/.gitignore", atomically: false, encoding: .utf8)
        for arguments in [
            ["init", "-q", "-b", "main"], ["add", "."],
            ["-c", "user.email=bench@kiln.invalid", "-c", "user.name=Bench", "commit", "-qm", "files"],
        ] {
            _ = runChild(["/usr/bin/git"] + arguments, in: directory, timeout: 600)
        }
        _ = FileManager.default.createFile(atPath: directory + "/.git/kiln-bench-ready-2", contents: Data())
    }
}
