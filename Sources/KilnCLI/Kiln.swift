import Glibc
import KilnCommandLine
import KilnHost
import KilnPaths

/// Runs kiln's command line (`CommandLine.arguments`): the `kiln` launcher calls it after
/// loading this library, for everything it doesn't answer itself.
///
/// Threading: the main thread, once.
///
/// - Returns: Never: kiln exits with the command's status.
@_cdecl("kiln_cli_main")
public func kilnCLIMain() -> Int32 {
    Kiln.main(Array(CommandLine.arguments.dropFirst()))
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
enum Kiln {
    static let version = "0.1.0"

    /// Whether the launcher found a changed path, and what it found (``kilnCLIChangeSeen(_:_:)``).
    static let changeSeen = HostMutex<ChangeSeen?>(nil)

    /// What the command line takes, and what `kiln --help` says: every command's spec.
    static let spec = CommandSpec(
        name: "kiln",
        abstract: "Run the tasks of a Taskfile on per-resource job queues, rebuilding only what changed.",
        discussion: """
            Exit codes: 0 success; 1 a job failed; 2 the Taskfile is missing or invalid; \
            3 another kiln run holds the project (see run --wait); 64 bad command-line usage; \
            130 interrupted (Ctrl-C or SIGTERM).
            """,
        subcommands: [
            Run.spec, Status.spec, Explain.spec, Affected.spec, Hooks.spec, Hook.spec, List.spec, Graph.spec,
            Clean.spec, Plugins.spec, WorkerCommand.spec,
        ],
        defaultSubcommand: "run"
    )

    /// Runs the command `words` (the command line after `kiln`) names, and exits with its status:
    /// 64 for a command line kiln can't take, said on standard error.
    static func main(_ words: [String]) -> Never {
        do {
            switch try CommandLineParser.parse(words, root: spec) {
            case .help(let path):
                System.write(HelpText.help(for: path, root: spec), to: 1)
            case .version:
                System.write("kiln \(version)\n", to: 1)
            case .command(let arguments):
                try run(arguments)
            }
        } catch let error as UsageError {
            System.writeError(HelpText.error(error, root: spec))
            exit(64)
        } catch let error as ExitCode {
            exit(error.status)
        } catch {
            System.writeError("kiln: error: \(error)\n")
            exit(1)
        }
        exit()
    }

    /// Runs the command `arguments` are for.
    ///
    /// - Throws: A ``UsageError`` for options a command refuses, an ``ExitCode`` for a failure
    ///   already said.
    private static func run(_ arguments: ParsedArguments) throws {
        switch arguments.command {
        case ["run"]: try Run(arguments).run()
        case ["status"]: try Status(arguments).run()
        case ["explain"]: try Explain(arguments).run()
        case ["affected"]: try Affected(arguments).run()
        case ["hooks", "install"]: try Hooks.Install(arguments).run()
        case ["hooks", "uninstall"]: try Hooks.Uninstall(arguments).run()
        case ["hooks", "status"]: try Hooks.Status(arguments).run()
        case ["hook"]: try Hook(arguments).run()
        case ["list"]: try List(arguments).run()
        case ["graph"]: try Graph(arguments).run()
        case ["clean"]: try Clean(arguments).run()
        case ["plugins"]: try Plugins(arguments).run()
        case ["worker"]: try WorkerCommand(arguments).run()
        default: preconditionFailure("kiln has no command \(arguments.command)")
        }
    }

    /// Ends kiln with `status` (exit(3) flushes what `print` buffered). A command exits rather
    /// than returns where it holds a large graph: the kernel frees it faster than deinit does.
    static func exit(_ status: Int32 = 0) -> Never {
        Glibc.exit(status)
    }
}

/// A failure already said: the exit status it means.
///
/// Threading: a value type; `Sendable`.
struct ExitCode: Error, Sendable {
    let status: Int32

    init(_ status: Int32) {
        self.status = status
    }
}

/// Options every command that reads a Taskfile shares.
struct TaskfileOptions {
    static let specs: [OptionSpec] = [
        .value(
            "taskfile",
            short: "t",
            help: "The Taskfile to use (default: Taskfile.yml here or in a parent directory)."
        ),
        .repeatable(
            "plugin-path",
            help: "A directory to look for plugins in, before KILN_PLUGIN_PATH and kiln's own directory (repeatable)."
        ),
        .flag(
            "allow-insecure-plugins",
            help: "Load plugins even from files or directories others can write (loading a plugin runs its code)."
        ),
        .value("dir", help: "The directory to work in, as if kiln were started there (go-task's --dir)."),
    ]

    var taskfile: String?
    var pluginPath: [String] = []
    var allowInsecurePlugins = false
    var dir: String?

    init(_ arguments: ParsedArguments) {
        taskfile = arguments.value("taskfile")
        pluginPath = arguments.values("plugin-path")
        allowInsecurePlugins = arguments.flag("allow-insecure-plugins")
        dir = arguments.value("dir")
    }

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
