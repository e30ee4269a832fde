import Dispatch
import KilnJobs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Runs `body` on a new, detached OS thread.
///
/// Tests use their own threads rather than Dispatch's global queues: on Linux, Dispatch adds a
/// thread to a pool whose threads are blocked only after a delay of about a second.
///
/// Threading: any thread.
public func spawnThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread,
        &attributes,
        { argument in
            guard let argument else { return nil }
            Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        },
        box
    )
    precondition(status == 0, "pthread_create failed: \(status)")
}

/// Runs `body` on a new thread and waits for it at most `seconds`, so that a test whose engine
/// call hangs fails instead of hanging the run.
///
/// - Returns: What `body` returned or threw, or `nil` if it was still running when the time was
///   up (it is then left running).
///
/// Threading: any thread.
public func runBounded<Value: Sendable>(
    seconds: Double = 10,
    _ body: @escaping @Sendable () throws -> Value
) -> Result<Value, any Error>? {
    let outcome = Locked<Result<Value, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    spawnThread {
        let result = Result { try body() }
        outcome.value = result
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return outcome.value
}

extension Job {
    /// Waits, at most `seconds`, for the job to finish, using ``Job/waitUntilFinished()`` on a
    /// helper thread.
    ///
    /// - Returns: `true` if the job finished in time and the wait did not throw.
    ///
    /// Threading: any thread.
    public func finishes(within seconds: Double = 10) -> Bool {
        guard case .success = runBounded(seconds: seconds, { try self.waitUntilFinished() }) else { return false }
        return isFinished
    }
}

extension JobQueue {
    /// Waits, at most `seconds`, for the queue to hold no jobs, using
    /// ``JobQueue/waitUntilAllJobsAreFinished()`` on a helper thread.
    ///
    /// - Returns: `true` if the queue emptied in time and the wait did not throw.
    ///
    /// Threading: any thread.
    public func empties(within seconds: Double = 10) -> Bool {
        guard case .success = runBounded(seconds: seconds, { try self.waitUntilAllJobsAreFinished() }) else {
            return false
        }
        return jobCount == 0
    }
}

/// Polls `condition` until it holds or `seconds` pass; for states that have no notification of
/// their own. It only bounds a wait: no test may depend on how long the condition takes.
///
/// - Returns: `true` if the condition held in time.
///
/// Threading: any thread.
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + seconds
    while !condition() {
        guard DispatchTime.now() < deadline else { return false }
        sched_yield()
    }
    return true
}

/// Runs the asynchronous `body` in a task and waits for it at most `seconds`.
///
/// - Returns: What `body` returned or threw, or `nil` if it had not returned when the time was
///   up (the task is then left running).
///
/// Threading: any task.
public func runBounded<Value: Sendable>(
    seconds: Double = 10,
    _ body: @escaping @Sendable () async throws -> Value
) async -> Result<Value, any Error>? {
    await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, any Error>?, Never>) in
        let resumed = Locked(false)
        let resumeOnce = { @Sendable (outcome: Result<Value, any Error>?) in
            let first = resumed.withLock { resumed -> Bool in
                defer { resumed = true }
                return !resumed
            }
            if first { continuation.resume(returning: outcome) }
        }
        Task {
            do {
                resumeOnce(.success(try await body()))
            } catch {
                resumeOnce(.failure(error))
            }
        }
        spawnThread {
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + seconds)
            resumeOnce(nil)
        }
    }
}
