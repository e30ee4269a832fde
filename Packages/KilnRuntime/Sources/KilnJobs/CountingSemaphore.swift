#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A counting semaphore: a POSIX `sem_t`, which glibc builds on one futex word. `signal()` adds
/// one to the count and wakes a waiter; `wait()` takes one, sleeping while the count is zero.
///
/// The engine's pool threads sleep on one each, and the waits of ``Job/waitUntilFinished()`` and
/// ``JobQueue/waitUntilAllJobsAreFinished()`` use one; the host uses it where a thread waits for
/// another to finish. It stands in for Dispatch's `DispatchSemaphore`: Dispatch's Swift overlay
/// brings the string processing libraries (Regex) into the process, 1 MB of memory no job uses.
/// ThreadSanitizer understands it (it intercepts the `sem_*` calls).
///
/// Threading: any member from any thread. `signal()` never blocks. `@unchecked Sendable`: the
/// semaphore is only touched through the `sem_*` calls, which are thread-safe.
public final class CountingSemaphore: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    /// A semaphore whose count starts at `value` (0: the first `wait()` sleeps until a `signal()`).
    public init(value: Int = 0) {
        precondition(value >= 0 && value <= Int(Int32.max), "a semaphore's count is 0...Int32.max")
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, UInt32(value))
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Adds one to the count, waking one waiter if any sleeps.
    public func signal() {
        sem_post(semaphore)
    }

    /// Takes one from the count, first sleeping until it is above zero. A signal delivered to the
    /// thread meanwhile doesn't end the wait.
    public func wait() {
        while sem_wait(semaphore) != 0, errno == EINTR {}
    }

    /// Takes one from the count if it is above zero now, without sleeping: whether it did.
    public func tryWait() -> Bool {
        while sem_trywait(semaphore) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }
}
