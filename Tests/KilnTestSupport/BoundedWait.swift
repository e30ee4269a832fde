import Dispatch
import Foundation
import Synchronization

/// Runs `body` — something that blocks, such as waiting for a build — on a thread of its own,
/// and waits for its result at most `seconds` without blocking the caller's thread.
///
/// - Returns: What `body` returned, or `nil` if it was still running when the time ran out (it
///   keeps running; the test should fail and clean up).
///
/// Threading: any task.
public func waitForResult<Result: Sendable>(
    within seconds: Double,
    _ body: @escaping @Sendable () -> Result
) async -> Result? {
    let once = OneShot<Result?>()
    return await withCheckedContinuation { (continuation: CheckedContinuation<Result?, Never>) in
        once.install(continuation)
        // A thread of its own, not a Dispatch worker: when many tests block workers at once the
        // pool starves, and an overdue deadline could then run before the body, which had
        // long finished — a false timeout. A late deadline only makes the bound longer.
        let thread = Thread { once.resume(body()) }
        thread.stackSize = 1 << 20
        thread.start()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(nil) }
    }
}

/// Checks `condition` every few milliseconds until it holds or `seconds` pass.
///
/// - Returns: Whether it held in time.
///
/// Threading: any task.
public func waitUntil(within seconds: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while true {
        if condition() { return true }
        if DispatchTime.now().uptimeNanoseconds >= deadline { return false }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
}

/// Resumes a continuation once, with the first value offered.
///
/// Threading: any thread; guarded by its mutex.
private final class OneShot<Value: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Value, Never>?, done: Bool)>((nil, false))

    func install(_ continuation: CheckedContinuation<Value, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func resume(_ value: Value) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.done, let continuation = state.continuation else { return nil }
            state.done = true
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: value)
    }
}
