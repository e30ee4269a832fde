import Foundation
import KilnTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `kiln run --watch` and `watch: true`: the tasks run again when their sources change, against
/// go-task's watch mode on the same changes, and where kiln's behaviour is its own.
@Suite struct WatchTests {
    /// The lines of `file` in `directory`.
    func runs(_ directory: String, _ file: String = "log.txt") -> [String] {
        ((try? String(contentsOfFile: directory + "/" + file, encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    /// `lines` with a line repeated at once kept once. go-task may run twice for one save: a
    /// file's creation and its write are two events, and the second run starts as the first is
    /// cancelled. Used for go-task's log only; kiln's must be exact.
    func collapsed(_ lines: [String]) -> [String] {
        lines.enumerated().compactMap { index, line in index > 0 && lines[index - 1] == line ? nil : line }
    }

    @Test("a source added, edited and removed runs the task again each time, as go-task's --watch does")
    func sameRunsAsGoTask() async throws {
        let task = try Peers.executable("task")
        let scratch = try TemporaryDirectory(prefix: "kiln-watch-diff")
        defer { scratch.remove() }
        let taskfile = """
            version: '3'
            interval: 100ms
            tasks:
              build:
                sources: ['src/*.txt']
                cmds: ['printf "run %s\\n" "$(cat src/*.txt | tr "\\n" " " | sed "s/ $//")" >> log.txt']
            """
        var processes: [(tool: String, process: KilnProcess)] = []
        for tool in ["go-task", "kiln"] {
            try scratch.write(tool + "/Taskfile.yml", taskfile)
            try scratch.write(tool + "/src/a.txt", "a\n")
            let directory = scratch.path(tool)
            let process =
                tool == "kiln"
                ? try KilnProcess.start(["run", "--watch", "build"], in: directory)
                : try KilnProcess.start(program: task, ["--watch", "--verbose", "build"], in: directory)
            processes.append((tool, process))
        }
        // go-task runs the task and adds its inotify watches at the same time: a change made
        // before it says it watches src/ is never seen.
        let goTask = processes[0].process
        #expect(await waitUntil(within: 60) { goTask.standardOutputSoFar.contains("watching new dir: src") })
        // Each change once both tools have run for the one before, and go-task has said so: any
        // event during a run cancels it. A file is saved as editors do, written elsewhere and
        // renamed into place: one event in src/. Written in place, its creation and its write are
        // two events, which go-task can take out of order, the second cancelling the first run
        // and then finding the task up to date; a temporary file in src/ is three more (both seen
        // under load).
        func save(_ text: String, _ directory: String, _ name: String) throws {
            try text.write(toFile: directory + "/" + name + ".new", atomically: false, encoding: .utf8)
            guard rename(directory + "/" + name + ".new", directory + "/src/" + name) == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
        }
        let steps: [(change: (String) throws -> Void, expected: String)] = [
            ({ _ in }, "run a"),
            ({ try save("b\n", $0, "b.txt") }, "run a b"),
            ({ try save("a2\n", $0, "a.txt") }, "run a2 b"),
            ({ unlink($0 + "/src/b.txt") }, "run a2"),
        ]
        for step in steps {
            for tool in ["go-task", "kiln"] { try step.change(scratch.path(tool)) }
            for tool in ["go-task", "kiln"] {
                let reached = await waitUntil(within: 60) { collapsed(runs(scratch.path(tool))).last == step.expected }
                #expect(reached, "\(tool): \(runs(scratch.path(tool)))")
            }
            #expect(
                await waitUntil(within: 60) {
                    goTask.standardErrorSoFar.split(separator: "\n").last?.hasSuffix("finished running") == true
                }
            )
        }
        for (tool, process) in processes {
            process.send(SIGINT)
            let result = try await process.wait(within: 60)
            #expect(result.status == 0, "\(tool): \(result)")
        }
        #expect(runs(scratch.path("kiln")) == collapsed(runs(scratch.path("go-task"))))
        #expect(runs(scratch.path("kiln")) == ["run a", "run a b", "run a2 b", "run a2"])
    }

    @Test(
        "a file saved unchanged, or an output written, isn't a change; a broken Taskfile is reported and the watch goes on"
    )
    func whatIsAChange() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-watch")
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              build:
                sources: ['src/*']
                generates: [src/out.gen]
                cmds: ['cat src/*.txt > src/out.gen', 'echo built >> log.txt']
            """
        )
        try directory.write("src/a.txt", "a\n")
        let kiln = try KilnProcess.start(["run", "--watch", "--interval", "20ms", "build"], in: directory.path)
        #expect(await waitUntil(within: 60) { runs(directory.path).count == 1 })
        // Saved with the same content, and the output rewritten: no run. (Given the time of many
        // looks, then a real change, which must be the second run.) Saved as editors do, written
        // elsewhere and renamed into place: written in place, the file is empty for a moment,
        // and a watch that looks then (seen under load) rightly sees a change.
        try "a\n".write(toFile: directory.path("a.txt.new"), atomically: false, encoding: .utf8)
        #expect(rename(directory.path("a.txt.new"), directory.path("src/a.txt")) == 0)
        try directory.write("src/out.gen", "edited\n")
        usleep(500_000)
        try directory.write("src/b.txt", "b\n")
        #expect(await waitUntil(within: 60) { (directory.read("log.txt") ?? "").split(separator: "\n").count == 2 })
        usleep(300_000)
        #expect(directory.read("log.txt") == "built\nbuilt\n", "\(kiln.standardErrorSoFar)")
        // A Taskfile that doesn't load is reported; fixed, it runs.
        let good = directory.read("Taskfile.yml") ?? ""
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n  build: [unclosed\n")
        #expect(await waitUntil(within: 60) { kiln.standardErrorSoFar.contains("YAML syntax") })
        try directory.write("Taskfile.yml", good.replacingOccurrences(of: "echo built", with: "echo again"))
        #expect(await waitUntil(within: 60) { (directory.read("log.txt") ?? "").hasSuffix("again\n") })
        kiln.send(SIGINT)
        let result = try await kiln.wait(within: 60)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardError.contains("kiln: src/b.txt changed; running again"), "\(result)")
    }

    @Test(
        "watch: true on the task given: a change stops its long-running command and starts it again; Ctrl-C leaves nothing running"
    )
    func watchKeyRestartsServer() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-watch-key")
        defer { directory.remove() }
        let marker = "kiln-watch-" + String(UInt64.random(in: .min ... .max), radix: 16)
        try directory.makeDirectory("bin")
        try FileManager.default.createSymbolicLink(
            atPath: directory.path("bin/\(marker)"),
            withDestinationPath: "/bin/sleep"
        )
        defer { for process in processes(containing: marker) { kill(process.pid, SIGKILL) } }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            interval: 50ms
            tasks:
              serve:
                watch: true
                sources: ['app.conf']
                cmds:
                  - echo "serving $(cat app.conf)" >> log.txt
                  - bin/\(marker) 1000
            """
        )
        try directory.write("app.conf", "one")
        let kiln = try KilnProcess.start(["run", "serve"], in: directory.path)
        #expect(
            await waitUntil(within: 60) {
                runs(directory.path) == ["serving one"] && !processes(containing: marker).isEmpty
            }
        )
        let first = Set(processes(containing: marker).map(\.pid))
        try directory.write("app.conf", "two")
        #expect(await waitUntil(within: 60) { runs(directory.path) == ["serving one", "serving two"] })
        // The first command's processes are gone; the second's run.
        #expect(
            await waitUntil(within: 60) {
                let now = Set(processes(containing: marker).map(\.pid))
                return !now.isEmpty && now.isDisjoint(with: first)
            }
        )
        kiln.send(SIGINT)
        let result = try await kiln.wait(within: 60)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardError.contains("kiln: app.conf changed; running again"), "\(result)")
        #expect(await waitUntil(within: 30) { processes(containing: marker).isEmpty })
    }
}
