@_exported import CKilnPluginABI
import Synchronization

/// What a plugin's `register_kinds` receives from the host: the plugin says who it is and
/// registers its task kinds, exactly as the host registers its built-in `shell` kind.
///
/// A plugin's whole C surface is one entry point:
///
/// ```swift
/// @_cdecl("kiln_plugin_entry")
/// public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
///     entry.pointee.abi_version = kiln_plugin_abi_version()  // compiled into the plugin: the ABI check
///     entry.pointee.register_kinds = { registrar in
///         let plugin = PluginRegistrar.borrow(registrar)
///         plugin.declare(name: "greet", version: "1.0.0")
///         plugin.register(GreetKind())
///     }
/// }
/// ```
///
/// The host reads `abi_version` before it calls anything in the plugin, and refuses a plugin
/// built against another ABI with both numbers in the message.
///
/// Threading: any member from any thread; guarded by its mutex. The host uses one registrar per
/// plugin file, while it loads it.
public final class PluginRegistrar: Sendable {
    private struct State {
        var name: String?
        var version: String?
        var kinds: [String] = []
        var errors: [String] = []
    }
    private let state = Mutex(State())
    private let registry: TaskKindRegistry
    /// The plugin's file, for messages.
    public let origin: String

    /// Creates the registrar the host hands to the plugin at `origin`.
    public init(registry: TaskKindRegistry, origin: String) {
        self.registry = registry
        self.origin = origin
    }

    /// The registrar behind the opaque pointer `register_kinds` receives (not retained: the host
    /// keeps it alive during the call).
    public static func borrow(_ pointer: UnsafeMutableRawPointer) -> PluginRegistrar {
        Unmanaged<PluginRegistrar>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The opaque pointer to pass to `register_kinds`; valid while the registrar lives.
    public var opaquePointer: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    /// Names the plugin and its version. Call it before ``register(_:)``: the version goes into
    /// the signature of every job of the plugin's kinds, so a new version reruns them.
    public func declare(name: String, version: String) {
        state.withLock { state in
            state.name = name
            state.version = version
        }
    }

    /// Registers a kind. A name another plugin (or the host) already registered is recorded as an
    /// error, which the host reports naming both; the kind is not registered.
    public func register<Kind: TaskKind>(_ kind: Kind) {
        let version = state.withLock { $0.version }
        guard let version else {
            state.withLock {
                $0.errors.append(
                    "it registered task kind '\(kind.name)' before declaring its name and version (call declare(name:version:) first)"
                )
            }
            return
        }
        do {
            try registry.register(kind, origin: origin, pluginVersion: version)
            state.withLock { $0.kinds.append(kind.name) }
        } catch {
            state.withLock { $0.errors.append(error.message) }
        }
    }

    /// The name the plugin declared.
    public var declaredName: String? { state.withLock { $0.name } }
    /// The version the plugin declared.
    public var declaredVersion: String? { state.withLock { $0.version } }
    /// The kinds it registered.
    public var kindNames: [String] { state.withLock { $0.kinds } }
    /// What went wrong while it registered.
    public var errors: [String] { state.withLock { $0.errors } }
}
