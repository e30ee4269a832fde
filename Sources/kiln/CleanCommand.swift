import ArgumentParser
import KilnHost

extension Kiln {
    struct Clean: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the declared outputs ('generates') of the tasks given (all when none) and forget the build state.",
            discussion: "The next run rebuilds everything. Outputs of 'each: sources' tasks are found from the files matching their sources now."
        )

        @OptionGroup var options: TaskfileOptions

        @Argument(help: "Tasks whose outputs to remove (default: every task).")
        var tasks: [String] = []

        @Flag(help: "Wait for another kiln run on this project to finish, instead of failing at once.")
        var wait = false

        func run() throws {
            let project: Project
            let plan: BuildPlan
            do {
                project = try Project(taskfilePath: options.taskfile, currentDirectory: System.currentDirectory, runner: ProcessMonitor())
                let targets = tasks.isEmpty ? project.taskfile.tasks.map(\.name) : tasks
                plan = try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(targets: targets)
            } catch {
                exitWithTaskfileErrors(error)
            }
            let state: BuildState
            do {
                state = try BuildState(root: project.taskfile.root, wait: wait) { System.writeError($0 + "\n") }
            } catch {
                System.writeError("kiln: \(error)\n")
                Kiln.exit(withError: ExitCode(ExitStatus.projectBusy))
            }
            let removed = Project.removeOutputs(plan)
            state.clear()
            state.close()
            print("kiln: removed \(removed) output\(removed == 1 ? "" : "s") and the build state")
        }
    }
}
