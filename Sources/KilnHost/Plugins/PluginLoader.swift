import KilnPaths
import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where kiln looks for plugins, and whether it may load insecure ones.
///
/// Threading: a value type.
public struct PluginOptions: Sendable {
    /// `--plugin-path` directories, searched first, in order.
    public var searchPaths: [String]
    /// `--allow-insecure-plugins`: load plugin files or directories writable by others.
    public var allowInsecure: Bool

    /// Creates options.
    public init(searchPaths: [String] = [], allowInsecure: Bool = false) {
        self.searchPaths = searchPaths
        self.allowInsecure = allowInsecure
    }
}

/// A plugin that loaded: what `kiln plugins` lists.
///
/// Threading: a value type.
public struct LoadedPlugin: Sendable, Equatable {
    /// The name it declared.
    public var name: String
    /// The version it declared.
    public var version: String
    /// The file it was loaded from (absolute).
    public var file: String
    /// The plugin ABI it was built against (equal to the host's, or it would not have loaded).
    public var abiVersion: UInt32
    /// The task kinds it registered.
    public var kinds: [String]
}

/// A plugin that could not be loaded, and why, in words that say what to do.
///
/// Threading: a value type.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    /// The message.
    public var message: String
    /// The message.
    public var description: String { message }
}

/// Loads task plugins — shared libraries whose jobs subclass KilnJobs' `Job` — into the host.
///
/// - **Finding.** A name (`archive`) is looked for as `libkiln-archive.so` (then `archive.so`) in
///   the `--plugin-path` directories, then those of `KILN_PLUGIN_PATH` (colon-separated), then the
///   directory of the `kiln` executable (where `swift build` puts the bundled plugins). A path is
///   loaded as it is.
/// - **Security.** Loading a plugin runs its code: a plugin file or its directory that is
///   writable by group or others, or owned by someone other than the user or root, is refused
///   unless ``PluginOptions/allowInsecure``.
/// - **Loading.** `dlopen(RTLD_NOW | RTLD_LOCAL)`, then the one C entry point,
///   `kiln_plugin_entry`, fills a ``KilnPluginEntry``; its `abi_version`, compiled into the plugin
///   from `KILN_PLUGIN_ABI_VERSION`, is checked before anything else of the plugin runs, and only
///   a match lets `register_kinds` register the plugin's kinds. A library is **never** unloaded:
///   unloading Swift code leaves the runtime pointing at unmapped type metadata.
///
/// Threading: any member from any thread; the table of loaded files is guarded by its mutex.
public final class PluginLoader: Sendable {
    /// The host's plugin ABI: plugins must report the same.
    public static let abiVersion = kiln_plugin_abi_version()
    /// Bundled and discoverable plugins are named `libkiln-<name>.so`.
    public static let filePrefix = "libkiln-"

    /// The directories searched, in order.
    public let directories: [String]
    private let allowInsecure: Bool
    private let registry: TaskKindRegistry
    /// Files loaded into `registry`, by resolved path.
    private let loaded = HostMutex<[String: LoadedPlugin]>([:])

    /// Creates a loader that registers kinds into `registry`.
    ///
    /// - Parameters:
    ///   - options: `--plugin-path` and `--allow-insecure-plugins`.
    ///   - environmentPath: `KILN_PLUGIN_PATH`.
    ///   - executableDirectory: The directory of the running `kiln`.
    public init(
        options: PluginOptions,
        registry: TaskKindRegistry,
        environmentPath: String? = System.variable("KILN_PLUGIN_PATH"),
        executableDirectory: String? = System.executableDirectory
    ) {
        var directories = options.searchPaths.map { Path.absolute($0, base: Path.currentDirectory) }
        directories += (environmentPath ?? "").split(separator: ":").map {
            Path.absolute(String($0), base: Path.currentDirectory)
        }
        if let executableDirectory { directories.append(executableDirectory) }
        var seen = Set<String>()
        self.directories = directories.filter { seen.insert($0).inserted }
        self.allowInsecure = options.allowInsecure
        self.registry = registry
    }

