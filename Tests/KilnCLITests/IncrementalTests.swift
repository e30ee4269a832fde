import Foundation
import KilnTestSupport
import Testing

/// Incremental runs of the real `kiln`: content signatures, the reasons a job reruns, early
/// cutoff, and a build killed with SIGKILL.
@Suite("Incremental runs")
struct IncrementalTests {
    /// A project whose two-step build leaves a trail: every command appends its name to `ran.log`.
    func project() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        try directory.write("src/a.txt", "alpha\n")
        try directory.write("src/b.txt", "beta\n")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              copy:
                each: sources
                sources: ['src/*.txt']
                generates: ['out/{{.source_stem}}.txt']
                cmds:
                  - mkdir -p out
                  - echo "copy {{.source}}" >> ran.log
                  - tr -d '#' < {{.source}} > {{.output}}
              join:
                deps: [copy]
                sources: ['out/*.txt']
                generates: [joined.txt]
                cmds:
                  - echo join >> ran.log
                  - cat out/a.txt out/b.txt > joined.txt
              default:
                deps: [join]

            """
        )
        return directory
    }

    /// A C project of two files, each including its own header, compiled with a depfile
    /// (`cc -MMD`); every compile appends to `ran.log`.
    func cProject(keepDepfile: Bool = false) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        try directory.write("include/a.h", "#define A_VALUE 1\n")
        try directory.write("include/b.h", "#define B_VALUE 2\n")
        try directory.write("src/a.c", "#include \"a.h\"\nint a(void) { return A_VALUE; }\n")
        try directory.write("src/b.c", "#include \"b.h\"\nint b(void) { return B_VALUE; }\n")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                each: sources
                sources: ['src/*.c']
                generates: ['build/{{.source_stem}}.o']
                depfile: 'build/{{.source_stem}}.d'
                keep-depfile: \(keepDepfile)
                cmds:
                  - mkdir -p build
                  - echo "cc {{.source}}" >> ran.log
                  - cc -Iinclude -MMD -MF build/{{.source_stem}}.d -c {{.source}} -o {{.output}}

            """
        )
        return directory
    }

    /// What ran since the log was last cleared, and clears it.
    func ran(_ directory: TemporaryDirectory) -> [String] {
        let lines = (directory.read("ran.log") ?? "").split(separator: "\n").map(String.init)
        try? FileManager.default.removeItem(atPath: directory.path("ran.log"))
        return lines.sorted()
    }

    /// `count` tasks named `name0`, `name1`…, each with a source `src/fN.txt` (written, holding
    /// `N`) and an output `out/fN.txt`, whose commands are `commands(N)`; their Taskfile lines.
    func copyTasks(
        _ count: Int,
        named name: String,
        in directory: TemporaryDirectory,
        commands: (Int) -> [String]
    ) throws -> String {
        var tasks = ""
        for index in 0..<count {
            try directory.write("src/f\(index).txt", "\(index)\n")
            tasks += "  \(name)\(index):\n    sources: [src/f\(index).txt]\n    generates: [out/f\(index).txt]\n"
            tasks += "    cmds: [\(commands(index).map { "'\($0)'" }.joined(separator: ", "))]\n"
        }
        return tasks
    }

    @Test("a second run with nothing changed runs nothing")
    func noOpRunRunsNothing() async throws {
        let directory = try project()
        defer { directory.remove() }
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory) == ["copy src/a.txt", "copy src/b.txt", "join"])
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory).isEmpty)
        #expect(result.standardOutput.contains("join: up to date"))
        #expect(result.standardOutput.contains("up to date in"))
    }

    @Test("touching a file without changing it reruns nothing: signatures hash content")
    func touchReRunsNothing() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: directory.path("src/a.txt"))
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory).isEmpty)
    }

    @Test("a changed input reruns exactly its job and what depends on its outputs, and says why")
    func changedInputRerunsItsJob() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        try directory.write("src/a.txt", "alpha, again\n")
        let result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(ran(directory) == ["copy src/a.txt", "join"])
        #expect(result.standardOutput.contains("copy src/a.txt: input src/a.txt changed"))
        #expect(result.standardOutput.contains("copy src/b.txt: up to date"))
        #expect(directory.read("joined.txt") == "alpha, again\nbeta\n")
    }

    @Test("an output that comes out byte-identical stops the rebuild there (early cutoff)")
    func earlyCutoff() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        // The copy drops '#', so this change leaves out/a.txt as it was.
        try directory.write("src/a.txt", "al#pha\n")
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory) == ["copy src/a.txt"])
    }

    @Test("a deleted or hand-edited output reruns its job")
    func damagedOutputReruns() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        try FileManager.default.removeItem(atPath: directory.path("joined.txt"))
        var result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(ran(directory) == ["join"])
        #expect(result.standardOutput.contains("join: output joined.txt is missing"))
        try directory.write("out/b.txt", "edited by hand\n")
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.standardOutput.contains("copy src/b.txt: output out/b.txt was modified"))
        #expect(ran(directory) == ["copy src/b.txt"])
        #expect(directory.read("out/b.txt") == "beta\n")
    }

    @Test("a changed command reruns its job")
    func changedCommandReruns() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        let taskfile = try #require(directory.read("Taskfile.yml"))
        try directory.write(
            "Taskfile.yml",
            taskfile.replacingOccurrences(of: "cat out/a.txt out/b.txt", with: "cat out/b.txt out/a.txt")
        )
        let result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(ran(directory) == ["join"])
        #expect(result.standardOutput.contains("join: its command, kind, directory or environment changed"))
    }

    @Test("a failed job reruns next time even though its inputs didn't change")
    func failedJobReruns() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        defer { directory.remove() }
        try directory.write("in.txt", "x\n")
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default:
                sources: [in.txt]
                generates: [out.txt]
                cmds: ['echo try >> ran.log', 'test -f allow', 'cp in.txt out.txt']

            """
        )
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 1)
        try directory.write("allow", "")
        result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory) == ["try", "try"])
    }

    @Test("after kill -9 in the middle of a build, the next run redoes only the unfinished jobs")
    func killNineLosesOnlyRunningJobs() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        defer { directory.remove() }
        // Ten quick jobs, then one that blocks until the test has killed kiln.
        var tasks = try copyTasks(10, named: "quick", in: directory) { index in
            ["mkdir -p out", "echo quick\(index) >> ran.log", "cp src/f\(index).txt out/f\(index).txt"]
        }
        let quickNames = (0..<10).map { "quick\($0)" }.joined(separator: ", ")
        tasks += "  slow:\n    deps: [\(quickNames)]\n    sources: [src/f0.txt]\n    generates: [slow.txt]\n"
        tasks +=
            "    cmds: ['echo slow >> ran.log', 'while [ ! -f release ]; do sleep 0.05; done', 'cp src/f0.txt slow.txt']\n"
        tasks += "  default:\n    deps: [slow]\n"
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n" + tasks)
        let first = try KilnProcess.start(["run", "-j2"], in: directory.path)
        // Kill kiln (not gracefully) once the slow job is running.
        let started = await waitUntil(within: 60) { (directory.read("ran.log") ?? "").contains("slow") }
        #expect(started)
        first.send(SIGKILL)
        _ = try await first.wait(within: 30)
        try directory.write("release", "")
        #expect(ran(directory).count == 11)
        let result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory) == ["slow"])
        #expect(directory.read("slow.txt") == "0\n")
    }

    @Test(
        "kill -9 at random moments of a build: each time the next run redoes every job that hadn't finished, none that kiln had reported finished, and then nothing"
    )
    func killNineAtRandomMoments() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        defer { directory.remove() }
        let count = 40
        var tasks = try copyTasks(count, named: "t", in: directory) { index in
            [
                "echo t\(index) >> started.log", "mkdir -p out", "sleep 0.02",
                "cp src/f\(index).txt out/f\(index).txt", "echo t\(index) >> done.log",
            ]
        }
        tasks += "  default:\n    deps: [\((0..<count).map { "t\($0)" }.joined(separator: ", "))]\n"
        try directory.write("Taskfile.yml", "version: '3'\ntasks:\n" + tasks)
        func lines(_ name: String) -> Set<String> {
            Set((directory.read(name) ?? "").split(separator: "\n").map(String.init))
        }
        let everyTask = Set((0..<count).map { "t\($0)" })
        var killedMidway = 0
        for round in 0..<6 {
            for name in [".kiln", "out", "started.log", "done.log"] {
                try? FileManager.default.removeItem(atPath: directory.path(name))
            }
            // A random moment while jobs finish: after a random number of them have run their
            // last command, plus a random few milliseconds, so the kill lands anywhere between a
            // command's end and the next job's start. Counting jobs, not milliseconds, keeps the
            // moment inside the build however slow the machine is.
            let target = Int.random(in: 3...(count - 6))
            let delay = Int.random(in: 0...25)
            let first = try KilnProcess.start(["run", "-j2", "--json"], in: directory.path)
            // Watched from a thread of its own: on a loaded machine the test's tasks may wait
            // longer for a turn than the rest of the build takes, and the kill would come late.
            let donePath = directory.path("done.log")
            let killer = Thread {
                let deadline = DispatchTime.now().uptimeNanoseconds + 60_000_000_000
                while DispatchTime.now().uptimeNanoseconds < deadline {
                    let done = (try? String(contentsOfFile: donePath, encoding: .utf8)) ?? ""
                    if done.split(separator: "\n").count >= target { break }
                    usleep(1_000)
                }
                usleep(useconds_t(delay * 1_000))
                first.send(SIGKILL)
            }
            killer.start()
            let killed = try await first.wait(within: 30)
            // What kiln had said was finished (so recorded), and what had finished at all.
            let reported = Set(
                killed.standardOutput.split(separator: "\n").compactMap { line -> String? in
                    guard line.contains("\"event\":\"finished\""), line.contains("\"status\":\"succeeded\""),
                        let range = line.range(of: "\"task\":\"")
                    else { return nil }
                    return String(line[range.upperBound...].prefix { $0 != "\"" })
                }
            )
            let done = lines("done.log")
            if !reported.isEmpty, done.count < count { killedMidway += 1 }
            try? FileManager.default.removeItem(atPath: directory.path("started.log"))
            let second = try await KilnProcess.run(["run", "-j2"], in: directory.path)
            #expect(second.status == 0, "round \(round), killed \(delay) ms after \(target) jobs: \(second)")
            let redone = lines("started.log")
            #expect(
                everyTask.subtracting(done).isSubset(of: redone),
                "round \(round), killed \(delay) ms after \(target) jobs: an unfinished job wasn't redone"
            )
            #expect(
                reported.isDisjoint(with: redone),
                "round \(round), killed \(delay) ms after \(target) jobs: a job reported finished was redone"
            )
            // Only jobs caught between their last command and their report: at most -j of them,
            // and the records waiting to share a commit (at most 16, BuildState.batchLimit).
            #expect(
                redone.subtracting(everyTask.subtracting(done)).count <= 2 + 16,
                "round \(round), killed \(delay) ms after \(target) jobs"
            )
            for index in 0..<count { #expect(directory.read("out/f\(index).txt") == "\(index)\n") }
            try? FileManager.default.removeItem(atPath: directory.path("started.log"))
            let third = try await KilnProcess.run(["run", "-j2"], in: directory.path)
            #expect(
                third.status == 0 && lines("started.log").isEmpty,
                "round \(round): the run after the redo ran something"
            )
        }
        // The kills must land while jobs finish, or the test proves nothing.
        #expect(killedMidway >= 2, "only \(killedMidway) of 6 kills came after a job finished and before the last")
    }

    @Test(
        "records share commits while the jobs' queue has more to run (KILN_DEBUG=state); a chain's links, each awaited, commit one by one"
    )
    func recordsShareCommits() async throws {
        func commits(_ result: KilnProcess.Result) -> (records: Int, transactions: Int)? {
            guard let line = result.standardError.split(separator: "\n").first(where: { $0.hasPrefix("kiln: state: ") })
            else { return nil }
            let numbers = line.split(separator: " ").compactMap { Int($0) }
            return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
        }
        let independent = try TemporaryDirectory(prefix: "kiln-incremental")
        defer { independent.remove() }
        var tasks = try copyTasks(40, named: "t", in: independent) { index in
            ["mkdir -p out", "cp src/f\(index).txt out/f\(index).txt"]
        }
        tasks += "  default:\n    deps: [\((0..<40).map { "t\($0)" }.joined(separator: ", "))]\n"
        try independent.write("Taskfile.yml", "version: '3'\ntasks:\n" + tasks)
        let tracePath = independent.path("trace.json")
        var result = try await KilnProcess.run(
            ["run", "-j2", "--trace", tracePath],
            in: independent.path,
            environment: ["KILN_DEBUG": "state"]
        )
        #expect(result.status == 0, "\(result)")
        let shared = commits(result)
        #expect(shared?.records == 40, "\(result)")
        #expect((shared?.transactions ?? 40) < 40, "\(result)")
        // A job is reported once its record is committed, but drawn as it ran: a job whose record
        // waited ends where its command ended, so the trace never shows more jobs than -j at once.
        let data = try #require(FileManager.default.contents(atPath: tracePath), "no trace written")
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let spans = try #require(document["traceEvents"] as? [[String: Any]]).filter { $0["ph"] as? String == "X" }
        #expect(spans.count == 40)
        var edges: [(time: Int, change: Int)] = []
        for span in spans {
            let start = try #require(span["ts"] as? Int), duration = try #require(span["dur"] as? Int)
            edges += [(start, 1), (start + duration, -1)]
        }
        var running = 0, most = 0
        for edge in edges.sorted(by: { ($0.time, $0.change) < ($1.time, $1.change) }) {
            running += edge.change
            most = max(most, running)
        }
        #expect(most <= 2, "the trace shows \(most) jobs at once at -j2")
        // Nothing lost: the next run runs nothing.
        result = try await KilnProcess.run(["run", "-j2"], in: independent.path)
        #expect(result.status == 0 && result.standardOutput.contains("0 ran, 40 up to date"), "\(result)")

        let chain = try TemporaryDirectory(prefix: "kiln-incremental")
        defer { chain.remove() }
        tasks = ""
        for index in 0..<8 {
            tasks += "  l\(index):\n    generates: [l\(index).txt]\n"
            if index > 0 { tasks += "    deps: [l\(index - 1)]\n    sources: [l\(index - 1).txt]\n" }
            tasks += "    cmds: ['echo \(index) > l\(index).txt']\n"
        }
        try chain.write("Taskfile.yml", "version: '3'\ntasks:\n" + tasks + "  default:\n    deps: [l7]\n")
        result = try await KilnProcess.run(["run", "-j2"], in: chain.path, environment: ["KILN_DEBUG": "state"])
        #expect(result.status == 0, "\(result)")
        let alone = commits(result)
        #expect(alone?.records == 8 && alone?.transactions == 8, "\(result)")
    }

    @Test("a second run on a busy project fails at once with exit status 3")
    func busyProjectFails() async throws {
        let directory = try TemporaryDirectory(prefix: "kiln-incremental")
        defer {
            _ = try? directory.write("release", "")
            directory.remove()
        }
        try directory.write(
            "Taskfile.yml",
            """
            version: '3'
            tasks:
              default: ['while [ ! -f release ]; do sleep 0.05; done']

            """
        )
        let first = try KilnProcess.start(["run"], in: directory.path)
        let holding = await waitUntil(within: 30) {
            FileManager.default.fileExists(atPath: directory.path(".kiln/lock"))
        }
        #expect(holding)
        try await Task.sleep(for: .milliseconds(200))
        let second = try await KilnProcess.run(["run"], in: directory.path)
        #expect(second.status == 3, "\(second)")
        #expect(second.standardError.contains("another kiln run"))
        try directory.write("release", "")
        let finished = try await first.wait(within: 60)
        #expect(finished.status == 0)
    }

    @Test("kiln clean removes every declared output and the state, so the next run rebuilds all")
    func cleanRemovesOutputsAndState() async throws {
        let directory = try project()
        defer { directory.remove() }
        _ = try await KilnProcess.run(["run"], in: directory.path)
        _ = ran(directory)
        let clean = try await KilnProcess.run(["clean"], in: directory.path)
        #expect(clean.status == 0, "\(clean)")
        #expect(clean.standardOutput.contains("removed 3 outputs"))
        for output in ["out/a.txt", "out/b.txt", "joined.txt"] {
            #expect(!FileManager.default.fileExists(atPath: directory.path(output)), "\(output)")
        }
        #expect(FileManager.default.fileExists(atPath: directory.path("src/a.txt")))
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory) == ["copy src/a.txt", "copy src/b.txt", "join"])
    }

    @Test("with a depfile, editing a header rebuilds exactly the files that include it (real cc -MMD)")
    func headerEditRebuildsItsIncluders() async throws {
        let directory = try cProject()
        defer { directory.remove() }
        var result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory) == ["cc src/a.c", "cc src/b.c"])
        // Read and removed once recorded.
        #expect(!FileManager.default.fileExists(atPath: directory.path("build/a.d")))
        try directory.write("include/b.h", "#define B_VALUE 3\n")
        result = try await KilnProcess.run(["run", "--explain"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(ran(directory) == ["cc src/b.c"])
        #expect(result.standardOutput.contains("default src/b.c: input include/b.h changed"))
        // A new include is picked up from the next depfile.
        try directory.write(
            "src/a.c",
            "#include \"a.h\"\n#include \"b.h\"\nint a(void) { return A_VALUE + B_VALUE; }\n"
        )
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory) == ["cc src/a.c"])
        try directory.write("include/b.h", "#define B_VALUE 4\n")
        _ = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory) == ["cc src/a.c", "cc src/b.c"])
        result = try await KilnProcess.run(["run"], in: directory.path)
        #expect(ran(directory).isEmpty, "\(result)")
    }
}
