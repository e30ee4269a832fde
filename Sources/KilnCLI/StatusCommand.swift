import KilnCommandLine
import KilnHost

extension Kiln {
    struct Status {
        static let spec = CommandSpec(
            name: "status",
            abstract: "Say what is out of date, without running anything.",
            discussion: """
                Lists the jobs a run of TASK (default: 'default') would run now, each with the \
                reason. A job whose dependency would run is listed with 'dependency X runs first': \
                whether it really reruns depends on what that dependency leaves (early cutoff). \
                Exit status 0, or with --exit-code 1 when something is out of date.
                """,
            options: TaskfileOptions.specs + [
                .flag("json", help: "Print a JSON object instead of text."),
                .flag("exit-code", help: "Exit with status 1 when a job is out of date."),
            ],
            positionals: [
                .many("tasks", help: "The tasks a run would be given, and NAME=value variables for the Taskfile.")
            ]
        )

        var options: TaskfileOptions
        var tasks: [String]
        var json: Bool
        var exitCode: Bool

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            tasks = arguments.positionals
            json = arguments.flag("json")
            exitCode = arguments.flag("exit-code")
        }

        func run() throws {
            let verdicts = try evaluate(options, targets: tasks)
            let stale = verdicts.filter { $0.reason != .upToDate }
            if json {
                let object: JSONValue = .object([
                    ("jobs", .integer(verdicts.count)),
                    ("outOfDate", .array(stale.map(\.jsonValue))),
                ])
                System.write(object.serialized() + "\n", to: 1)
            } else if stale.isEmpty {
                System.write("kiln: up to date (\(verdicts.count) job\(verdicts.count == 1 ? "" : "s"))\n", to: 1)
            } else {
                var text =
                    "kiln: \(stale.count) of \(verdicts.count) job\(verdicts.count == 1 ? "" : "s") out of date\n"
                for job in stale { text += "  \(job.label): \(job.reason)\n" }
                System.write(text, to: 1)
            }
            Kiln.exit(exitCode && !stale.isEmpty ? ExitStatus.jobFailed : 0)
        }
    }

    struct Explain {
        static let spec = CommandSpec(
            name: "explain",
            abstract: "Say, for every job, why a run would run it or that it is up to date — running nothing.",
            discussion: """
                Like ninja's -d explain, without building: the first thing that differs from the \
                last successful run — a changed input or definition, a missing or edited output, no \
                record, a dependency that runs first. 'kiln run --explain' prints the same while it runs.
                """,
            options: TaskfileOptions.specs + [
                .flag("json", help: "Print one JSON object per job instead of text."),
                .flag(
                    "remote-keys",
                    help:
                        "Also print each job's remote-cache keys: its action digest and its outputs' digests (SHA-256/size, as REAPI wants them)."
                ),
            ],
            positionals: [
                .many("tasks", help: "The tasks a run would be given, and NAME=value variables for the Taskfile.")
            ]
        )

        var options: TaskfileOptions
        var tasks: [String]
        var json: Bool
        var remoteKeys: Bool

        init(_ arguments: ParsedArguments) {
            options = TaskfileOptions(arguments)
            tasks = arguments.positionals
            json = arguments.flag("json")
            remoteKeys = arguments.flag("remote-keys")
        }

        func run() throws {
            var text = ""
            for job in try evaluate(options, targets: tasks, remoteKeys: remoteKeys) {
                if json {
                    text += job.jsonValue.serialized() + "\n"
                    continue
                }
                text += "\(job.label): \(job.reason)\n"
                if let keys = job.remoteKeys {
                    if let notCached = keys.notCached {
                        text += "    not cached remotely: \(notCached)\n"
                    }
                    if let action = keys.action {
                        text += "    action \(action)\n"
                        text += "    command \(keys.command?.description ?? "")\n"
                        text += "    input root \(keys.inputRoot?.description ?? "")\n"
                    }
                    if let discovery = keys.discovery { text += "    discovery \(discovery)\n" }
                    for (path, digest) in keys.outputs {
                        text += "    output \(path) \(digest?.description ?? "(missing)")\n"
                    }
                }
            }
            System.write(text, to: 1)
            Kiln.exit()
        }
    }
}

/// Every job's verdict for a run of `targets`, as the run would reach it: the session's dry run.
private func evaluate(_ options: TaskfileOptions, targets words: [String], remoteKeys: Bool = false) throws(ExitCode)
    -> [JobVerdict]
{
    // As `kiln run` reads them: `NAME=value` words are variables, and only the named tasks run
    // their own dynamic variables.
    let arguments = TaskArguments(words)
    var request = BuildSession.Request(
        taskfile: options.taskfile,
        currentDirectory: options.workingDirectory,
        plugins: options.plugins,
        targets: arguments.targets,
        runner: ProcessMonitor(),
        tracked: { trackedContent(root: $0) }
    )
    request.context.variables = arguments.variables
    request.context.dynamicScope = .tasks(arguments.targets)
    request.exitsAfterwards = true
    return try session { () throws(BuildSession.Failure) in
        try BuildSession.inspect(request, remoteKeys: remoteKeys, note: { System.writeError($0 + "\n") })
    }
}

extension JobVerdict {
    /// `{"job", "task", "upToDate", "reason", "command"}`, and with remote keys `"remote": {"action",
    /// "command", "inputRoot", "discovery", "notCached", "outputs"}`.
    var jsonValue: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("job", .string(label)), ("task", .string(task)), ("upToDate", .bool(reason == .upToDate)),
            ("reason", .string(reason.description)), ("command", .string(summary)),
        ]
        if let keys = remoteKeys {
            // Under a key of their own: the job's "command" is its command line.
            var remote: [(String, JSONValue)] = [
                ("action", keys.action.map { .string($0.description) } ?? .null),
                ("command", keys.command.map { .string($0.description) } ?? .null),
                ("inputRoot", keys.inputRoot.map { .string($0.description) } ?? .null),
            ]
            if let discovery = keys.discovery { remote.append(("discovery", .string(discovery.description))) }
            if let notCached = keys.notCached { remote.append(("notCached", .string(notCached))) }
            remote.append(
                (
                    "outputs",
                    .array(
                        keys.outputs.map { output in
                            .object([
                                ("path", .string(output.path)),
                                ("digest", output.digest.map { .string($0.description) } ?? .null),
                            ])
                        }
                    )
                )
            )
            fields.append(("remote", .object(remote)))
        }
        return .object(fields)
    }
}