    /// Every plugin loaded so far.
    public var plugins: [LoadedPlugin] {
        loaded.withLock { Array($0.values) }.sorted { $0.name < $1.name }
    }

    /// The file a plugin name stands for, and every place looked.
    public func find(_ name: String) -> (file: String?, looked: [String]) {
        var looked: [String] = []
        for directory in directories {
            for file in ["\(Self.filePrefix)\(name).so", "\(name).so"] {
                let candidate = Path.join(directory, file)
                looked.append(candidate)
                if Files.exists(candidate) { return (candidate, looked) }
            }
        }
        return (nil, looked)
    }

    /// Every `libkiln-*.so` on the search path (the first of each name), by name.
    public func available() -> [(name: String, file: String)] {
        var result: [(String, String)] = []
        var names = Set<String>()
        for directory in directories {
            let files = DirectoryListing.entries(of: directory).map(\.name).filter {
                $0.hasPrefix(Self.filePrefix) && $0.hasSuffix(".so")
            }
            for file in files.sorted() {
                let name = String(file.dropFirst(Self.filePrefix.count).dropLast(3))
                if names.insert(name).inserted { result.append((name, Path.join(directory, file))) }
            }
        }
        return result
    }

    /// Loads a plugin by name (searched) or path (containing `/`).
    ///
    /// - Throws: ``PluginError`` naming the plugin and the fix.
    public func load(_ nameOrPath: String) throws(PluginError) -> LoadedPlugin {
        if nameOrPath.contains("/") { return try load(file: nameOrPath) }
        let (file, looked) = find(nameOrPath)
        guard let file else {
            throw PluginError(
                message:
                    "plugin '\(nameOrPath)' not found; looked for \(looked.joined(separator: ", ")); add its directory with --plugin-path or KILN_PLUGIN_PATH"
            )
        }
        return try load(file: file)
    }

