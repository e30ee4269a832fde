import KilnCommandLine
import KilnGit
import KilnGitFormat
import KilnHookPlan
import KilnHost
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// The line that marks a hook script as Kiln's.
private let hookMarker = "# kiln hook: written by 'kiln hooks install'; 'kiln hooks uninstall' removes it."

extension Kiln {
    enum Hooks {
        static let spec = CommandSpec(
            name: "hooks",
            abstract: "Install, remove or show the git hook scripts that run the Taskfile's 'hooks:'.",
            discussion: """
                Scripts go where git looks for hooks: core.hooksPath, or the hooks directory of the \
                repository (shared by its worktrees). A hook that isn't Kiln's is kept: it is renamed \
                NAME.kiln-chained and run first; uninstall puts it back.
                """,
            subcommands: [Install.spec, Uninstall.spec, Status.spec],
            defaultSubcommand: "status"
        )

        struct Install {
            static let spec = CommandSpec(
                name: "install",
                abstract: "Write a hook script for each hook the Taskfile maps.",
                options: TaskfileOptions.specs
            )

            var options: TaskfileOptions

            init(_ arguments: ParsedArguments) {
                options = TaskfileOptions(arguments)
            }

            func run() throws {
                let (project, directory) = try hookSetting(options)
                let kiln = System.executablePath ?? "kiln"
                var refused = false
                for name in project.taskfile.hooks.keys.sorted() {
                    let path = directory + "/" + name
                    let existing = try? Files.readText(path)
                    if let existing, !existing.containsText(hookMarker) {
                        // Another tool wrote this hook after kiln chained the user's own: keeping
                        // both is the user's call, never an overwrite.
                        guard !Files.exists(path + ".kiln-chained") else {
                            System.writeError(
                                "kiln hooks: \(path) is not Kiln's, and \(name).kiln-chained already holds the hook Kiln kept before; "
                                    + "neither was changed. Merge them into \(name).kiln-chained (or remove one), then run 'kiln hooks install' again\n"
                            )
                            refused = true
                            continue
                        }
                        rename(path, path + ".kiln-chained")
                        print("kiln: kept your \(name) hook as \(name).kiln-chained; it runs first")
                    }
                    try System.writeFile(path, contents: script(name: name, kiln: kiln))
                    chmod(path, 0o755)
                    print(
                        "kiln: installed \(path) → \(project.taskfile.hooks[name]?.map(\.value).joined(separator: ", ") ?? "")"
                    )
                }
                if project.taskfile.hooks.isEmpty {
                    print("kiln: the Taskfile maps no hooks (add 'hooks: {pre-commit: [TASK]}')")
                }
                if refused { Kiln.exit(ExitStatus.jobFailed) }
            }
        }

        struct Uninstall {
            static let spec = CommandSpec(
                name: "uninstall",
                abstract: "Remove Kiln's hook scripts, restoring hooks they chained.",
                options: TaskfileOptions.specs
            )

            var options: TaskfileOptions

            init(_ arguments: ParsedArguments) {
                options = TaskfileOptions(arguments)
            }

            func run() throws {
                let (_, directory) = try hookSetting(options)
                for name in TaskfileLoader.hookNames {
                    let path = directory + "/" + name
                    guard let text = try? Files.readText(path), text.containsText(hookMarker) else { continue }
                    unlink(path)
                    if Files.exists(path + ".kiln-chained") {
                        rename(path + ".kiln-chained", path)
                        print("kiln: removed the \(name) hook; your own is back")
                    } else {
                        print("kiln: removed the \(name) hook")
                    }
                }
            }
        }

        struct Status {
            static let spec = CommandSpec(
                name: "status",
                abstract: "Show each hook: mapped, installed, chained.",
                options: TaskfileOptions.specs
            )

            var options: TaskfileOptions

            init(_ arguments: ParsedArguments) {
                options = TaskfileOptions(arguments)
            }

            func run() throws {
                let (project, directory) = try hookSetting(options)
                print("kiln: hooks directory \(directory)")
                for name in TaskfileLoader.hookNames {
                    let tasks = project.taskfile.hooks[name]?.map(\.value) ?? []
                    let text = try? Files.readText(directory + "/" + name)
                    let installed =
                        text?.containsText(hookMarker) == true
                        ? "installed" : text == nil ? "not installed" : "another hook (not Kiln's)"
                    let chained = Files.exists(directory + "/" + name + ".kiln-chained") ? ", chains your own" : ""
                    print(
                        "  \(name): \(tasks.isEmpty ? "no tasks" : tasks.joined(separator: ", ")); \(installed)\(chained)"
                    )
                }
            }
        }
    }

