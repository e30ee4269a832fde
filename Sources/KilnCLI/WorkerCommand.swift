import Glibc
import KilnCommandLine
import KilnHost
import KilnPluginAPI

/// `kiln worker`: a bot of a Remote Workers API scheduler (BuildGrid), running leases with
/// buildbox-run against its own buildbox-casd.
///
/// Threading: the main thread.
struct WorkerCommand {
    static let spec = CommandSpec(
        name: "worker",
        abstract: "Run actions for a BuildGrid scheduler: a bot of its Bots API, until SIGINT or SIGTERM.",
        discussion: """
            Joins the scheduler's farm (CreateBotSession), picks up leases (UpdateBotSession) and runs each \
            lease's Action with buildbox-run in its bubblewrap sandbox, against a buildbox-casd of the worker's \
            own that proxies the server's CAS. A worker that stops reporting loses its session, and the \
            scheduler gives its leases to another. Exit status 0 when stopped by a signal, 1 when the \
            worker couldn't go on. See docs/remote.md.
            """,
        options: [
            .value("server", help: "The scheduler (its Bots, CAS and ByteStream services): grpc://HOST:PORT."),
            .value("instance", help: "The instance whose farm to join (default: the server's unnamed one)."),
            .value("bot-id", help: "The bot's ID, unique in the farm (default: HOST-PID)."),
            .value("dir", help: "Its casd's socket and cache, each lease's files (default: /tmp/kiln-worker-ID)."),
            .value("jobs", short: "j", joined: true, help: "How many leases to run at once (default: 1)."),
            .value("buildbox-casd", help: "buildbox-casd (default: found on PATH)."),
            .value("buildbox-run", help: "buildbox-run (default: found on PATH)."),
            .repeatable(
                "runner-arg",
                help: "An argument for every buildbox-run, after the default sandbox binds (repeatable)."
            ),
            .flag(
                "no-default-binds",
                help: "Don't bind /usr, /etc and Debian's /bin, /lib, /lib64 links (read-only) into the sandbox."
            ),
            .flag("verbose", short: "v", help: "Print each lease as it ends."),
        ]
    )

    var endpoint: RemoteEndpoint
    var botID: String?
    var directory: String?
    var jobs: Int
    var casd: String?
    var runner: String?
    var runnerArguments: [String]
    var defaultBinds: Bool
    var verbose: Bool
    /// How errors found after parsing name the command.
    private let arguments: ParsedArguments

    /// - Throws: A usage error without a `grpc://HOST:PORT` server, or for fewer than one job.
    init(_ arguments: ParsedArguments) throws(UsageError) {
        self.arguments = arguments
        let server = arguments.value("server") ?? ""
        guard let endpoint = RemoteEndpoint(url: server, instance: arguments.value("instance") ?? "") else {
            throw arguments.usageError(
                server.isEmpty
                    ? "a worker needs --server grpc://HOST:PORT: the scheduler whose farm to join"
                    : "--server must be grpc://HOST:PORT, not '\(server)'"
            )
        }
        self.endpoint = endpoint
        botID = arguments.value("bot-id")
        directory = arguments.value("dir")
        jobs = try arguments.integer("jobs", atLeast: 1) ?? 1
        casd = arguments.value("buildbox-casd")
        runner = arguments.value("buildbox-run")
        runnerArguments = arguments.values("runner-arg")
        defaultBinds = !arguments.flag("no-default-binds")
        verbose = arguments.flag("verbose")
    }

    /// Runs the worker until SIGINT or SIGTERM.
    ///
    /// - Throws: A usage error when buildbox-casd or buildbox-run isn't found; the exit status 1
    ///   when the worker couldn't go on, once that is said.
    func run() throws {
        let id = botID ?? "\(Self.hostName())-\(getpid())"
        let casd = try program(casd, named: "buildbox-casd", option: "--buildbox-casd")
        let runner = try program(runner, named: "buildbox-run", option: "--buildbox-run")
        // Debian's /bin, /lib and /lib64 are links into /usr: bound as directories. /etc holds
        // the compiler's alternatives links (cc → gcc).
        let binds = [
            ("/usr", "/usr"), ("/usr/bin", "/bin"), ("/usr/lib", "/lib"), ("/usr/lib64", "/lib64"), ("/etc", "/etc"),
        ]
        let defaults = defaultBinds ? binds.map { "--ro-bind-mount=\($0.0):\($0.1)" } : []
        let request = RemoteWorkerRequest(
            server: endpoint,
            botID: id,
            directory: directory ?? "/tmp/kiln-worker-\(id)",
            capacity: jobs,
            casd: casd,
            runner: runner,
            runnerArguments: defaults + runnerArguments,
            verbose: verbose
        )
        if let failure = RemoteLibrary.runWorker(request) {
            System.writeError("kiln worker: \(failure.message)\n")
            throw ExitCode(1)
        }
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "worker" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `given`, which must be executable, else `name` on PATH.
    private func program(_ given: String?, named name: String, option: String) throws(UsageError) -> String {
        if let given {
            guard access(given, X_OK) == 0 else {
                throw arguments.usageError("\(option) \(given) isn't an executable file")
            }
            return given
        }
        for directory in (System.variable("PATH") ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if access(path, X_OK) == 0 { return path }
        }
        throw arguments.usageError(
            "\(name) isn't on PATH; give it with \(option) PATH (scripts/remote-up fetches it)"
        )
    }
}
