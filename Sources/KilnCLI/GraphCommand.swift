import KilnCommandLine
import KilnHost

extension Kiln {
    struct Graph {
        static let spec = CommandSpec(
            name: "graph",
            abstract: "Print the task graph: the tasks given (all when none) and their dependencies.",
            options: TaskfileOptions.specs + [.value("format", help: "dot (Graphviz) or json. (default: dot)")],
            positionals: [.many("tasks", help: "Tasks whose graph to print (default: every task).")]
        )

        enum Format: String, CaseIterable {
            case dot, json
        }

        var options: TaskfileOptions
        var tasks: [String]
        var format: Format

        /// - Throws: A usage error for a format other than dot or json.
        init(_ arguments: ParsedArguments) throws(UsageError) {
            options = TaskfileOptions(arguments)
            tasks = arguments.positionals
            let choice = try arguments.choice("format", among: Format.allCases.map(\.rawValue))
            format = choice.flatMap(Format.init(rawValue:)) ?? .dot
        }

        func run() throws {
            let (_, plan) = try loadAndPlan(options, targets: tasks, everyTaskWhenEmpty: true, runner: ProcessMonitor())
            switch format {
            case .dot:
                print("digraph kiln {")
                print("  rankdir=LR;")
                for task in plan.tasks {
                    let definition = task.definition
                    var label = definition.name
                    if definition.each == .sources { label += "\\n(each source)" }
                    print("  \(quote(definition.name)) [label=\(quote(label))];")
                    for dependency in definition.dependencies {
                        print("  \(quote(definition.name)) -> \(quote(dependency.value));")
                    }
                }
                print("}")
            case .json:
                let objects: [JSONValue] = plan.tasks.map { task in
                    let definition = task.definition
                    let resources = task.resourceClaims
                    return .object([
                        ("name", .string(definition.name)),
                        ("deps", .array(definition.dependencies.map { .string($0.value) })),
                        ("kind", .string(definition.kind.value)), ("each", .string(definition.each.rawValue)),
                        ("resources", .array(resources.map(JSONValue.string))),
                    ])
                }
                print(JSONValue.object([("tasks", .array(objects))]).serialized(pretty: true))
            }
        }

        private func quote(_ text: String) -> String {
            // Keep `\n` (a DOT line break) as written; escape quotes.
            "\"" + text.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\\\"") + "\""
        }
    }
}
