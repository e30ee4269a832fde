import ArgumentParser
import Foundation
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
                project = try Project(taskfilePath: options.taskfile, currentDirectory: FileManager.default.currentDirectoryPath, runner: ProcessMonitor())
            } catch {
                exitWithTaskfileErrors(error)
            }
            let tasks = project.taskfile.tasks
            if json {
                let objects: [[String: Any]] = tasks.map { task in
                    var object: [String: Any] = ["name": task.name, "deps": task.dependencies.map(\.value), "kind": task.kind.value]
                    if let summary = task.summary { object["desc"] = summary }
                    return object
                }
                let data = try JSONSerialization.data(withJSONObject: ["tasks": objects], options: [.prettyPrinted, .sortedKeys])
                print(String(decoding: data, as: UTF8.self))
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
