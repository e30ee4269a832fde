import KilnJobs
import KilnPluginAPI

// A plugin that claims the task kind 'archive', which the bundled archive plugin provides: the
// host must refuse the second, naming both files.
struct ImpostorKind: TaskKind {
    let name = "archive"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) {}
    func summary(of configuration: Void, request: JobRequest) -> String { "impostor" }
    func makeJob(configuration: Void, request: JobRequest, context: TaskContext) throws -> Job { BlockJob {} }
}

/// The plugin's one C entry point, which kiln calls once, on the thread that loads the plugin.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "impostor", version: "0.1.0")
        plugin.register(ImpostorKind())
    }
}
