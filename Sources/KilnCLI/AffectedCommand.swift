import KilnCommandLine
import KilnGit
import KilnGitFormat
import KilnHost
import KilnPaths

/// Which changes count: `--base`/`--head`, `--staged`, or the working tree.
///
/// Threading: a value type.
struct ChangeOptions {
    static let specs: [OptionSpec] = [
        .value(
            "base",
            help:
                "Compare from the merge base of this revision and --head (like git diff BASE...HEAD), instead of the working tree."
        ),
        .value("head", help: "The revision compared with --base (default: HEAD)."),
        .flag("staged", help: "Only staged changes (the index against HEAD)."),
        .value("changed-files-from", help: "", hidden: true),
    ]

    var base: String?
    var head: String?
    var staged: Bool
    /// Set by `kiln hook`: the changed files (absolute, one per line), as the hook computed them.
    var changedFilesFrom: String?

    init(_ arguments: ParsedArguments) {
        base = arguments.value("base")
        head = arguments.value("head")
        staged = arguments.flag("staged")
        changedFilesFrom = arguments.value("changed-files-from")
    }

    /// The changed files, absolute (both paths of a rename), or `nil` outside a git repository
    /// (a note is printed: everything counts then).
    ///
    /// - Throws: A failure with status 2 for a bad revision.
    func changedFiles(in directory: String) throws(BuildSession.Failure) -> [String]? {
        if let changedFilesFrom {
            let text = (try? Files.readText(changedFilesFrom)) ?? ""
            return text.split(separator: "\n").map(String.init)
        }
        let repository: GitRepository
        do {
            repository = try GitRepository(containing: directory)
        } catch {
            System.writeError(
                "kiln: \(error.message); without git, every task counts as affected and content signatures decide what runs\n"
            )
            return nil
        }
        do {
            let changes: [GitChange]
            if let base {
                changes = try repository.changes(base: base, head: head ?? "HEAD")
            } else if staged {
                changes = try repository.fastStagedChanges()
            } else {
                changes = try repository.fastWorkingTreeChanges()
            }
            return changes.flatMap(\.paths).map { repository.workingDirectory + "/" + $0 }
        } catch {
            throw BuildSession.Failure(description: "kiln: \(error.message)", exitStatus: ExitStatus.invalidTaskfile)
        }
    }
}

extension Kiln {
    struct Affected {
        static let spec = CommandSpec(
            name: "affected",
            abstract:
                "Print the tasks that changed files affect, and every task that depends on them, without running.",
            discussion: """
                Changed files come from git: the working tree and the index against HEAD \
                (untracked files included, ignored ones not), or --staged, or --base REV [--head REV]. \
                A task is affected when one of its sources matches a changed file or its Taskfile \
                changed; so is every task that depends on it. 'kiln run --affected' runs them.
                """,
            options: TaskfileOptions.specs + ChangeOptions.specs + [
                .flag("json", help: "Print a JSON object instead of text.")
            ],
            positionals: [.many("tasks", help: "The tasks a run would be given (default: 'default').")]
        )

        var options: TaskfileOptions
        var changes: ChangeOptions
        var tasks: [String]
        var json: Bool

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            changes = ChangeOptions(arguments)
            tasks = arguments.positionals
            json = arguments.flag("json")
        }

        func run() throws {
            let (project, plan) = try loadAndPlan(
                options,
                targets: tasks,
                everyTaskWhenEmpty: false,
                runner: ProcessMonitor()
            )
            let changes = self.changes
            guard
                let changed = try session({ () throws(BuildSession.Failure) in
                    try changes.changedFiles(in: project.taskfile.root)
                })
            else {
                if json {
                    System.write(
                        JSONValue.object([
                            ("git", .bool(false)), ("tasks", .array(plan.tasks.map { .string($0.definition.name) })),
                        ]).serialized() + "\n",
                        to: 1
                    )
                } else {
                    System.write(plan.tasks.map { $0.definition.name + "\n" }.joined(), to: 1)
                }
                Kiln.exit()
            }
            let affected = plan.affected(by: changed, discovered: BuildSession.discoveredInputs(for: plan))
            if json {
                let tasks: [JSONValue] = affected.shownTasks.map { name in
                    var fields: [(String, JSONValue)] = [
                        ("name", .string(name)), ("reason", .string(affected.reason(for: name))),
                    ]
                    if let files = affected.eachFiles[name] {
                        fields.append(("files", .array(files.sorted().map { .string($0) })))
                    }
                    return .object(fields)
                }
                let document: JSONValue = .object([
                    ("git", .bool(true)), ("changedFiles", .array(affected.changedFiles.map { .string($0) })),
                    ("tasks", .array(tasks)),
                ])
                System.write(document.serialized() + "\n", to: 1)
            } else {
                var text =
                    "kiln: \(affected.changedFiles.count) changed file\(affected.changedFiles.count == 1 ? "" : "s"), "
                let shown = affected.shownTasks
                text += "\(shown.count) affected task\(shown.count == 1 ? "" : "s")\n"
                for name in shown {
                    text += "  \(name): \(affected.reason(for: name))"
                    if let files = affected.eachFiles[name] {
                        text += " (files: \(files.sorted().joined(separator: ", ")))"
                    }
                    text += "\n"
                }
                System.write(text, to: 1)
            }
            Kiln.exit()
        }
    }
}
