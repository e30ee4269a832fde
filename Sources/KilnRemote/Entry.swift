import Dispatch
import KilnPluginAPI

/// The library's C entry point (``RemoteConnectRequest/entryPoint``): connects to the request's
/// server, reads its capabilities, and fills in the request's client or failure. Blocks until the
/// server answers or the request's timeout has passed.
///
/// Threading: any thread but one of Swift concurrency's (it waits for a task).
@_cdecl("kiln_remote_connect")
public func kilnRemoteConnect(_ request: UnsafeMutableRawPointer) {
    let request = Unmanaged<RemoteConnectRequest>.fromOpaque(request).takeUnretainedValue()
    let done = DispatchSemaphore(value: 0)
    guard let endpoint = request.endpoint else {
        request.client = KeysOnlyClient()
        return
    }
    let timeout = request.timeout
    Task {
        do {
            request.client = try await RemoteCache.connect(endpoint, timeout: timeout)
        } catch {
            request.failure = (error as? RemoteFailure)?.message ?? "\(error)"
        }
        done.signal()
    }
    done.wait()
}

/// A client that computes keys and talks to no server (``RemoteConnectRequest/endpoint`` `nil`).
///
/// Threading: stateless; any thread.
final class KeysOnlyClient: RemoteClient {
    var endpoint: RemoteEndpoint? { nil }

    func digest(ofFile path: String) throws(RemoteFailure) -> RemoteDigest {
        try ActionRecipe.fileDigest(path).0.remote
    }

    func digest(of bytes: [UInt8]) -> RemoteDigest {
        ActionRecipe.digest(of: bytes).remote
    }

    func prepare(_ spec: RemoteActionSpec) throws(RemoteFailure) -> RemoteAction {
        try ActionRecipe.prepare(spec)
    }

    func lookUp(
        _ action: RemoteAction,
        writing: Bool,
        completion: @escaping @Sendable (Result<RemoteLookup, RemoteFailure>) -> Void
    ) {
        completion(.failure(RemoteFailure("no remote cache is configured")))
    }

    func store(
        _ action: RemoteAction,
        output: [UInt8],
        completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void
    ) {
        completion(.failure(RemoteFailure("no remote cache is configured")))
    }

    func execute(
        _ action: RemoteAction,
        completion: @escaping @Sendable (Result<RemoteExecution, RemoteFailure>) -> Void
    ) {
        completion(.failure(RemoteFailure("no remote executor is configured")))
    }

    func close() {}
}
