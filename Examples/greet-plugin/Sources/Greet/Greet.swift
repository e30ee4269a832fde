import KilnJobs
import KilnPluginAPI

/// `plugin: greet` with `with: {name: World}`: a job that says hello.
struct GreetKind: TaskKind {
    let name = "greet"
    let version = "1"

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> String {
        guard let name = value["name"] else { throw TaskConfigurationError("greet needs 'name'", at: value.location) }
        return try name.requireString("'name'")
    }

    func summary(of name: String, request: JobRequest) -> String { "greet \(request.display(name))" }

    func makeJob(configuration name: String, request: JobRequest, context: TaskContext) throws -> Job {
        // `render` throws when the template fails (`{{.TYPO}}`): the job fails, naming the place.
        let who = try request.render(name)
        return BlockJob { context.log("Hello, \(who)!") }
    }
}

/// The plugin's one C entry point, which kiln calls once, on the thread that loads the plugin.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        PluginRegistrar.borrow(registrar).declare(name: "greet", version: "1.0.0")
        PluginRegistrar.borrow(registrar).register(GreetKind())
    }
}
