import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

#if KILN_TSAN
    /// The engine's lock, as built for ThreadSanitizer runs (`-Xswiftc -DKILN_TSAN`): a pthread mutex,
    /// which TSan understands. `Synchronization.Mutex` is built on futexes that TSan on Linux can't
    /// see, so every access it guards would be reported as a race.
    ///
    /// Same API as `Mutex`; slower and larger, which matters only in a sanitizer build.
    ///
    /// Threading: any thread. `@unchecked Sendable`: `value` is only touched under `mutex`.
    public struct EngineLock<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
        private final class Storage: @unchecked Sendable {
            let mutex: UnsafeMutablePointer<pthread_mutex_t>
            var value: Value

            init(_ value: consuming Value) {
                self.value = value
                mutex = .allocate(capacity: 1)
                pthread_mutex_init(mutex, nil)
            }

            deinit {
                pthread_mutex_destroy(mutex)
                mutex.deallocate()
            }
        }

        private let storage: Storage

        /// A lock guarding `value`.
        public init(_ value: consuming Value) {
            storage = Storage(value)
        }

        /// Runs `body` with the value, under the lock (`Mutex.withLock`'s signature).
        public borrowing func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            pthread_mutex_lock(storage.mutex)
            defer { pthread_mutex_unlock(storage.mutex) }
            return try body(&storage.value)
        }
    }
#else
    /// The engine's lock: `Synchronization.Mutex` (a futex word, no allocation). Builds for
    /// ThreadSanitizer (`-Xswiftc -DKILN_TSAN`) swap in a pthread mutex TSan can see. Public so the
    /// host's locks make the same swap (`HostMutex`).
    ///
    /// Threading: any thread.
    public typealias EngineLock<Value: ~Copyable> = Mutex<Value>
#endif

/// A value guarded by a lock, for code around the engine — task plugins, tests — that needs a
/// small piece of shared state (NIO's `NIOLockedValueBox` plays the same part).
///
/// Threading: any member from any thread. Don't call back into code that takes the same lock
/// from inside `withLock`. `@unchecked Sendable`: the value is only reachable under the lock.
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock: EngineLock<Value>

    /// Creates the box.
    public init(_ value: Value) {
        lock = EngineLock(value)
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withLock<Result: Sendable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try lock.withLock { (value: inout Value) throws(E) -> Result in try body(&value) }
    }

    /// A copy of the value.
    public var value: Value { withLock { $0 } }
}
