import KilnCommandLine
import KilnHost
import KilnPluginAPI

/// Which remote a run uses: `--remote-executor` (else `KILN_REMOTE_EXECUTOR`), `--remote-cache`
/// (else `KILN_REMOTE_CACHE`), else the Taskfile's `remote:` section; `--remote-instance` (else
/// `KILN_REMOTE_INSTANCE`), `--remote-cache-read-only`, `--remote-execute`; `KILN_REMOTE_TIMEOUT`.
///
/// Threading: a value type.
struct RemoteOptions {
    static let specs: [OptionSpec] = [
        .value(
            "remote-cache",
            help:
                "A REAPI server to look results up in and store them to: grpc://HOST:PORT (default: $KILN_REMOTE_CACHE, else the Taskfile's 'remote:')."
        ),
        .value(
            "remote-executor",
            help:
                "A REAPI server to run the jobs that claim 'remote' on (all of them with --remote-execute); it is the remote cache too (default: $KILN_REMOTE_EXECUTOR)."
        ),
        .flag("remote-execute", help: "Send every job the remote executor can run to it."),
        .value("remote-instance", help: "The remote's instance name (default: $KILN_REMOTE_INSTANCE)."),
        .flag("remote-cache-read-only", help: "Look results up in the remote cache; store none."),
    ]

    var cache: String?
    var executor: String?
    var executeAll = false
    var instance: String?
    var readOnly = false

    /// The remote options of `kiln run`, checked with the environment's.
    ///
    /// - Throws: A usage error for a server that isn't `grpc://HOST:PORT`, two different servers,
    ///   `--remote-execute` without an executor, or a bad `KILN_REMOTE_TIMEOUT`.
    init(_ arguments: ParsedArguments) throws(UsageError) {
        cache = arguments.value("remote-cache")
        executor = arguments.value("remote-executor")
        executeAll = arguments.flag("remote-execute")
        instance = arguments.value("remote-instance")
        readOnly = arguments.flag("remote-cache-read-only")
        if let message = problem { throw arguments.usageError(message) }
    }

    /// `--remote-executor`, else `KILN_REMOTE_EXECUTOR`.
    private var executorURL: String? {
        executor ?? System.variable("KILN_REMOTE_EXECUTOR").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `--remote-cache`, else `KILN_REMOTE_CACHE`.
    private var cacheURL: String? {
        cache ?? System.variable("KILN_REMOTE_CACHE").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// What is wrong with the options and the environment together, if anything.
    private var problem: String? {
        if let url = executorURL {
            guard RemoteEndpoint(url: url) != nil else {
                return "--remote-executor must be grpc://HOST:PORT, not '\(url)'"
            }
            if let cache, cache != url {
                return
                    "--remote-executor and --remote-cache name different servers; kiln uses the executor's cache (give one of them)"
            }
        } else if executeAll {
            return "--remote-execute needs a server to run jobs on: --remote-executor grpc://HOST:PORT"
        }
        if let url = cacheURL, RemoteEndpoint(url: url) == nil {
            let origin = cache != nil ? "--remote-cache" : "KILN_REMOTE_CACHE"
            return "\(origin) must be grpc://HOST:PORT (TLS and Unix sockets aren't supported yet), not '\(url)'"
        }
        if let timeout = System.variable("KILN_REMOTE_TIMEOUT"), GoDuration(timeout).map({ $0.seconds > 0 }) != true {
            return
                "KILN_REMOTE_TIMEOUT must be a duration greater than zero as Go writes one (500ms, 5s), not '\(timeout)'"
        }
        return nil
    }

    /// The settings the command line and the environment give, applied to the Taskfile's
    /// (`taskfile`, `nil` when it has no `remote:`); `nil` when none of them names a server.
    func settings(over taskfile: RemoteSettings?) -> RemoteSettings? {
        var settings = taskfile
        if let url = executorURL, let endpoint = RemoteEndpoint(url: url) {
            settings = RemoteSettings(endpoint: endpoint)
            settings?.executes = true
            settings?.executesAll = executeAll
        } else if let url = cacheURL, let endpoint = RemoteEndpoint(url: url) {
            settings = RemoteSettings(endpoint: endpoint)
        }
        guard var settings else { return nil }
        if let instance = instance ?? System.variable("KILN_REMOTE_INSTANCE") { settings.endpoint.instance = instance }
        if readOnly { settings.readOnly = true }
        if let seconds = System.variable("KILN_REMOTE_TIMEOUT").flatMap(GoDuration.init)?.seconds {
            settings.timeout = .nanoseconds(Int64(seconds * 1e9))
        }
        return settings
    }
}
