import KilnJobs

/// The host's lock: the engine's (`EngineLock`), which is `Synchronization.Mutex`, or a pthread
/// mutex in builds for ThreadSanitizer (`-Xswiftc -DKILN_TSAN`), whose Linux runtime can't see
/// futex-based locks and would report every access they guard as a race.
///
/// Threading: any thread.
public typealias HostMutex<Value: ~Copyable> = EngineLock<Value>
