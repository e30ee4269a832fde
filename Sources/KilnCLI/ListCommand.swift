import ArgumentParser
import KilnHost

extension Kiln {
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the tasks of the Taskfile.")

        @OptionGroup var options: TaskfileOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() throws {
            let project: Project
            do {
                project = try Project(
                    taskfilePath: options.taskfile, currentDirectory: System.currentDirectory, runner: ProcessMonitor(),
                    plugins: options.plugins
                )
            } catch {
                throw taskfileFailure(error)
            }
            let tasks = project.taskfile.tasks
            if json {
                let objects: [JSONValue] = tasks.map { task in
                    var object: [(String, JSONValue)] = [
                        ("name", .string(task.name)), ("deps", .array(task.dependencies.map { .string($0.value) })),
                        ("kind", .string(task.kind.value)),
                    ]
                    if let summary = task.summary { object.append(("desc", .string(summary))) }
                    return .object(object)
                }
                print(JSONValue.object([("tasks", .array(objects))]).serialized(pretty: true))
                return
            }
            let width = tasks.map(\.name.count).max() ?? 0
            for task in tasks {
                let padding = String(repeating: " ", count: width - task.name.count)
                print("* \(task.name):\(padding)  \(task.summary ?? "")")
            }
        }
    }
}
