import Dispatch
import KilnJobs
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

// Test kinds with behaviours the host must survive:
// - `fail`: its job throws (`with: {message: …}`): only its task fails;
// - `later`: an asynchronous job that finishes on another thread after `with: {seconds: …}`,
//   writing `with: {output: …}`;
// - `quit`: its job calls exit(`with: {status: …}`) in the middle of the run;
// - `hang`: its job never finishes and ignores cancellation (it touches `with: {started: …}`).
struct FailKind: TaskKind {
    let name = "fail"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> String {
        try value["message"]?.requireString("'message'") ?? "the fail plugin's job failed, as asked"
    }
    func summary(of configuration: String, request: JobRequest) -> String { "fail: \(configuration)" }
    func makeJob(configuration: String, request: JobRequest, context: TaskContext) throws -> Job {
        BlockJob { throw Failure(description: configuration) }
    }
    struct Failure: Error, CustomStringConvertible { var description: String }
}

struct LaterKind: TaskKind {
    struct Configuration: Sendable {
        var seconds: Double
        var output: String
    }
    let name = "later"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        guard let output = value["output"] else {
            throw TaskConfigurationError("'later' needs 'output'", at: value.location)
        }
        return Configuration(
            seconds: try value["seconds"]?.requireDouble("'seconds'") ?? 0.1,
            output: try output.requireString("'output'")
        )
    }
    func summary(of configuration: Configuration, request: JobRequest) -> String { "later \(configuration.seconds) s" }
    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        LaterJob(
            seconds: configuration.seconds,
            output: request.directory + "/" + (try request.render(configuration.output))
        )
    }
}

/// Finishes on a Dispatch thread after a delay: holds no worker while it waits.
final class LaterJob: Job, @unchecked Sendable {
    let seconds: Double
    let output: String
    init(seconds: Double, output: String) {
        self.seconds = seconds
        self.output = output
        super.init()
    }
    override var isAsynchronous: Bool { true }
    override func start() throws(JobError) {
        guard try beginExecution() else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            let file = fopen(output, "w")
            if let file {
                fputs("written later\n", file)
                fclose(file)
            }
            try? finish(error: file == nil ? FailKind.Failure(description: "can't write \(output)") : nil)
        }
    }
}

struct QuitKind: TaskKind {
    let name = "quit"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> Int {
        try value["status"]?.requireInteger("'status'") ?? 0
    }
    func summary(of configuration: Int, request: JobRequest) -> String { "exit(\(configuration))" }
    func makeJob(configuration: Int, request: JobRequest, context: TaskContext) throws -> Job {
        BlockJob { exit(Int32(configuration)) }
    }
}

struct HangKind: TaskKind {
    let name = "hang"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> String {
        try value["started"]?.requireString("'started'") ?? "hang.started"
    }
    func summary(of configuration: String, request: JobRequest) -> String { "hang" }
    func makeJob(configuration: String, request: JobRequest, context: TaskContext) throws -> Job {
        let marker = request.directory + "/" + configuration
        return BlockJob {
            close(open(marker, O_WRONLY | O_CREAT, 0o644))
            while true { sleep(1000) }
        }
    }
}

/// The plugin's one C entry point, which kiln calls once, on the thread that loads the plugin.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "behaviours", version: "0.1.0")
        plugin.register(FailKind())
        plugin.register(LaterKind())
        plugin.register(QuitKind())
        plugin.register(HangKind())
    }
}
