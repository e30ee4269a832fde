import KilnJobs
import KilnPluginAPI

// A real plugin built against another plugin ABI: Package.swift compiles this target with
// -DKILN_PLUGIN_ABI_VERSION=999, so the number below is 999 in the binary. The host must refuse
// it without calling register_kinds.
struct NeverKind: TaskKind {
    let name = "never"
    let version = "1"
    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) {}
    func summary(of configuration: Void, request: JobRequest) -> String { "never" }
    func makeJob(configuration: Void, request: JobRequest, context: TaskContext) throws -> Job { BlockJob {} }
}

/// The plugin's one C entry point, which kiln calls once, on the thread that loads the plugin.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "oldabi", version: "0.1.0")
        plugin.register(NeverKind())
    }
}
