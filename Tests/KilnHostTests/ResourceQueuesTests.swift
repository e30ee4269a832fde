import Foundation
import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// Resource claims: queues and their widths, `disk` resolution, and multi-resource claims.
@Suite struct ResourceQueuesTests {
    @Test func aWidthOneResourceNeverRunsTwoJobsAtOnce() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for index in 0..<40 { try directory.write("src/file\(index).txt", "\(index)\n") }
        // Each job takes a lock directory, which `mkdir` refuses to create if it exists: a second
        // job holding the resource at the same time would fail.
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                resources:
                  lock: 1
                tasks:
                  locked:
                    each: sources
                    sources: ['src/*.txt']
                    resources: [lock, cpu]
                    cmds:
                      - mkdir held.lock
                      - echo {{.source}} >> ran.log
                      - rmdir held.lock
                """
            ]
        )
        let (summary, observer, _) = try await run(taskfile, targets: ["locked"], cpuWidth: 8)
        #expect(summary.failed == 0, "\(observer.finished.filter { $0.outcome != .succeeded }.map(\.output))")
        #expect(summary.succeeded == 40)
        #expect(directory.read("ran.log")?.split(separator: "\n").count == 40)
        #expect(observer.started.allSatisfy { $0.job.resources == ["cpu", "lock"] })
    }

    @Test func diskClaimsResolveToTheQueueOfTheDeviceTheJobWrites() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let queues = ResourceQueues(definitions: [])
        let device = try #require(Self.deviceName(of: directory.path))
        // An output that doesn't exist yet is on the device of its nearest existing directory.
        let output = directory.path("build/obj/new.o")
        #expect(
            queues.resources(for: ["disk", "cpu"], outputs: [output], directory: directory.path) == [
                "cpu", "disk:\(device)",
            ]
        )
        // Without outputs, the job's directory decides.
        #expect(queues.resources(for: ["disk"], outputs: [], directory: directory.path) == ["disk:\(device)"])
        // Outputs on two devices claim both queues.
        let memory = "/dev/shm"
        if let memoryDevice = Self.deviceName(of: memory), memoryDevice != device {
            #expect(
                queues.resources(for: ["disk"], outputs: [output, memory + "/x"], directory: directory.path)
                    == [
                        "disk:\(device)", "disk:\(memoryDevice)",
                    ].sorted()
            )
        }
        #expect(queues.queue(named: "disk:\(device)").maxConcurrentJobCount == 1)
        #expect(queues.queue(named: "disk:\(device)").name == "disk:\(device)")
    }

    @Test func queuesHaveTheWidthsOfTheirDefinitionsAndBuiltInDefaults() throws {
        let here = KilnPluginAPI.SourceLocation(file: "Taskfile.yml", line: 1, column: 1)
        let queues = ResourceQueues(
            definitions: [
                ResourceDefinition(name: "link", width: 2, location: here),
                ResourceDefinition(name: "net", width: 8, location: here),
                ResourceDefinition(name: "cpu", width: 5, location: here),
            ],
            cpuWidth: 3
        )
        #expect(queues.queue(named: "link").maxConcurrentJobCount == 2)
        #expect(queues.queue(named: "net:example.com").maxConcurrentJobCount == 8)
        #expect(queues.queue(named: "cpu").maxConcurrentJobCount == 3)
        #expect(ResourceQueues(definitions: []).queue(named: "net:example.com").maxConcurrentJobCount == 4)
        #expect(queues.resources(for: [], outputs: [], directory: "/") == ["cpu"])
        #expect(queues.resources(for: ["link", "cpu", "link"], outputs: [], directory: "/") == ["cpu", "link"])
    }

    @Test func tasksClaimingRandomSetsOfWidthOneResourcesNeverDeadlock() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let resources = (0..<6).map { ("r\($0)", 1) }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": Self.randomClaims(seed: 0x6B69_6C6E, tasks: 300, resources: resources, claims: 3...4)
            ]
        )
        let lab = ProbeLab()
        let (summary, _, _) = try await run(
            taskfile,
            targets: taskfile.tasks.map(\.name),
            kinds: [ProbeTaskKind(lab: lab)],
            cpuWidth: 4,
            within: 60
        )
        #expect(summary.succeeded == 300)
        #expect(summary.failed == 0 && summary.cancelled == 0)
        #expect(lab.runs.count == 300 && lab.runs.values.allSatisfy { $0 == 1 })
        for (name, _) in resources { #expect(lab.peaks[name, default: 0] <= 1, "\(name)") }
        #expect(lab.peaks["cpu", default: 0] <= 4)
    }

    @Test func noQueueEverHoldsMoreJobsThanItsWidth() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let resources = [("one", 1), ("two", 2), ("three", 3)]
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": Self.randomClaims(seed: 42, tasks: 300, resources: resources, claims: 1...3)
            ]
        )
        let lab = ProbeLab()
        let (summary, _, _) = try await run(
            taskfile,
            targets: taskfile.tasks.map(\.name),
            kinds: [ProbeTaskKind(lab: lab)],
            cpuWidth: 3,
            within: 60
        )
        #expect(summary.succeeded == 300)
        for (name, width) in resources + [("cpu", 3)] {
            #expect(lab.peaks[name, default: 0] <= width, "\(name) is \(width) wide")
        }
    }

    @Test func theTraceShowsNoMoreLanesPerQueueThanItsWidth() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let resources = [("one", 1), ("two", 2)]
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": Self.randomClaims(seed: 7, tasks: 300, resources: resources, claims: 1...2)
            ]
        )
        let trace = ChromeTraceWriter()
        let (summary, _, queues) = try await run(
            taskfile,
            targets: taskfile.tasks.map(\.name),
            kinds: [ProbeTaskKind(lab: ProbeLab())],
            cpuWidth: 2,
            extraObservers: [trace],
            within: 60
        )
        #expect(summary.succeeded == 300)
        try trace.write(to: directory.path("trace.json"))
        let lanes = try TraceFile(path: directory.path("trace.json")).lanesPerQueue()
        #expect(!lanes.isEmpty)
        for (queue, count) in lanes {
            #expect(count <= queues.width(of: queue), "queue \(queue) shows \(count) lanes")
        }
    }

    // MARK: Helpers

    /// A Taskfile of `tasks` probe tasks, each claiming `cpu` and a random subset of `resources`
    /// (of a size in `claims`), written in random order.
    static func randomClaims(
        seed: UInt64,
        tasks: Int,
        resources: [(String, Int)],
        claims: ClosedRange<Int>
    ) -> String {
        var generator = SeededGenerator(seed: seed)
        var text = "version: '3'\nresources:\n"
        for (name, width) in resources { text += "  \(name): \(width)\n" }
        text += "tasks:\n"
        for index in 0..<tasks {
            let count = Int.random(in: claims, using: &generator)
            let chosen = (resources.map(\.0).shuffled(using: &generator).prefix(count) + ["cpu"]).shuffled(
                using: &generator
            )
            text += "  t\(index):\n    plugin: probe\n    resources: [\(chosen.joined(separator: ", "))]\n"
        }
        return text
    }

    /// The block device name of the file system holding `path` (`vda`), or `major:minor`.
    static func deviceName(of path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let device = UInt64(info.st_dev)
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        let uevent = (try? String(contentsOfFile: "/sys/dev/block/\(major):\(minor)/uevent", encoding: .utf8)) ?? ""
        for line in uevent.split(separator: "\n") where line.hasPrefix("DEVNAME=") {
            return String(line.dropFirst("DEVNAME=".count))
        }
        return "\(major):\(minor & 0xffff_ffff)"
    }
}

/// A Chrome Trace Event file, read back.
struct TraceFile {
    var events: [[String: Any]]

    init(path: String) throws {
        let data = try #require(FileManager.default.contents(atPath: path), "no trace at \(path)")
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        events = try #require(document["traceEvents"] as? [[String: Any]], "no traceEvents array")
    }

    /// Queue name by trace process id, from the `process_name` metadata events.
    var queueNames: [Int: String] {
        var names: [Int: String] = [:]
        for event in events where event["ph"] as? String == "M" && event["name"] as? String == "process_name" {
            if let pid = event["pid"] as? Int, let name = (event["args"] as? [String: Any])?["name"] as? String {
                names[pid] = name.hasPrefix("queue ") ? String(name.dropFirst("queue ".count)) : name
            }
        }
        return names
    }

    /// The complete (`ph: X`) events.
    var jobEvents: [[String: Any]] { events.filter { $0["ph"] as? String == "X" } }

    /// How many distinct lanes (threads) each queue's jobs were drawn on.
    func lanesPerQueue() throws -> [String: Int] {
        let names = queueNames
        var lanes: [String: Set<Int>] = [:]
        for event in jobEvents {
            let pid = try #require(event["pid"] as? Int)
            let queue = try #require(names[pid], "no process_name for pid \(pid)")
            lanes[queue, default: []].insert(try #require(event["tid"] as? Int))
        }
        return lanes.mapValues(\.count)
    }
}
