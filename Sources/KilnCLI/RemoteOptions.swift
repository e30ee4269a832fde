import ArgumentParser
import KilnHost
import KilnPluginAPI

/// Which remote a run uses: `--remote-executor` (else `KILN_REMOTE_EXECUTOR`), `--remote-cache`
/// (else `KILN_REMOTE_CACHE`), else the Taskfile's `remote:` section; `--remote-instance` (else
/// `KILN_REMOTE_INSTANCE`), `--remote-cache-read-only`, `--remote-execute`; `KILN_REMOTE_TIMEOUT`.
///
/// The options are `kiln run`'s own, not an option group: each option ArgumentParser knows costs
/// every run, a no-op's too, about 0.1 ms, and a group more.
struct RemoteOptions {
    var cache: String?
    var executor: String?
    var executeAll = false
    var instance: String?
    var readOnly = false

    /// `--remote-executor`, else `KILN_REMOTE_EXECUTOR`.
    private var executorURL: String? {
        executor ?? System.variable("KILN_REMOTE_EXECUTOR").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `--remote-cache`, else `KILN_REMOTE_CACHE`.
    private var cacheURL: String? {
        cache ?? System.variable("KILN_REMOTE_CACHE").flatMap { $0.isEmpty ? nil : $0 }
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
        if let url = cacheURL, RemoteEndpoint(url: url) == nil {
            let origin = cache != nil ? "--remote-cache" : "KILN_REMOTE_CACHE"
            throw ValidationError(
                "\(origin) must be grpc://HOST:PORT (TLS and Unix sockets aren't supported yet), not '\(url)'"
            )
        }
        if let timeout = System.variable("KILN_REMOTE_TIMEOUT"), GoDuration(timeout).map({ $0.seconds > 0 }) != true {
            throw ValidationError(
                "KILN_REMOTE_TIMEOUT must be a duration greater than zero as Go writes one (500ms, 5s), not '\(timeout)'"
            )
        }
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
