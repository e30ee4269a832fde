import ArgumentParser
import KilnHost
import KilnPaths

/// Runs kiln's command line (`CommandLine.arguments`): the `kiln` launcher calls it after
/// loading this library, for everything it doesn't answer itself.
///
/// Threading: the main thread, once.
///
/// - Returns: 0; a command that fails exits the process with its status.
@_cdecl("kiln_cli_main")
public func kilnCLIMain() -> Int32 {
    let arguments = CommandLine.arguments
    if arguments.count > 1, arguments[1] == "worker" { return WorkerCommand.main(Array(arguments.dropFirst(2))) }
    Kiln.main()
    return 0
}

/// Tells the command line that the launcher's look at the up-to-date snapshot found a changed
/// path, so `kiln run` has work: it loads the Taskfile model at once
/// (``BuildSession/RunSettings/changeSeenBefore``), and takes what the look found instead of
/// looking at every path again (`bytes`: an encoded `UpToDateSnapshot.Handover`, copied here;
/// `nil` or undecodable, the run looks for itself). The launcher calls it, when it applies,
/// before ``kilnCLIMain()``. (Named anew when it took the bytes: a launcher built before, which
/// called `kiln_cli_change_seen()` with none, finds no such symbol here and hands nothing over.)
///
/// Threading: the main thread, before ``kilnCLIMain()``.
@_cdecl("kiln_cli_look_handed_over")
public func kilnCLIChangeSeen(_ bytes: UnsafePointer<UInt8>?, _ count: Int) {
    let handover = bytes.flatMap {
        UpToDateSnapshot.Handover.decode(Array(UnsafeBufferPointer(start: $0, count: count)))
    }
    Kiln.changeSeen.withLock { $0 = ChangeSeen(handover: handover) }
}

/// What the launcher said of the snapshot before the command line ran (``kilnCLIChangeSeen(_:_:)``).
///
/// Threading: a value type.
struct ChangeSeen: Sendable {
    /// What its look found, when it could be read.
    var handover: UpToDateSnapshot.Handover?
}

/// The `kiln` command: parses arguments and prints; the work is in KilnHost.
struct Kiln: ParsableCommand {
    static let version = "0.1.0"

    /// Whether the launcher found a changed path, and what it found (``kilnCLIChangeSeen(_:_:)``).
    static let changeSeen = HostMutex<ChangeSeen?>(nil)

    static let configuration = CommandConfiguration(
        commandName: "kiln",
        abstract: "Run the tasks of a Taskfile on per-resource job queues, rebuilding only what changed.",
        discussion: """
            Exit codes: 0 success; 1 a job failed; 2 the Taskfile is missing or invalid; \
            3 another kiln run holds the project (see run --wait); 64 bad command-line usage; \
            130 interrupted (Ctrl-C or SIGTERM).

            kiln worker --server grpc://HOST:PORT runs actions for a BuildGrid farm (kiln worker --help).
            """,
        version: "kiln \(version)",
        subcommands: [
            Run.self, Status.self, Explain.self, Affected.self, Hooks.self, Hook.self, List.self, Graph.self,
            Clean.self, Plugins.self,
        ],
        defaultSubcommand: Run.self
    )
}

/// Options every command that reads a Taskfile shares.
struct TaskfileOptions: ParsableArguments {
    @Option(
        name: [.customShort("t"), .long],
        help: "The Taskfile to use (default: Taskfile.yml here or in a parent directory)."
    )
    var taskfile: String?

    @Option(help: "A directory to look for plugins in, before KILN_PLUGIN_PATH and kiln's own directory (repeatable).")
    var pluginPath: [String] = []

    @Flag(help: "Load plugins even from files or directories others can write (loading a plugin runs its code).")
    var allowInsecurePlugins = false

    @Option(name: .long, help: "The directory to work in, as if kiln were started there (go-task's --dir).")
    var dir: String?

    var plugins: PluginOptions { PluginOptions(searchPaths: pluginPath, allowInsecure: allowInsecurePlugins) }

    /// Where kiln works: `--dir`, made absolute, or the directory it was started in.
    var workingDirectory: String {
        guard let dir else { return System.currentDirectory }
        return dir.hasPrefix("/") ? dir : System.currentDirectory + "/" + dir
    }
}

/// Exit codes, as documented in `kiln --help`.
enum ExitStatus {
    static let jobFailed: Int32 = 1
    static let invalidTaskfile: Int32 = 2
    static let projectBusy: Int32 = 3
    static let stateUnwritable: Int32 = 4
    static let interrupted: Int32 = 130
}

/// The words after `kiln run`/`status`/`explain`: task names, and `NAME=value` variables for the
/// Taskfile (go-task's rule: a word with `=` is a variable).
struct TaskArguments {
    var targets: [String] = []
    var variables: [(name: String, value: String)] = []

    init(_ words: [String]) {
        for word in words {
            guard let equals = word.firstIndex(of: "=") else {
                targets.append(word)
                continue
            }
            variables.append((String(word[..<equals]), String(word[word.index(after: equals)...])))
        }
    }
}

/// Loads the project and plans `targets` — every task when `targets` is empty and
/// `everyTaskWhenEmpty`, the `default` task otherwise.
///
/// - Throws: The exit status 2, once the Taskfile's located errors are printed.
func loadAndPlan(
    _ options: TaskfileOptions,
    targets: [String],
    everyTaskWhenEmpty: Bool,
    runner: any CommandRunner
) throws(ExitCode) -> (Project, BuildPlan) {
    do {
        var context = TaskfileContext.process
        context.workingDirectory = ""
        context.dynamicScope = targets.isEmpty && everyTaskWhenEmpty ? .all : .tasks(targets)
        let project = try Project(
            taskfilePath: options.taskfile,
            currentDirectory: options.workingDirectory,
            runner: runner,
            plugins: options.plugins,
            context: context
        )
        // The tasks the Taskfile defines, not the pieces kiln makes of them.
        let names =
            targets.isEmpty && everyTaskWhenEmpty
            ? project.taskfile.tasks.filter { $0.partOf == nil }.map(\.name) : targets
        return (project, try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(targets: names))
    } catch {
        throw taskfileFailure(error)
    }
}

/// Opens the project's build state with its lock.
///
/// - Throws: The exit status 3 when another run holds the lock, 4 when `.kiln` can't be written,
///   once that is printed.
func openBuildState(root: String, wait: Bool) throws(ExitCode) -> BuildState {
    do {
        return BuildState(root: root, lock: try ProjectLock(root: root, wait: wait)) { System.writeError($0 + "\n") }
    } catch {
        System.writeError("kiln: \(error)\n")
        throw ExitCode(error.isBusy ? ExitStatus.projectBusy : ExitStatus.stateUnwritable)
    }
}

/// The main Taskfile (absolute) and the project root, found without loading anything; `nil`
/// when there is none (loading then says so).
func locateTaskfile(_ options: TaskfileOptions) -> (path: String, root: String)? {
    Project.locateTaskfile(options.taskfile, currentDirectory: options.workingDirectory)
}

/// Prints Taskfile errors to standard error; the exit status 2 to throw.
func taskfileFailure(_ errors: TaskfileErrors) -> ExitCode {
    System.writeError(errors.description + "\n")
    return ExitCode(ExitStatus.invalidTaskfile)
}
