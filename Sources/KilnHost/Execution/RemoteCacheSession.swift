import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a run's remote cache is and how it is used: `--remote-cache grpc://HOST:PORT`
/// (`KILN_REMOTE_CACHE`, or the Taskfile's `remote:` section), `--remote-instance`,
/// `--remote-cache-read-only`, `--remote-timeout`.
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteSettings: Sendable {
    /// The server.
    public var endpoint: RemoteEndpoint
    /// Look results up, never store them (a developer's machine beside CI's).
    public var readOnly = false
    /// The server executes jobs too (`--remote-executor`): those that claim the `remote`
    /// resource, or every job it can run with ``executesAll``.
    public var executes = false
    /// `--remote-execute`: every job the server can run goes to it, claimed or not.
    public var executesAll = false
    /// How long one request may take before the cache counts as down.
    public var timeout: Duration = .seconds(5)

    /// How many jobs' look-ups and stores are under way at once, by default: the width of the
    /// server's queue, `net:HOST:PORT` (a Taskfile's `resources:` may set another). They share
    /// one HTTP/2 connection, and hold no thread while they wait (calls past the server's limit
    /// of streams wait in the connection). With grpc-swift-2's client, 1000 hits took 0.9 s at 32
    /// and 0.55 s at 128; on the lean connection, 0.255 s at 32, 0.226 at 64, 0.222 at 128 and
    /// 0.206 at 256 (buildbox-casd here, median of 7; 256 against 128 in turns: 0.95×).
    public static let requestsAtOnce = 256

    /// The resource a job claims to run on the remote executor (`resources: [remote]`).
    public static let resource = "remote"

    /// How many jobs run on the executor at once, by default: the width of the `remote` queue (a
    /// Taskfile's `resources: {remote: N}` sets the remote's real capacity).
    public static let executionWidth = 8

    /// Creates settings.
    public init(endpoint: RemoteEndpoint, readOnly: Bool = false, timeout: Duration = .seconds(5)) {
        self.endpoint = endpoint
        self.readOnly = readOnly
        self.timeout = timeout
    }
}

/// A run's connection to its remote cache, through `libKilnRemote.so`, which is opened — and the
/// server's capabilities read — the first time a job is looked up, or earlier, while the Taskfile
/// loads, when the run was given an ``EarlyConnection``. A run in which nothing changed never
/// loads gRPC; a run that asks the cache nothing loads it only when it connected early.
///
/// **It never fails a build.** When the library can't be loaded, the server doesn't answer, or a
/// request fails (the server is down, slow past the timeout, or refuses), that is reported once,
/// as a warning, and the cache is not asked again in this run: the jobs run here, as without one.
///
/// Threading: any thread; its state is guarded by a mutex. The first ``client`` blocks its caller
/// while it connects (at most the settings' timeout); callers then must not be Swift concurrency's
/// threads.
public final class RemoteCacheSession: Sendable {
    /// The settings it was made with.
    public let settings: RemoteSettings
    private let note: @Sendable (String) -> Void
    private let state = Mutex(State())
    /// Held while connecting: one connection, made once.
    private let connecting = Mutex(())

    private struct State {
        var client: (any RemoteClient)?
        var down = false
        var executionDown = false
        /// Closed at the run's end: a request that fails after that (one a stopped run left) is
        /// not reported.
        var closed = false
    }

    /// A connection begun before the session was made (``EarlyConnection``), taken by the first
    /// ``client`` when it is to the same server; let go at ``close()`` otherwise.
    private let early: EarlyConnection?

    /// A session for `settings`; it connects when first asked for ``client``, or takes `early`'s
    /// connection when that one is to the same server. `note` says a warning.
    public init(_ settings: RemoteSettings, early: EarlyConnection? = nil, note: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        self.note = note
        if let early, !early.serves(settings) {
            early.discard()
            self.early = nil
        } else {
            self.early = early
        }
    }

    /// The client, connecting the first time; `nil` once the cache is down (or never came up).
    public var client: (any RemoteClient)? {
        if let known = state.withLock({ $0.down ? nil : $0.client }) { return known }
        return connecting.withLock { _ -> (any RemoteClient)? in
            let (known, down) = state.withLock { ($0.client, $0.down) }
            if down { return nil }
            if let known { return known }
            switch early?.take() ?? RemoteLibrary.client(for: settings.endpoint, timeout: settings.timeout) {
            case .success(let client):
                state.withLock { $0.client = client }
                return client
            case .failure(let failure):
                state.withLock { $0.down = true }
                note(
                    "kiln: warning: remote cache \(settings.endpoint) not used: \(failure.message); the build runs here"
                )
                return nil
            }
        }
    }

    /// Whether the cache is still asked (nothing has failed).
    public var isUp: Bool { !state.withLock(\.down) }

    /// Notes a failed request: the first is reported, and the cache is not asked again.
    func failed(_ failure: RemoteFailure) {
        if firstFailure(\.down) {
            note("kiln: warning: remote cache failed: \(failure.message); the build goes on here without it")
        }
    }

    /// Notes an execution the server failed (not the command): the first is reported, and no
    /// job is sent to the server again in this run. The job runs here.
    func executionFailed(_ failure: RemoteFailure) {
        if firstFailure(\.executionDown) {
            note("kiln: warning: remote execution failed: \(failure.message); this job and the rest run here")
        }
    }

