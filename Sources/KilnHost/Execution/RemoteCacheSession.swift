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
public struct RemoteSettings: Sendable, Equatable {
    /// The server.
    public var endpoint: RemoteEndpoint
    /// Look results up, never store them (a developer's machine beside CI's).
    public var readOnly = false
    /// How long one request may take before the cache counts as down.
    public var timeout: Duration = .seconds(5)

    /// Creates settings.
    public init(endpoint: RemoteEndpoint, readOnly: Bool = false, timeout: Duration = .seconds(5)) {
        self.endpoint = endpoint
        self.readOnly = readOnly
        self.timeout = timeout
    }
}

/// A run's connection to its remote cache, through `libKilnRemote.so` (opened by ``connect(_:note:)``
/// only: a run without a remote never loads gRPC).
///
/// **It never fails a build.** The first request that fails (the server is down, slow past the
/// timeout, or refuses) is reported once, as a warning, and the cache is not asked again in this
/// run: the jobs run here, as without a cache.
///
/// Threading: any thread; its state is guarded by a mutex.
public final class RemoteCacheSession: Sendable {
    /// The client.
    public let client: any RemoteClient
    /// The settings it was made with.
    public let settings: RemoteSettings
    private let note: @Sendable (String) -> Void
    private let state = Mutex(State())

    private struct State {
        var down = false
        var hits = 0
        var misses = 0
        var stored = 0
    }

    private init(client: any RemoteClient, settings: RemoteSettings, note: @escaping @Sendable (String) -> Void) {
        self.client = client
        self.settings = settings
        self.note = note
    }

    /// Opens `libKilnRemote.so` (beside the running executable) and connects to the server, reading
    /// its capabilities. Returns `nil`, having said why with `note`, when the library can't be
    /// loaded or the server doesn't answer: the run goes on without a cache.
    ///
    /// Threading: blocks the calling thread (at most the settings' timeout); not one of Swift
    /// concurrency's threads.
    public static func connect(_ settings: RemoteSettings, note: @escaping @Sendable (String) -> Void) -> RemoteCacheSession? {
        let connect: (@convention(c) (UnsafeMutableRawPointer) -> Void)
        switch RemoteLibrary.entryPoint() {
        case .success(let entry): connect = entry
        case .failure(let failure):
            note("warning: remote cache \(settings.endpoint) not used: \(failure.message); the build runs here")
            return nil
        }
        let request = RemoteConnectRequest(endpoint: settings.endpoint, timeout: settings.timeout)
        withExtendedLifetime(request) { connect(Unmanaged.passUnretained(request).toOpaque()) }
        guard let client = request.client else {
            note("warning: remote cache not used: \(request.failure ?? "it didn't answer"); the build runs here")
            return nil
        }
        return RemoteCacheSession(client: client, settings: settings, note: note)
    }

    /// Whether the cache is still asked (no request has failed).
    public var isUp: Bool { !state.withLock(\.down) }

    /// Hits, misses and results stored so far.
    public var counts: (hits: Int, misses: Int, stored: Int) {
        state.withLock { ($0.hits, $0.misses, $0.stored) }
    }

    /// Notes a failed request: the first is reported, and the cache is not asked again.
    func failed(_ failure: RemoteFailure) {
        let first = state.withLock { state in
            defer { state.down = true }
            return !state.down
        }
        if first { note("warning: remote cache failed: \(failure.message); the build goes on here without it") }
    }

    func counted(hit: Bool) {
        state.withLock { hit ? ($0.hits += 1) : ($0.misses += 1) }
    }

    func countedStore() {
        state.withLock { $0.stored += 1 }
    }

    /// Says `text` (a cached result not used, and why).
    func say(_ text: String) { note(text) }

    /// Closes the connection, once the requests under way have ended.
    public func close() { client.close() }
}

/// `libKilnRemote.so`, opened once per process, the first time a remote is used.
///
/// Threading: any thread.
public enum RemoteLibrary {
    private static let opened: Result<@convention(c) (UnsafeMutableRawPointer) -> Void, RemoteFailure> = open()

    /// The library's entry point (``RemoteConnectRequest/entryPoint``), loading it the first time.
    static func entryPoint() -> Result<@convention(c) (UnsafeMutableRawPointer) -> Void, RemoteFailure> { opened }

    private static func open() -> Result<@convention(c) (UnsafeMutableRawPointer) -> Void, RemoteFailure> {
        guard let directory = System.executableDirectory else {
            return .failure(RemoteFailure("can't find kiln's own executable (/proc/self/exe)"))
        }
        let path = directory + "/libKilnRemote.so"
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            return .failure(
                RemoteFailure("can't load \(path) (\(reason)); build every product with `swift build`, and keep it beside kiln")
            )
        }
        guard let symbol = dlsym(handle, RemoteConnectRequest.entryPoint) else {
            return .failure(RemoteFailure("\(path) has no \(RemoteConnectRequest.entryPoint): it isn't kiln's remote library"))
        }
        return .success(unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer) -> Void).self))
    }
}