    /// Loads the plugin in `file` (once: a file already loaded returns what it registered).
    ///
    /// - Throws: ``PluginError``: the file is missing, insecure, not a loadable library, has no
    ///   entry point, was built against another ABI, or registered a kind another plugin has.
    public func load(file path: String) throws(PluginError) -> LoadedPlugin {
        let file = Path.absolute(path, base: Path.currentDirectory)
        guard Files.exists(file) else { throw PluginError(message: "plugin file \(file) does not exist") }
        if let known = loaded.withLock({ $0[file] }) { return known }
        // Opened once, without blocking (a FIFO would wait forever); the file checked is the
        // file loaded — through its descriptor — so nothing can be swapped in between.
        let descriptor = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw PluginError(message: "can't open plugin \(file): \(String(cString: strerror(errno)))")
        }
        // Kept open once loaded, as the library stays loaded: glibc knows a library by the name it
        // was opened under, so /proc/self/fd/N must never name another plugin later.
        var keepOpen = false
        defer { if !keepOpen { close(descriptor) } }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw PluginError(message: "plugin \(file) is not a regular file (a FIFO, a device or a directory)")
        }
        if !allowInsecure { try Self.checkOwnership(of: file, descriptor: descriptor, status: info) }

        guard let handle = dlopen("/proc/self/fd/\(descriptor)", RTLD_NOW | RTLD_LOCAL) else {
            throw PluginError(message: "can't load plugin \(file): \(Self.lastError())")
        }
        keepOpen = true
        // Never dlclose: see the type's documentation.
        guard let symbol = dlsym(handle, KILN_PLUGIN_ENTRY_SYMBOL) else {
            throw PluginError(
                message:
                    "\(file) is not a kiln plugin: it has no '\(KILN_PLUGIN_ENTRY_SYMBOL)' entry point (\(Self.lastError()))"
            )
        }
        typealias EntryPoint = @convention(c) (UnsafeMutablePointer<KilnPluginEntry>) -> Void
        let entryPoint = unsafeBitCast(symbol, to: EntryPoint.self)
        var entry = KilnPluginEntry(abi_version: 0, register_kinds: nil)
        entryPoint(&entry)
        guard entry.abi_version == Self.abiVersion else {
            throw PluginError(
                message:
                    "plugin \(file) was built against plugin ABI \(entry.abi_version), but this kiln has plugin ABI "
                    + "\(Self.abiVersion); rebuild the plugin against this kiln's KilnPluginAPI"
            )
        }
        guard let registerKinds = entry.register_kinds else {
            throw PluginError(
                message: "plugin \(file) set no register_kinds in its entry point, so it provides no task kinds"
            )
        }
        let registrar = PluginRegistrar(registry: registry, origin: file)
        withExtendedLifetime(registrar) { registerKinds(registrar.opaquePointer) }
        if let error = registrar.errors.first {
            throw PluginError(message: "plugin \(file): \(error)")
        }
        guard let name = registrar.declaredName, let version = registrar.declaredVersion else {
            throw PluginError(message: "plugin \(file) registered no name and version (call declare(name:version:))")
        }
        let plugin = LoadedPlugin(
            name: name,
            version: version,
            file: file,
            abiVersion: entry.abi_version,
            kinds: registrar.kindNames
        )
        loaded.withLock { $0[file] = plugin }
        return plugin
    }

    /// Refuses a plugin that anyone but its user (or root) could have written: the file itself,
    /// every directory above its real path (links resolved), and every directory on the path as
    /// named (where a link could be swapped) — ssh's StrictModes rule. A
    /// directory writable by others is allowed only with the sticky bit and root as owner (as
    /// `/tmp`): there, no one else can rename or remove what is yours.
    static func checkOwnership(of file: String, descriptor: Int32, status: stat) throws(PluginError) {
        let user = getuid()
        var real = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(descriptor)", &real, real.count - 1)
        let realPath =
            length > 0 ? String(decoding: real[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : file
        // The directories of the path as named (whoever can write one could have swapped the
        // name before it was opened), then the real file and the directories above it.
        var checks: [(path: String, info: stat)] = []
        var seen = Set<String>()
        for (start, fileStatus) in [(file, nil), (realPath, status)] as [(String, stat?)] {
            if let fileStatus, seen.insert(start).inserted { checks.append((start, fileStatus)) }
            var directory = Path.directory(of: start)
            while seen.insert(directory).inserted {
                var info = stat()
                guard stat(directory, &info) == 0 else { break }
                checks.append((directory, info))
                if directory == "/" { break }
                directory = Path.directory(of: directory)
            }
        }
        for (path, info) in checks {
            let isDirectoryOfPlugin = path == Path.directory(of: file) || path == Path.directory(of: realPath)
            let what =
                path == realPath ? "plugin file" : isDirectoryOfPlugin ? "plugin directory" : "directory above it"
            let shared = info.st_mode & S_ISVTX != 0 && info.st_uid == 0 && path != realPath
            if info.st_mode & (S_IWGRP | S_IWOTH) != 0, !shared {
                throw PluginError(
                    message:
                        "refusing to load \(file): the \(what) \(path) is writable by \(info.st_mode & S_IWOTH != 0 ? "others" : "its group") "
                        + "(mode \(String(info.st_mode & 0o7777, radix: 8))), and loading a plugin runs its code; "
                        + "run 'chmod go-w \(path)', or pass --allow-insecure-plugins"
                )
            }
            if info.st_uid != user, info.st_uid != 0 {
                throw PluginError(
                    message:
                        "refusing to load \(file): the \(what) \(path) belongs to user \(info.st_uid), not to you (\(user)) or root, "
                        + "and loading a plugin runs its code; pass --allow-insecure-plugins if you trust it"
                )
            }
        }
    }

    private static func lastError() -> String {
        dlerror().map { String(cString: $0) } ?? "unknown error"
    }
}
