import ArgumentParser
import Foundation
import KilnHost

extension Kiln {
    struct Graph: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the task graph: the tasks given (all when none) and their dependencies."
        )

        enum Format: String, ExpressibleByArgument, CaseIterable {
            case dot, json
        }

        @OptionGroup var options: TaskfileOptions

        @Argument(help: "Tasks whose graph to print (default: every task).")
        var tasks: [String] = []

        @Option(help: "dot (Graphviz) or json.")
        var format: Format = .dot

        func run() throws {
            let project: Project
            let plan: BuildPlan
            do {
                project = try Project(taskfilePath: options.taskfile, currentDirectory: FileManager.default.currentDirectoryPath, runner: ProcessMonitor())
                let targets = tasks.isEmpty ? project.taskfile.tasks.map(\.name) : tasks
                plan = try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(targets: targets)
            } catch {
                exitWithTaskfileErrors(error)
            }
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
                let objects: [[String: Any]] = plan.tasks.map { task in
                    let definition = task.definition
                    return [
                        "name": definition.name, "deps": definition.dependencies.map(\.value),
                        "kind": definition.kind.value, "each": definition.each.rawValue,
                        "resources": definition.resources.isEmpty ? ["cpu"] : definition.resources.map(\.value),
                    ]
                }
                let data = try JSONSerialization.data(withJSONObject: ["tasks": objects], options: [.prettyPrinted, .sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            }
        }

        private func quote(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\\\\n", with: "\\n") + "\""
        }
    }
}