    /// Sets `flag`; whether this is the first time, with the session still open (what is reported).
    private func firstFailure(_ flag: WritableKeyPath<State, Bool> & Sendable) -> Bool {
        state.withLock { state in
            defer { state[keyPath: flag] = true }
            return !state[keyPath: flag] && !state.closed
        }
    }

    /// Whether jobs are still sent to the server to run.
    public var executes: Bool { settings.executes && !state.withLock(\.executionDown) }

    /// Says `text` (a cached result not used, and why).
    func say(_ text: String) { note(text) }

    /// Closes the connection, if one was made, once the requests under way have ended.
    public func close() {
        state.withLock { state in
            state.closed = true
            return state.client
        }?.close()
        early?.discard()
    }
}

/// A connection to a remote cache begun early — while the Taskfile loads and the run is planned —
/// on a thread of its own, when the command line or the environment names the server: the
/// remote library's load (its relocations), its event loop's start, the TCP connect and
/// `GetCapabilities` are then done by the time the first job is looked up, not before it.
/// A run only begins one once the snapshot has said that something may run: a no-op never
/// loads the remote library.
///
/// Threading: any thread. ``take()`` blocks its caller until the connection is made or failed
/// (at most the settings' timeout); callers must not be Swift concurrency's threads.
public final class EarlyConnection: Sendable {
    private let endpoint: RemoteEndpoint
    private let timeout: Duration
    private let result: BuildSession.Background<Result<any RemoteClient, RemoteFailure>>
    /// Whether ``take()`` or ``discard()`` has had it: the connection has one owner.
    private let claimed = Mutex(false)

    /// Begins connecting to the server `settings` name.
    public init(_ settings: RemoteSettings) {
        endpoint = settings.endpoint
        timeout = settings.timeout
        result = BuildSession.Background { [endpoint, timeout] in
            RemoteLibrary.client(for: endpoint, timeout: timeout)
        }
    }

    /// Whether a session with `settings` would make this same connection.
    func serves(_ settings: RemoteSettings) -> Bool {
        settings.endpoint == endpoint && settings.timeout == timeout
    }

    /// The connection, or why it failed, waiting for it; `nil` when it was taken or let go before.
    func take() -> Result<any RemoteClient, RemoteFailure>? {
        guard claim() else { return nil }
        return result.wait()
    }

    /// Lets the connection go unused (if nobody took it): it is closed once made, on a thread of
    /// its own, so a run that needed no remote doesn't wait for a slow server to answer.
    func discard() {
        guard claim() else { return }
        System.startThread { [result] in
            if case .success(let client) = result.wait() { client.close() }
        }
    }

    private func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}

/// `libKilnRemote.so`, opened once per process, the first time a remote is used.
///
/// Threading: any thread.
public enum RemoteLibrary {
    private typealias Entry = @convention(c) (UnsafeMutableRawPointer) -> Void

    // The handle never changes once open; dlsym may be called on it from any thread.
    nonisolated(unsafe) private static let opened: Result<UnsafeMutableRawPointer, RemoteFailure> = open()

    /// A client that only computes keys and digests (`kiln explain --remote-keys`, the
    /// `sha256sum` template function), from the library; made once.
    public static func keysOnlyClient() -> Result<any RemoteClient, RemoteFailure> { keysOnly }

    private static let keysOnly = client(for: nil, timeout: .seconds(1))

    /// A client from the library, loading it the first time: connected to `endpoint`, its
    /// capabilities read (blocking at most `timeout`), or keys-only when `endpoint` is `nil`.
    static func client(for endpoint: RemoteEndpoint?, timeout: Duration) -> Result<any RemoteClient, RemoteFailure> {
        entry(RemoteConnectRequest.entryPoint).flatMap { connect in
            let request = RemoteConnectRequest(endpoint: endpoint, timeout: timeout)
            withExtendedLifetime(request) { connect(Unmanaged.passUnretained(request).toOpaque()) }
            guard let client = request.client else {
                return .failure(RemoteFailure(request.failure ?? "it didn't answer"))
            }
            return .success(client)
        }
    }

    /// Runs a worker (`kiln worker`) until SIGINT or SIGTERM; the reason it stopped early, if it did.
    ///
    /// Threading: blocks the calling thread, which must not be one of Swift concurrency's.
    public static func runWorker(_ request: RemoteWorkerRequest) -> RemoteFailure? {
        switch entry(RemoteWorkerRequest.entryPoint) {
        case .failure(let failure):
            return failure
        case .success(let run):
            withExtendedLifetime(request) { run(Unmanaged.passUnretained(request).toOpaque()) }
            return request.failure.map(RemoteFailure.init)
        }
    }

    private static func entry(_ name: String) -> Result<Entry, RemoteFailure> {
        opened.flatMap { handle in
            guard let symbol = dlsym(handle, name) else {
                let path = libraryPath ?? "libKilnRemote.so"
                return .failure(RemoteFailure("\(path) has no \(name): it isn't kiln's remote library"))
            }
            return .success(unsafeBitCast(symbol, to: Entry.self))
        }
    }

    private static var libraryPath: String? { System.executableDirectory.map { $0 + "/libKilnRemote.so" } }

    private static func open() -> Result<UnsafeMutableRawPointer, RemoteFailure> {
        guard let path = libraryPath else {
            return .failure(RemoteFailure("can't find kiln's own executable (/proc/self/exe)"))
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            return .failure(
                RemoteFailure(
                    "can't load \(path) (\(reason)); build every product with `swift build`, and keep it beside kiln"
                )
            )
        }
        return .success(handle)
    }
}
