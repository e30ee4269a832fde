import ArgumentParser
import KilnHost

/// The `kiln` command: parses arguments and prints; the work is in KilnHost.
@main
struct Kiln: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "kiln",
        abstract: "Run the tasks of a Taskfile on per-resource job queues, rebuilding only what changed.",
        discussion: """
            Exit codes: 0 success; 1 a job failed; 2 the Taskfile is missing or invalid; \
            3 another kiln run holds the project (see run --wait); 64 bad command-line usage; \
            130 interrupted (Ctrl-C or SIGTERM).
            """,
        version: "kiln \(version)",
        subcommands: [Run.self, List.self, Graph.self, Clean.self],
        defaultSubcommand: Run.self
    )
}

/// Options every command that reads a Taskfile shares.
struct TaskfileOptions: ParsableArguments {
    @Option(name: [.customShort("t"), .long], help: "The Taskfile to use (default: Taskfile.yml here or in a parent directory).")
    var taskfile: String?
}

/// Exit codes, as documented in `kiln --help`.
enum ExitStatus {
    static let jobFailed: Int32 = 1
    static let invalidTaskfile: Int32 = 2
    static let projectBusy: Int32 = 3
    static let interrupted: Int32 = 130
}

/// Loads the project and plans `targets` — every task when `targets` is empty and
/// `everyTaskWhenEmpty`, the `default` task otherwise — or prints the errors and exits with status 2.
func loadAndPlan(
    _ options: TaskfileOptions, targets: [String], everyTaskWhenEmpty: Bool, runner: any CommandRunner
) -> (Project, BuildPlan) {
    do {
        let project = try Project(taskfilePath: options.taskfile, currentDirectory: System.currentDirectory, runner: runner)
        let names = targets.isEmpty && everyTaskWhenEmpty ? project.taskfile.tasks.map(\.name) : targets
        return (project, try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(targets: names))
    } catch {
        exitWithTaskfileErrors(error)
    }
}

/// Opens the project's build state, or exits with status 3 when another run holds it.
func openBuildState(root: String, wait: Bool) -> BuildState {
    do {
        return try BuildState(root: root, wait: wait) { System.writeError($0 + "\n") }
    } catch {
        System.writeError("kiln: \(error)\n")
        Kiln.exit(withError: ExitCode(ExitStatus.projectBusy))
    }
}

/// Prints Taskfile errors to standard error and exits with status 2.
func exitWithTaskfileErrors(_ errors: TaskfileErrors) -> Never {
    System.writeError(errors.description + "\n")
    Kiln.exit(withError: ExitCode(ExitStatus.invalidTaskfile))
}