    struct Hook {
        static let spec = CommandSpec(
            name: "hook",
            abstract: "Run the tasks a git hook maps to, for the files it concerns (called by the hook scripts).",
            discussion: """
                pre-commit and commit-msg: the staged files; pre-push: the commits being pushed (read \
                from standard input); post-merge and post-checkout: what changed. Only the mapped \
                tasks those files affect run, with KILN_HOOK_FILES holding the files (one per line). \
                A failing task blocks the commit or push. KILN_SKIP_HOOKS=1 skips. The working tree \
                is never stashed or rewritten: for a partly staged file, pre-commit tasks see its \
                staged version at its path, in a private mount namespace, and your copy is untouched.
                """,
            options: TaskfileOptions.specs,
            positionals: [
                .one("name", help: "The hook's name."), .rest("arguments", help: "What git passed the hook."),
            ]
        )

        /// How long a hook waits for a `kiln run` already using the project.
        static let waitLimit = 300.0

        var options: TaskfileOptions
        var name: String
        var arguments: [String]

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            name = arguments.positionals[0]
            self.arguments = Array(arguments.positionals.dropFirst())
        }

        func run() throws {
            if System.variable("KILN_SKIP_HOOKS") == "1" { Kiln.exit() }
            // The hook scripts pass git's arguments after `--`.
            let arguments = self.arguments.first == "--" ? Array(self.arguments.dropFirst()) : self.arguments
            let phases = PhaseClock()
            let madeAt = FileSignature.now()  // before the Taskfile is read: see HookPlan.save
            let stagedFiles = QuickHook.answers(name)  // pre-commit, commit-msg: read directly, no libgit2
            if !stagedFiles { GitRepository.startLibgit2() }  // meanwhile: the Taskfile
            let bypass = "KILN_SKIP_HOOKS=1 skips the hook; 'kiln hooks uninstall' removes it"
            guard let located = locateTaskfile(options) else {
                // The hook's checks can't run: say so, and block, rather than pass unchecked.
                System.writeError(
                    "kiln hook \(name): no Taskfile in \(System.currentDirectory) or a parent, so its checks can't run; \(bypass)\n"
                )
                Kiln.exit(ExitStatus.invalidTaskfile)
            }
            let taskfile: Taskfile
            do {
                var context = TaskfileContext.process
                context.dynamicScope = .hook(name)
                taskfile = try TaskfileLoader(context: context).load(path: located.path)
            } catch {
                System.writeError(
                    "\(error.description)\nkiln hook \(name): the Taskfile doesn't load, so its checks can't run; \(bypass)\n"
                )
                Kiln.exit(ExitStatus.invalidTaskfile)
            }
            guard let tasks = taskfile.hooks[name]?.map(\.value), !tasks.isEmpty else {
                saveHookPlan(nil, discovered: [:], taskfile: taskfile, madeAt: madeAt)
                Kiln.exit()
            }
            let input = name == "pre-push" ? readStandardInput() : ""
            phases.mark("taskfile")
            let changed: [String]
            var staged: GitLayout?  // read directly: the index and objects are in formats KilnGitFormat reads
            if stagedFiles, let layout = GitLayout.locate(from: located.root), let files = layout.stagedFiles() {
                changed = files
                staged = layout
            } else {
                // Other hooks, and repositories KilnGitFormat doesn't read (it says which): libgit2.
                do {
                    let repository = try GitRepository(containing: located.root)
                    phases.mark("open repository")
                    changed = try repository.hookChanges(name, arguments: arguments, input: input).flatMap(\.paths)
                        .map { repository.workingDirectory + "/" + $0 }
                } catch {
                    System.writeError("kiln hook \(name): \(error.message)\n")
                    Kiln.exit(ExitStatus.jobFailed)
                }
            }
            phases.mark("changes")
            // Quick answer when nothing the hook runs is affected (the Taskfile loaded above serves).
            let plan: BuildPlan
            do {
                let project = try Project(taskfile: taskfile, runner: ProcessMonitor(), plugins: options.plugins)
                plan = try BuildPlanner(taskfile: project.taskfile, registry: project.registry).plan(targets: tasks)
            } catch {
                System.writeError(
                    "\(error.description)\nkiln hook \(name): the hook's tasks can't be planned, so its checks can't run; \(bypass)\n"
                )
                Kiln.exit(ExitStatus.invalidTaskfile)
            }
            let discovered = BuildSession.discoveredInputs(for: plan)
            let affected = plan.affected(by: changed, discovered: discovered)
            phases.mark("plan and affected")
            saveHookPlan(plan, discovered: discovered, taskfile: taskfile, madeAt: madeAt)
            phases.print()
            if affected.tasks.isEmpty {
                System.writeError(
                    "kiln hook \(name): nothing affected (\(affected.changedFiles.count) changed file\(affected.changedFiles.count == 1 ? "" : "s"))\n"
                )
                Kiln.exit()
            }
            // Run them: `kiln run --affected` with the hook's files, passed in files of this run's
            // own under .kiln/hooks (made with O_EXCL, never followed through a link, removed
            // after): a list of any length, which no other user can read or replace.
            let lists: HookFileLists
            do {
                lists = try HookFileLists(root: taskfile.root, changed: changed, hookFiles: affected.changedFiles)
            } catch {
                System.writeError("kiln hook \(name): \(error)\n")
                Kiln.exit(ExitStatus.jobFailed)
            }
            // Partly staged files: the tasks see what is committed, in a view of their own.
            var view: StagedView?
            if let staged {
                do {
                    view = try StagedView.make(layout: staged, projectRoot: taskfile.root, stagedFiles: changed)
                } catch {
                    lists.remove()
                    System.writeError("kiln hook \(name): \(error); \(bypass)\n")
                    Kiln.exit(ExitStatus.jobFailed)
                }
                if let view {
                    let files = view.files(relativeTo: staged.workingDirectory)
                    System.writeError(
                        "kiln hook \(name): \(files.joined(separator: ", ")) \(files.count == 1 ? "is" : "are") partly staged: "
                            + "the tasks see the staged version; your working copy is untouched\n"
                    )
                }
            } else if stagedFiles {
                System.writeError(
                    "kiln hook \(name): warning: this repository's index is in a format kiln reads only through libgit2, so partly staged files "
                        + "can't be shown to the tasks as staged: they see the working tree\n"
                )
            }
            // A commit during a build waits for it — said, and bounded — rather than failing.
            var argv = [
                System.executablePath ?? "kiln", "run", "--affected", "--changed-files-from", lists.changed, "--wait",
                "--wait-limit", "\(Int(Self.waitLimit))",
            ]
            if let taskfile = options.taskfile { argv += ["--taskfile", taskfile] }
            argv += tasks
            let status = lists.run(argv, view: view)
            lists.remove()
            view?.remove()
            if status != 0 { Kiln.exit(status) }
        }

