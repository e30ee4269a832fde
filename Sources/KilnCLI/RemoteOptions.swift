import ArgumentParser
import KilnHost
import KilnPluginAPI

/// Which remote cache a run uses: `--remote-cache` (else `KILN_REMOTE_CACHE`, else the Taskfile's
/// `remote:` section), `--remote-instance`, `--remote-cache-read-only`, `--remote-timeout`.
struct RemoteOptions: ParsableArguments {
    @Option(
        name: .customLong("remote-cache"),
        help:
            "A REAPI server to look results up in and store them to: grpc://HOST:PORT (default: $KILN_REMOTE_CACHE, else the Taskfile's 'remote:')."
    )
    var cache: String?

    @Option(
        name: .customLong("remote-executor"),
        help:
            "A REAPI server to run jobs on: those that claim the 'remote' resource, or all with --remote-execute; it is the remote cache too (default: $KILN_REMOTE_EXECUTOR)."
    )
    var executor: String?

    @Flag(
        name: .customLong("remote-execute"),
        help: "Send every job the remote executor can run to it, not only those that claim 'remote'."
    )
    var executeAll = false

    @Option(
        name: .customLong("remote-instance"),
        help: "The server's instance name (default: $KILN_REMOTE_INSTANCE, else none)."
    )
    var instance: String?

    @Flag(
        name: .customLong("remote-cache-read-only"),
        help: "Look results up in the remote cache, never store them (for a developer's machine)."
    )
    var readOnly = false

    @Option(
        name: .customLong("remote-timeout"),
        help: "How long one request to the remote may take before it counts as down: a Go duration (default 5s)."
    )
    var timeout: String?

    /// `--remote-executor`, else `KILN_REMOTE_EXECUTOR`.
    private var executorURL: String? {
        executor ?? System.environment["KILN_REMOTE_EXECUTOR"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func validate() throws {
        if let url = executorURL {
            guard RemoteEndpoint(url: url) != nil else {
                throw ValidationError("--remote-executor must be grpc://HOST:PORT, not '\(url)'")
            }
            if let cache, cache != url {
                throw ValidationError(
                    "--remote-executor and --remote-cache name different servers; kiln uses the executor's cache (give one of them)"
                )
            }
        } else if executeAll {
            throw ValidationError("--remote-execute needs a server to run jobs on: --remote-executor grpc://HOST:PORT")
        }
        if let timeout, GoDuration(timeout).map({ $0.seconds > 0 }) != true {
            throw ValidationError(
                "--remote-timeout must be a duration greater than zero as Go writes one (500ms, 5s), not '\(timeout)'"
            )
        }
        if let url = cache ?? System.environment["KILN_REMOTE_CACHE"].flatMap({ $0.isEmpty ? nil : $0 }),
            RemoteEndpoint(url: url) == nil
        {
            let origin = cache != nil ? "--remote-cache" : "KILN_REMOTE_CACHE"
            throw ValidationError(
                "\(origin) must be grpc://HOST:PORT (TLS and Unix sockets aren't supported yet), not '\(url)'"
            )
        }
    }

    /// The settings the command line and the environment give, applied to the Taskfile's
    /// (`taskfile`, `nil` when it has no `remote:`); `nil` when none of them names a server.
    func settings(over taskfile: RemoteSettings?) -> RemoteSettings? {
        let environment = System.environment
        var settings = taskfile
        if let url = executorURL, let endpoint = RemoteEndpoint(url: url) {
            settings = RemoteSettings(endpoint: endpoint)
            settings?.executes = true
            settings?.executesAll = executeAll
        } else if let url = cache ?? environment["KILN_REMOTE_CACHE"].flatMap({ $0.isEmpty ? nil : $0 }),
            let endpoint = RemoteEndpoint(url: url)
        {
            settings = RemoteSettings(endpoint: endpoint)
        }
        guard var settings else { return nil }
        if let instance = instance ?? environment["KILN_REMOTE_INSTANCE"] { settings.endpoint.instance = instance }
        if readOnly { settings.readOnly = true }
        if let seconds = timeout.flatMap(GoDuration.init)?.seconds {
            settings.timeout = .nanoseconds(Int64(seconds * 1e9))
        }
        return settings
    }
}
