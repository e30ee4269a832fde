import ArgumentParser
import Glibc
import KilnHost
import KilnPluginAPI

/// `kiln worker`: a bot of a Remote Workers API scheduler (BuildGrid), running leases with
/// buildbox-run against its own buildbox-casd.
///
/// Not one of ArgumentParser's subcommands: ArgumentParser casts every subcommand's type on every
/// kiln run, a no-op's too, and each cast that misses scans every protocol conformance loaded —
/// 0.7M instructions for this one command. `kiln_cli_main` sends `kiln worker …` here first.
enum WorkerCommand {
    static let help = """
        OVERVIEW: Run actions for a BuildGrid scheduler: a bot of its Bots API, until SIGINT or SIGTERM.

        Joins the scheduler's farm (CreateBotSession), picks up leases (UpdateBotSession) and runs each
        lease's Action with buildbox-run in its bubblewrap sandbox, against a buildbox-casd of the worker's
        own that proxies the server's CAS. A worker that stops reporting loses its session, and the
        scheduler gives its leases to another. See docs/remote.md.

        USAGE: kiln worker --server grpc://HOST:PORT [options]

        OPTIONS:
          --server grpc://HOST:PORT  The scheduler (its Bots, CAS and ByteStream services).
          --instance NAME            The instance whose farm to join (default: the server's unnamed one).
          --bot-id ID                The bot's ID, unique in the farm (default: HOST-PID).
          --dir DIR                  Its casd's socket and cache, each lease's files (default: /tmp/kiln-worker-ID).
          -j, --jobs N               How many leases to run at once (default: 1).
          --buildbox-casd PATH       buildbox-casd (default: found on PATH).
          --buildbox-run PATH        buildbox-run (default: found on PATH).
          --runner-arg ARG           An argument for every buildbox-run, after the default sandbox binds (repeatable).
          --no-default-binds         Don't bind /usr, /etc and Debian's /bin, /lib, /lib64 links (read-only) into the sandbox.
          -v, --verbose              Print each lease as it ends.
          -h, --help                 Show this help.
        """

    /// Runs `kiln worker ARGUMENTS`; the exit status: 0 when stopped by a signal, 1 when the worker
    /// couldn't go on, 64 for bad usage.
    static func main(_ arguments: [String]) -> Int32 {
        do {
            let options = try WorkerOptions(parsing: arguments)
            if options.help {
                print(help)
                return 0
            }
            try options.start()
            return 0
        } catch let error as ValidationError {
            System.writeError("kiln worker: error: \(error.message)\n")
            return 64
        } catch {
            return 1
        }
    }
}

/// `kiln worker`'s options, read by hand: `--name VALUE`, `--name=VALUE`, and the flags.
struct WorkerOptions {
    var server = ""
    var instance = ""
    var botID: String?
    var directory: String?
    var jobs = 1
    var casd: String?
    var runner: String?
    var runnerArguments: [String] = []
    var defaultBinds = true
    var verbose = false
    var help = false

    init(parsing arguments: [String]) throws {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            func value() throws -> String {
                if let inline { return inline }
                guard let next = rest.popFirst() else { throw ValidationError("\(name) needs a value") }
                return next
            }
            switch name {
            case "--server": server = try value()
            case "--instance": instance = try value()
            case "--bot-id": botID = try value()
            case "--dir": directory = try value()
            case "-j", "--jobs":
                let text = try value()
                guard let number = Int(text), number >= 1 else {
                    throw ValidationError("--jobs must be a number, at least 1, not '\(text)'")
                }
                jobs = number
            case "--buildbox-casd": casd = try value()
            case "--buildbox-run": runner = try value()
            case "--runner-arg": runnerArguments.append(try value())
            case "--no-default-binds": defaultBinds = false
            case "-v", "--verbose": verbose = true
            case "-h", "--help": help = true
            default: throw ValidationError("kiln worker doesn't take '\(argument)' (see kiln worker --help)")
            }
        }
        guard help || RemoteEndpoint(url: server, instance: instance) != nil else {
            throw ValidationError(
                server.isEmpty
                    ? "kiln worker needs --server grpc://HOST:PORT"
                    : "--server must be grpc://HOST:PORT, not '\(server)'"
            )
        }
    }

    /// Runs the worker until SIGINT or SIGTERM.
    func start() throws {
        let endpoint = RemoteEndpoint(url: server, instance: instance)!
        let id = botID ?? "\(Self.hostName())-\(getpid())"
        let casd = try Self.program(casd, named: "buildbox-casd", option: "--buildbox-casd")
        let runner = try Self.program(runner, named: "buildbox-run", option: "--buildbox-run")
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
            throw failure
        }
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "worker" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `given`, which must be executable, else `name` on PATH.
    private static func program(_ given: String?, named name: String, option: String) throws -> String {
        if let given {
            guard access(given, X_OK) == 0 else {
                throw ValidationError("\(option) \(given) isn't an executable file")
            }
            return given
        }
        for directory in (System.variable("PATH") ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if access(path, X_OK) == 0 { return path }
        }
        throw ValidationError("\(name) isn't on PATH; give it with \(option) PATH (scripts/remote-up fetches it)")
    }
}
