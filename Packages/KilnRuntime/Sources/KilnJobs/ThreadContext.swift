#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Per-thread engine facts: which job this thread is running, whether it is a pool worker.
///
/// Threading: each instance belongs to exactly one thread and is only touched by it, which is
/// why it is `@unchecked Sendable` without a lock.
final class ThreadContext: @unchecked Sendable {
    /// The job whose `start`/`main`/completion block this thread is inside, innermost first.
    var currentJob: Job?
    /// The pool worker running on this thread, if any.
    var worker: Worker?
    /// The job a worker takes next, handed to it while it released its previous job under the
    /// scheduler lock (saves taking the lock again).
    var handOff: Job?
    /// Set when the job this worker is starting moved to executing on this thread, so the worker
    /// needn't take the job's lock to check that `start()` did its part.
    var currentJobBegan = false

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
                Unmanaged<ThreadContext>.fromOpaque(pointer).release()
            #else
                if let pointer { Unmanaged<ThreadContext>.fromOpaque(pointer).release() }
            #endif
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// This thread's context, created on first use.
    static var current: ThreadContext {
        if let pointer = pthread_getspecific(key) {
            return Unmanaged<ThreadContext>.fromOpaque(pointer).takeUnretainedValue()
        }
        let context = ThreadContext()
        pthread_setspecific(key, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    /// This thread's context if it has one; never allocates.
    static var existing: ThreadContext? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<ThreadContext>.fromOpaque(pointer).takeUnretainedValue()
    }
}