        /// Saves what this hook's tasks look at, for the launcher's quick answer next time
        /// (``QuickHook``): for the hooks it answers, called as the hook scripts call it.
        private func saveHookPlan(_ plan: BuildPlan?, discovered: [JobKey: [String]], taskfile: Taskfile, madeAt: Int64)
        {
            guard QuickHook.answers(name), options.taskfile == nil, options.pluginPath.isEmpty,
                !options.allowInsecurePlugins,
                var watched = TaskfileLoader.filesRead(byTaskfileAt: taskfile.path)
            else { return }
            var tasks: [HookPlan.Task] = []
            for task in plan?.tasks ?? [] {
                let definition = task.definition
                let files = discovered.filter { $0.key.task == definition.name }.values.joined()
                tasks.append(
                    HookPlan.Task(
                        directory: definition.directory,
                        patterns: definition.renderedSources,
                        discovered: Array(Set(files))
                    )
                )
            }
            if plan?.tasks.contains(where: { $0.definition.depfile != nil }) == true {
                let kiln = KilnDirectory(root: taskfile.root)
                watched += [kiln.stateDatabase, kiln.stateLog]
            }
            // kiln itself: another build may answer differently.
            if let executable = System.executablePath, let directory = System.executableDirectory {
                watched += [executable, directory + "/libKilnCLI.so"]
            }
            HookPlan(
                taskfilePath: taskfile.path,
                root: taskfile.root,
                taskfiles: Array(Set((plan?.tasks ?? []).map(\.definition.file))),
                tasks: tasks,
                watched: watched.map(HookPlan.Watched.init(path:))
            ).save(hook: name, madeAt: madeAt)
        }

        private func readStandardInput() -> String {
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(0, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                bytes += buffer[0..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// The project and the hooks directory.
///
/// - Throws: The exit status 2, once the reason is printed.
private func hookSetting(_ options: TaskfileOptions) throws(ExitCode) -> (Project, String) {
    let (project, _) = try loadAndPlan(options, targets: [], everyTaskWhenEmpty: true, runner: ProcessMonitor())
    do {
        let repository = try GitRepository(containing: project.taskfile.root)
        let directory = try repository.hooksDirectory()
        mkdir(directory, 0o755)
        return (project, directory)
    } catch {
        System.writeError("kiln hooks: \(error.message)\n")
        throw ExitCode(ExitStatus.invalidTaskfile)
    }
}

/// A hook script: runs a chained hook first, then `kiln hook`. Only pre-push reads standard
/// input (its refs, passed on to both); other hooks leave it alone — for pre-commit it may be the
/// terminal.
private func script(name: String, kiln: String) -> String {
    let header = """
        #!/bin/sh
        \(hookMarker)
        [ "$KILN_SKIP_HOOKS" = 1 ] && exit 0

        """
    if name == "pre-push" {
        return header + """
            input=$(cat; echo x); input=${input%x}
            if [ -x "$0.kiln-chained" ]; then
                printf '%s' "$input" | "$0.kiln-chained" "$@" || exit $?
            fi
            printf '%s' "$input" | exec '\(kiln)' hook \(name) -- "$@"

            """
    }
    return header + """
        if [ -x "$0.kiln-chained" ]; then
            "$0.kiln-chained" "$@" || exit $?
        fi
        exec '\(kiln)' hook \(name) -- "$@"

        """
}
