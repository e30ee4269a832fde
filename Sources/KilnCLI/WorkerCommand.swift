import ArgumentParser
import Glibc
import KilnHost
import KilnPluginAPI

extension Kiln {
    /// `kiln worker`: a bot of a Remote Workers API scheduler (BuildGrid), running leases with
    /// buildbox-run against its own buildbox-casd.
    struct Worker: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run actions for a BuildGrid scheduler: a bot of its Bots API, until SIGINT or SIGTERM.",
            discussion: """
                Joins the scheduler's farm (CreateBotSession), picks up leases (UpdateBotSession) and runs each \
                lease's Action with buildbox-run in its bubblewrap sandbox, against a buildbox-casd of the worker's \
                own that proxies the server's CAS. A worker that stops reporting loses its session, and the \
                scheduler gives its leases to another. See docs/remote.md.
                """
        )

        @Option(help: "The scheduler: grpc://HOST:PORT (its Bots, CAS and ByteStream services).")
        var server: String

        @Option(help: "The instance whose farm to join (default: the server's unnamed one).")
        var instance = ""

        @Option(help: "The bot's ID, unique in the farm (default: HOST-PID).")
        var botID: String?

        @Option(
            help:
                "The worker's directory: its casd's socket and cache, each lease's files (default: /tmp/kiln-worker-ID)."
        )
        var dir: String?

        @Option(name: [.customShort("j"), .long], help: "How many leases to run at once.")
        var jobs = 1

        @Option(help: "buildbox-casd (default: found on PATH).")
        var buildboxCasd: String?

        @Option(help: "buildbox-run (default: found on PATH).")
        var buildboxRun: String?

        @Option(
            help: ArgumentHelp(
                "An argument for every buildbox-run, after the default sandbox binds (repeatable).",
                discussion:
                    "By default the sandbox sees /usr, /etc and Debian's /bin, /lib and /lib64 links, read-only."
            )
        )
        var runnerArg: [String] = []

        @Flag(help: "Don't bind /usr, /etc, /bin, /lib and /lib64 into the sandbox.")
        var noDefaultBinds = false

        @Flag(name: .shortAndLong, help: "Print each lease as it ends.")
        var verbose = false

        func validate() throws {
            guard RemoteEndpoint(url: server, instance: instance) != nil else {
                throw ValidationError("--server must be grpc://HOST:PORT, not '\(server)'")
            }
            guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        }

        func run() throws {
            let endpoint = RemoteEndpoint(url: server, instance: instance)!
            let id = botID ?? "\(Self.hostName())-\(getpid())"
            let casd = try Self.program(buildboxCasd, named: "buildbox-casd", option: "--buildbox-casd")
            let runner = try Self.program(buildboxRun, named: "buildbox-run", option: "--buildbox-run")
            // Debian's /bin, /lib and /lib64 are links into /usr: bound as directories. /etc holds
            // the compiler's alternatives links (cc → gcc).
            let binds = [
                ("/usr", "/usr"), ("/usr/bin", "/bin"), ("/usr/lib", "/lib"), ("/usr/lib64", "/lib64"),
                ("/etc", "/etc"),
            ]
            let defaults = noDefaultBinds ? [] : binds.map { "--ro-bind-mount=\($0.0):\($0.1)" }
            let request = RemoteWorkerRequest(
                server: endpoint,
                botID: id,
                directory: dir ?? "/tmp/kiln-worker-\(id)",
                capacity: jobs,
                casd: casd,
                runner: runner,
                runnerArguments: defaults + runnerArg,
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
}
