import ArgumentParser
import KilnHost
import KilnPaths

extension Kiln {
    struct Clean: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clean",
            abstract:
                "Remove the declared outputs ('generates') of the tasks given (all when none) and forget the build state.",
            discussion:
                "The next run rebuilds everything. Outputs of 'each: sources' tasks are found from the files matching their sources now."
        )

        @OptionGroup var options: TaskfileOptions

        @Argument(help: "Tasks whose outputs to remove (default: every task).")
        var tasks: [String] = []

        @Flag(help: "Wait for another kiln run on this project to finish, instead of failing at once.")
        var wait = false

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
