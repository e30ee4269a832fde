import Foundation
import KilnTestSupport
import Testing

/// `kiln` end to end on a copy of `Taskfiles/example`, a small C project.
@Suite struct ExampleProjectTests {
    @Test func runBuildsTestsAndPackagesTheExample() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["run"], in: project)
        #expect(result.status == 0, "\(result)")
        #expect(FileManager.default.isExecutableFile(atPath: project + "/build/calc"))
        #expect(result.standardOutput.contains("cases, 0 failures"), "\(result)")
        let archive = try FileManager.default.attributesOfItem(atPath: project + "/dist/calc.tar.gz")
        #expect((archive[.size] as? Int ?? 0) > 0)
        #expect(result.standardOutput.contains("kiln: done"))
    }

    @Test func runTestRunsTheTestsWithoutPackaging() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["run", "test"], in: project)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.contains("cases, 0 failures"), "\(result)")
        #expect(FileManager.default.fileExists(atPath: project + "/build/calc"))
        #expect(!FileManager.default.fileExists(atPath: project + "/dist"))
    }

    @Test func dryRunListsTheJobsAndRunsNothing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["run", "--dry-run"], in: project)
        #expect(result.status == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        for file in ["lexer", "main", "parser"] {
            #expect(
                lines.contains(
                    "compile src/\(file).c: mkdir -p build/obj && cc -O2 -Wall -Wextra -Iinclude -MMD -MF build/obj/\(file).d -c src/\(file).c -o build/obj/\(file).o"
                ),
                "\(result)"
            )
        }
        #expect(lines.contains("link: cc build/obj/*.o -o build/calc"))
        #expect(lines.contains("test: sh tests/run.sh build/calc"))
        #expect(lines.contains("package:manpage: gzip -9 docs/calc.1"), "\(result)")
        #expect(
            lines.contains("package:tarball: archive build/calc include/calc.h dist/share → dist/calc.tar.gz"),
            "\(result)"
        )
        // `default` only gathers its dependencies: no commands, so no job; `package:publish` isn't
        // one of them.
        #expect(!lines.contains("default"))
        #expect(lines.count == 7)
        #expect(!FileManager.default.fileExists(atPath: project + "/build"))
        #expect(!FileManager.default.fileExists(atPath: project + "/dist"))
    }

    @Test func listPrintsEveryTaskWithItsDescription() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["list"], in: project)
        #expect(result.status == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 7)
        #expect(
            lines.contains {
                $0.hasPrefix("* compile:") && $0.hasSuffix("Compile each C file (one job per file, on the cpu queue)")
            }
        )
        #expect(lines.contains { $0.hasPrefix("* package:tarball:") && $0.contains("Pack the calculator") })
    }

    @Test func listJSONIsADocumentOfTasksWithTheirDependencies() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["list", "--json"], in: project)
        #expect(result.status == 0, "\(result)")
        let document = try #require(try parseJSON(result.standardOutput) as? [String: Any])
        let tasks = try #require(document["tasks"] as? [[String: Any]])
        #expect(
            tasks.compactMap { $0["name"] as? String } == [
                "compile", "link", "test", "default", "package:manpage", "package:tarball", "package:publish",
            ]
        )
        let byName = Dictionary(uniqueKeysWithValues: tasks.map { ($0["name"] as? String ?? "", $0) })
        #expect(byName["default"]?["deps"] as? [String] == ["test", "package:tarball"])
        #expect(byName["package:tarball"]?["deps"] as? [String] == ["link", "test", "package:manpage"])
        #expect(byName["compile"]?["kind"] as? String == "shell")
        #expect(byName["link"]?["desc"] as? String == "Link the calculator (holds a cpu slot and the link resource)")
    }

    @Test func graphDotHasANodePerTaskAndAnEdgePerDependency() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["graph", "--format", "dot"], in: project)
        #expect(result.status == 0, "\(result)")
        let lines = result.standardOutput.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "digraph kiln {")
        #expect(lines.last == "}")
        let edges = Set(lines.filter { $0.contains(" -> ") })
        #expect(
            edges == [
                #""link" -> "compile";"#, #""test" -> "link";"#, #""package:tarball" -> "link";"#,
                #""package:tarball" -> "test";"#, #""package:tarball" -> "package:manpage";"#,
                #""package:publish" -> "package:tarball";"#, #""default" -> "test";"#,
                #""default" -> "package:tarball";"#,
            ]
        )
        #expect(lines.contains(#""compile" [label="compile\n(each source)"];"#))
    }

    @Test func graphJSONListsTasksWithDependenciesKindsAndResources() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["graph", "--format", "json"], in: project)
        #expect(result.status == 0, "\(result)")
        let document = try #require(try parseJSON(result.standardOutput) as? [String: Any])
        let tasks = try #require(document["tasks"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: tasks.map { ($0["name"] as? String ?? "", $0) })
        #expect(
            Set(byName.keys) == [
                "compile", "link", "test", "default", "package:manpage", "package:tarball", "package:publish",
            ]
        )
        #expect(byName["package:tarball"]?["kind"] as? String == "archive")
        #expect(byName["package:publish"]?["resources"] as? [String] == ["net:127.0.0.1:8765"])
        #expect(byName["link"]?["deps"] as? [String] == ["compile"])
        #expect(byName["link"]?["resources"] as? [String] == ["cpu", "link"])
        #expect(byName["compile"]?["each"] as? String == "sources")
        #expect(byName["package:tarball"]?["resources"] as? [String] == ["disk"])
        #expect(byName["test"]?["resources"] as? [String] == ["cpu"])
    }

    @Test func versionPrintsTheVersion() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try await KilnProcess.run(["--version"], in: directory.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.standardOutput.wholeMatch(of: /kiln \d+\.\d+\.\d+\n/) != nil, "\(result)")
    }

    @Test func runJSONPrintsOneJSONEventPerLineWithStartedAndFinishedEvents() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["run", "--json"], in: project)
        #expect(result.status == 0, "\(result)")
        let events = try result.standardOutput.split(separator: "\n").map { line in
            try #require(try parseJSON(String(line)) as? [String: Any], "not a JSON object: \(line)")
        }
        let started = events.filter { $0["event"] as? String == "started" }
        let finished = events.filter { $0["event"] as? String == "finished" }
        #expect(started.count == 7)  // 3 compile jobs, link, test, manpage, tarball (default has no commands: no job)
        #expect(Set(started.compactMap { $0["id"] as? Int }) == Set(finished.compactMap { $0["id"] as? Int }))
        #expect(finished.allSatisfy { $0["status"] as? String == "succeeded" })
        #expect(started.contains { $0["job"] as? String == "compile src/main.c" && $0["task"] as? String == "compile" })
        #expect(events.contains { $0["event"] as? String == "planned" })
        let last = try #require(events.last)
        #expect(last["event"] as? String == "run-finished")
        #expect(last["succeeded"] as? Int == 7)
        #expect(last["failed"] as? Int == 0)
    }

    @Test func runTraceWritesAChromeTraceWithAProcessPerQueue() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let tracePath = directory.path("trace.json")
        let result = try await KilnProcess.run(["run", "--trace", tracePath], in: project)
        #expect(result.status == 0, "\(result)")
        let data = try #require(FileManager.default.contents(atPath: tracePath), "no trace written")
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        let jobs = events.filter { $0["ph"] as? String == "X" }
        #expect(!jobs.isEmpty)
        for job in jobs {
            #expect(job["name"] is String && job["ts"] is Int && job["dur"] is Int && job["tid"] is Int)
        }
        var queues: [Int: String] = [:]
        for event in events where event["ph"] as? String == "M" && event["name"] as? String == "process_name" {
            if let pid = event["pid"] as? Int, let name = (event["args"] as? [String: Any])?["name"] as? String {
                queues[pid] = name
            }
        }
        let jobProcesses = Set(jobs.compactMap { $0["pid"] as? Int })
        #expect(jobProcesses.isSubset(of: Set(queues.keys)), "every queue drawn has a process_name")
        let names = Set(jobProcesses.compactMap { queues[$0] })
        #expect(names.contains("queue cpu"))
        #expect(names.contains("queue link"))
        #expect(names.contains { $0.hasPrefix("queue disk:") })
        // The link job holds cpu and link: it is drawn on both queues.
        let linkQueues = Set(
            jobs.filter { $0["name"] as? String == "link" }.compactMap { $0["pid"] as? Int }.compactMap { queues[$0] }
        )
        #expect(linkQueues == ["queue cpu", "queue link"])
    }

    @Test func anUnknownOptionIsAUsageErrorWithStatus64() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let project = try copyExampleProject(to: directory)
        let result = try await KilnProcess.run(["run", "--no-such-option"], in: project)
        #expect(result.status == 64, "\(result)")
        #expect(result.standardError.contains("--no-such-option"))
        #expect(!FileManager.default.fileExists(atPath: project + "/build"))
    }
}
