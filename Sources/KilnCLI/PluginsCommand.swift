import KilnCommandLine
import KilnHost
import KilnPluginAPI

extension Kiln {
    struct Plugins {
        static let spec = CommandSpec(
            name: "plugins",
            abstract: "List the task plugins kiln can load: each one's name, version, ABI, file and task kinds.",
            discussion: """
                Plugins are the Taskfile's 'plugins:' entries and every libkiln-NAME.so in the \
                --plugin-path directories, then KILN_PLUGIN_PATH, then kiln's own directory. A \
                plugin that can't be loaded is listed with the reason, and the exit status is 1.
                """,
            options: TaskfileOptions.specs + [.flag("json", help: "Print a JSON array instead of text.")]
        )

        var options: TaskfileOptions
        var json: Bool

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            json = arguments.flag("json")
        }

        func run() throws {
            let registry = TaskKindRegistry()
            let loader = PluginLoader(options: options.plugins, registry: registry)
            var candidates: [String] = []
            if let located = locateTaskfile(options), let taskfile = try? TaskfileLoader().load(path: located.path) {
                candidates += taskfile.plugins.map(\.value)
            }
            candidates += loader.available().map(\.file)
            var seen = Set<String>()
            var rows: [JSONValue] = []
            var text = ""
            var failed = false
            for candidate in candidates where seen.insert(candidate).inserted {
                do {
                    let plugin = try loader.load(candidate)
                    rows.append(
                        .object([
                            ("name", .string(plugin.name)), ("version", .string(plugin.version)),
                            ("abi", .integer(Int(plugin.abiVersion))), ("file", .string(plugin.file)),
                            ("kinds", .array(plugin.kinds.map { .string($0) })),
                        ])
                    )
                    text += "\(plugin.name) \(plugin.version)  ABI \(plugin.abiVersion)  \(plugin.file)\n"
                    text += "    kinds: \(plugin.kinds.joined(separator: ", "))\n"
                } catch {
                    failed = true
                    rows.append(.object([("file", .string(candidate)), ("error", .string(error.message))]))
                    text += "\(candidate): \(error.message)\n"
                }
            }
            if json {
                System.write(JSONValue.array(rows).serialized() + "\n", to: 1)
            } else {
                let search = loader.directories.joined(separator: ":")
                System.write(text.isEmpty ? "kiln: no plugins found (searched \(search))\n" : text, to: 1)
            }
            Kiln.exit(failed ? ExitStatus.jobFailed : 0)
        }
    }
}
