import KilnCommandLine
import KilnHost
import KilnPaths

extension Kiln {
    struct Clean {
        static let spec = CommandSpec(
            name: "clean",
            abstract:
                "Remove the declared outputs ('generates') of the tasks given (all when none) and forget the build state.",
            discussion:
                "The next run rebuilds everything. Outputs of 'each: sources' tasks are found from the files matching their sources now.",
            options: TaskfileOptions.specs + [
                .flag("wait", help: "Wait for another kiln run on this project to finish, instead of failing at once.")
            ],
            positionals: [.many("tasks", help: "Tasks whose outputs to remove (default: every task).")]
        )

        var options: TaskfileOptions
        var tasks: [String]
        var wait: Bool

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            tasks = arguments.positionals
            wait = arguments.flag("wait")
        }

        func run() throws {
            let (project, plan) = try loadAndPlan(
                options,
                targets: tasks,
                everyTaskWhenEmpty: true,
                runner: ProcessMonitor()
            )
            let state = try openBuildState(root: project.taskfile.root, wait: wait)
            UpToDateSnapshot.remove(root: project.taskfile.root)
            let removed = Project.removeOutputs(plan)
            state.clear()
            state.close()
            print("kiln: removed \(removed) output\(removed == 1 ? "" : "s") and the build state")
        }
    }
}
