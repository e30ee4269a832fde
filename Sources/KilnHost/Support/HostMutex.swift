import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

#if KILN_TSAN
    /// The host's lock, as built for ThreadSanitizer runs (`-Xswiftc -DKILN_TSAN`): a pthread mutex,
    /// which TSan understands. `Synchronization.Mutex` is built on futexes that TSan on Linux can't
    /// see, so every access it guards would be reported as a race (the engine's `EngineLock` does the
    /// same swap).
    ///
    /// Same API as `Mutex`; slower and larger, which matters only in a sanitizer build.
    ///
    /// Threading: any thread. `@unchecked Sendable`: `value` is only touched under `mutex`.
    public struct HostMutex<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
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

        /// Runs `body` with the value, under the lock.
        public borrowing func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            pthread_mutex_lock(storage.mutex)
            defer { pthread_mutex_unlock(storage.mutex) }
            return try body(&storage.value)
        }
    }
#else
    /// The host's lock: `Synchronization.Mutex` (a futex word, no allocation). Builds for
    /// ThreadSanitizer (`-Xswiftc -DKILN_TSAN`) swap in a pthread mutex TSan can see.
    ///
    /// Threading: any thread.
    public typealias HostMutex<Value: ~Copyable> = Mutex<Value>
#endif
