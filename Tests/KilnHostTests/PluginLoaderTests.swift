import Foundation
import KilnHost
import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Testing

/// The plugin loader in this process, with the real `.so` files `swift build` made.
@Suite("The plugin loader")
struct PluginLoaderTests {
    func buildDirectory() throws -> String {
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return (testBinary as NSString).deletingLastPathComponent
    }

    @Test("a loaded plugin's job is a Job to the host: one KilnJobs in the process")
    func pluginJobIsAHostJob() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let registry = TaskKindRegistry()
        let loader = PluginLoader(
            options: PluginOptions(),
            registry: registry,
            environmentPath: nil,
            executableDirectory: try buildDirectory()
        )
        let plugin = try loader.load("archive")
        #expect(plugin.name == "archive")
        #expect(plugin.kinds == ["archive"])
        #expect(plugin.abiVersion == PluginLoader.abiVersion)

        let kind = try #require(registry.kind(named: "archive"))
        #expect(kind.pluginVersion == "1.0.0")
        let location = SourceLocation(file: directory.path("Taskfile.yml"), line: 1, column: 1)
        let configuration = ConfigurationValue(
            .map([
                (key: "output", keyLocation: location, value: ConfigurationValue(.scalar("out.tar.gz"), at: location)),
                (
                    key: "files", keyLocation: location,
                    value: ConfigurationValue(.list([ConfigurationValue(.scalar("a.txt"), at: location)]), at: location)
                ),
            ]),
            at: location
        )
        let prepared = try kind.prepare(
            configuration,
            for: TaskDescription(name: "pack", location: location, variables: [:])
        )
        #expect(prepared.kindVersion == "1 (plugin 1.0.0)", "the plugin's version is signed with the kind's")
        _ = try directory.write("a.txt", "alpha\n")
        let request = JobRequest(
            taskName: "pack",
            label: "pack",
            inputs: ["a.txt"],
            outputs: ["out.tar.gz"],
            resources: [],
            variables: [:],
            directory: directory.path,
            environment: [:]
        )
        #expect(prepared.defaultResources(for: request) == ["disk"])
        let job = try prepared.makeJob(request, context: TaskContext(output: TaskOutput(), projectRoot: directory.path))
        // Checked at run time against the host's `Job` class: a second copy of KilnJobs in the
        // plugin would make this false (and the host crash when it used the job).
        let asAny: Any = job
        #expect(asAny is Job)
        #expect(String(describing: type(of: job)).contains("ArchiveJob"))
        // And it works as one: after a host job, on a host queue, with a host completion block.
        let queue = JobQueue(name: "plugin test")
        let before = BlockJob {}
        job.addDependency(before)
        let completed = LockedValue(false)
        job.completionBlock = { completed.withLock { $0 = true } }
        try queue.addJobs([before, job])
        try queue.waitUntilAllJobsAreFinished()
        #expect(job.error == nil, "\(String(describing: job.error))")
        #expect(completed.value)
        #expect(FileManager.default.fileExists(atPath: directory.path("out.tar.gz")))
    }

    @Test("the same file loads once; kiln never unloads a plugin")
    func loadsOnce() throws {
        let registry = TaskKindRegistry()
        let loader = PluginLoader(
            options: PluginOptions(),
            registry: registry,
            environmentPath: nil,
            executableDirectory: try buildDirectory()
        )
        let first = try loader.load("compress")
        let second = try loader.load(first.file)
        #expect(first == second)
        #expect(loader.plugins.map(\.name) == ["compress"])
    }

    @Test("a plugin owned by another user is refused (as root: chown to nobody)")
    func foreignOwner() throws {
        guard getuid() == 0 else { return }  // only root can give a file away
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let copy = directory.path("libkiln-archive.so")
        try FileManager.default.copyItem(atPath: try buildDirectory() + "/libkiln-archive.so", toPath: copy)
        chown(copy, 65534, 65534)
        let loader = PluginLoader(
            options: PluginOptions(),
            registry: TaskKindRegistry(),
            environmentPath: nil,
            executableDirectory: nil
        )
        #expect {
            try loader.load(file: copy)
        } throws: { error in
            "\(error)".contains("the plugin file \(copy) belongs to user 65534, not to you (0) or root")
        }
    }
}
