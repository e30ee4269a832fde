#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Per-thread engine facts: which job this thread is running, whether it is a pool worker.
///
/// A handle on memory that belongs to one thread, allocated on the thread's first use and freed
/// when the thread exits. A handle is a pointer, not an object, so fetching the context and
/// reading it costs no reference counting: the engine does it several times a job.
///
/// Threading: each context belongs to exactly one thread and is only touched by it, which is why
/// the handle is `@unchecked Sendable` without a lock.
struct ThreadContext: @unchecked Sendable {
    struct Storage {
        /// The job whose `start`/`main`/completion block this thread is inside, innermost first.
        /// Not counted: whoever sets it holds the job until it puts the outer one back.
        var currentJob: Unmanaged<Job>?
        /// The pool worker running on this thread, if any.
        var worker: Worker?
        /// The job a worker takes next, handed to it while it released its previous job under the
        /// scheduler lock (saves taking the lock again).
        var handOff: Job?
        /// Set when the job this worker is starting moved to executing on this thread, so the
        /// worker needn't take the job's lock to check that `start()` did its part.
        var currentJobBegan = false
    }

    private let storage: UnsafeMutablePointer<Storage>

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
                let storage = pointer.assumingMemoryBound(to: Storage.self)
            #else
                guard let storage = pointer?.assumingMemoryBound(to: Storage.self) else { return }
            #endif
            storage.deinitialize(count: 1)
            storage.deallocate()
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// This thread's context, created on first use.
    static var current: ThreadContext {
        if let pointer = pthread_getspecific(key) {
            return ThreadContext(storage: pointer.assumingMemoryBound(to: Storage.self))
        }
        let storage = UnsafeMutablePointer<Storage>.allocate(capacity: 1)
        storage.initialize(to: Storage())
        pthread_setspecific(key, storage)
        return ThreadContext(storage: storage)
    }

    /// This thread's context if it has one; never allocates.
    static var existing: ThreadContext? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return ThreadContext(storage: pointer.assumingMemoryBound(to: Storage.self))
    }

    /// The job this thread is inside, innermost first. The setter doesn't retain it: set it only
    /// to a job the caller holds until it sets the previous value back.
    var currentJob: Job? {
        get { storage.pointee.currentJob?.takeUnretainedValue() }
        nonmutating set { storage.pointee.currentJob = newValue.map(Unmanaged.passUnretained) }
    }

    /// Runs `body` as part of `job`: it is the current job meanwhile, and the outer one is put
    /// back after. Neither is reference counted; the caller holds `job` for the call.
    func running<Result>(_ job: Job, _ body: () throws -> Result) rethrows -> Result {
        let outer = storage.pointee.currentJob
        storage.pointee.currentJob = Unmanaged.passUnretained(job)
        defer { storage.pointee.currentJob = outer }
        return try body()
    }

    /// Whether `job` is the job this thread is inside.
    func isRunning(_ job: Job) -> Bool {
        storage.pointee.currentJob?.toOpaque() == Unmanaged.passUnretained(job).toOpaque()
    }

    /// The pool worker running on this thread, if any.
    var worker: Worker? {
        get { storage.pointee.worker }
        nonmutating set { storage.pointee.worker = newValue }
    }

    /// Whether this thread is a pool worker.
    var isWorker: Bool { storage.pointee.worker != nil }

    /// Takes the job handed to this worker, if any.
    func takeHandOff() -> Job? {
        storage.pointee.handOff.take()
    }

    /// Hands this worker its next job.
    func handOff(_ job: consuming Job?) {
        storage.pointee.handOff = job
    }

    /// See ``Storage/currentJobBegan``.
    var currentJobBegan: Bool {
        get { storage.pointee.currentJobBegan }
        nonmutating set { storage.pointee.currentJobBegan = newValue }
    }
}
