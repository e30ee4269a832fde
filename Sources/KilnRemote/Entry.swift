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
    let endpoint = request.endpoint
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
