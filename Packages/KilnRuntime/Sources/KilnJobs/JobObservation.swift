import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The observable properties, untyped (the engine's side of ``JobProperty``).
enum JobPropertyKind: UInt8, Sendable {
    case isCancelled, isAsynchronous, isExecuting, isFinished, isReady, dependencies, queuePriority, completionBlock
}

/// Whether a notification comes before or after the change.
///
/// Threading: a value type; safe to pass between threads.
public enum JobChangeKind: Sendable, Hashable {
    /// Sent before the property changes; ``JobChange/value`` is the old value.
    case willChange
    /// Sent after the property changed; ``JobChange/value`` is the new value.
    case didChange
}

/// A property of ``Job`` that can be observed, typed by its value — Linux has no KVO, so
/// KilnJobs has its own: `job.observe(.isFinished) { change in … }`.
///
/// Threading: a value type; safe to pass between threads.
public struct JobProperty<Value: Sendable>: Sendable {
    let kind: JobPropertyKind
    let read: @Sendable (Job) -> Value
}

extension JobProperty where Value == Bool {
    /// ``Job/isCancelled``.
    public static var isCancelled: Self { .init(kind: .isCancelled) { $0.isCancelled } }
    /// ``Job/isAsynchronous``; only notified when a subclass announces a change with ``Job/announceChange(of:_:)``.
    public static var isAsynchronous: Self { .init(kind: .isAsynchronous) { $0.isAsynchronous } }
    /// ``Job/isExecuting``.
    public static var isExecuting: Self { .init(kind: .isExecuting) { $0.isExecuting } }
    /// ``Job/isFinished``.
    public static var isFinished: Self { .init(kind: .isFinished) { $0.isFinished } }
    /// ``Job/isReady`` (calls the override, if any).
    public static var isReady: Self { .init(kind: .isReady) { $0.isReady } }
    /// Whether ``Job/completionBlock`` is set.
    public static var completionBlock: Self { .init(kind: .completionBlock) { $0.completionBlock != nil } }
}

extension JobProperty where Value == [Job] {
    /// ``Job/dependencies``.
    public static var dependencies: Self { .init(kind: .dependencies) { $0.dependencies } }
}

extension JobProperty where Value == Job.Priority {
    /// ``Job/queuePriority``.
    public static var queuePriority: Self { .init(kind: .queuePriority) { $0.queuePriority } }
}

/// One notification: which job, before or after, and the property's value at that moment.
///
/// Threading: a value type; safe to pass between threads.
public struct JobChange<Value: Sendable>: Sendable {
    /// Before or after the change.
    public let kind: JobChangeKind
    /// The job whose property changes.
    public let job: Job
    /// The property's value when the notification was sent: old for `willChange`, new for `didChange`.
    public let value: Value
}

/// A live observation. Keep it as long as you want notifications; ``invalidate()`` or
/// releasing it ends the observation. The job never keeps the observer alive past that.
///
/// Threading: any thread. After ``invalidate()`` returns, the handler is not running on any other
/// thread and will not be called again (it may still be running on the calling thread, if the
/// handler invalidates its own observation) — which makes removal during an in-flight
/// notification safe, the problem TN2109 describes for KVO.
public final class JobObservation: Sendable {
    private let entry: ObservationEntry
    private weak let job: Job?

    init(entry: ObservationEntry, job: Job) {
        self.entry = entry
        self.job = job
    }

    /// Ends the observation; waits for deliveries in flight on other threads to return.
    ///
    /// Threading: any thread; idempotent.
    public func invalidate() {
        guard entry.deactivate() else { return }
        if let job {
            job.state.withLock { state in state.rare?.observers.removeAll { $0 === self.entry } }
            job.observationCount.subtract(1, ordering: .releasing)
        }
        entry.waitForOtherDeliveries()
    }

    /// Whether the observation is still active.
    public var isValid: Bool { entry.isActive }

    deinit { invalidate() }
}

/// The job's side of an observation. Guarded by its own small lock, separate from the job's.
final class ObservationEntry: Sendable {
    let property: JobPropertyKind
    private let handler: @Sendable (JobChangeKind, Job) -> Void
    /// Whether it is active, and which threads are inside the handler right now.
    private let gate = EngineLock<(active: Bool, deliveringThreads: [pthread_t])>((true, []))

    init(property: JobPropertyKind, handler: @escaping @Sendable (JobChangeKind, Job) -> Void) {
        self.property = property
        self.handler = handler
    }

    var isActive: Bool { gate.withLock { $0.active } }

    func deliver(_ kind: JobChangeKind, job: Job) {
        let me = pthread_self()
        let admitted = gate.withLock { gate -> Bool in
            guard gate.active else { return false }
            gate.deliveringThreads.append(me)
            return true
        }
        guard admitted else { return }
        handler(kind, job)
        gate.withLock { gate in
            if let index = gate.deliveringThreads.firstIndex(of: me) { gate.deliveringThreads.remove(at: index) }
        }
    }

    /// Returns `true` the first time.
    func deactivate() -> Bool {
        gate.withLock { gate in
            defer { gate.active = false }
            return gate.active
        }
    }

    func waitForOtherDeliveries() {
        let me = pthread_self()
        while gate.withLock({ $0.deliveringThreads.contains { $0 != me } }) {
            sched_yield()
        }
    }
}

extension Job {
    /// Observes a property: `handler` is called with a will-change and a did-change notification
    /// around every change, on the thread that makes the change, never under an engine lock.
    ///
    /// - Parameters:
    ///   - property: What to observe, e.g. `.isFinished`, `.queuePriority`, `.dependencies`.
    ///   - handler: Called for each notification; must be thread-safe.
    /// - Returns: The observation; it ends when you invalidate or release it.
    ///
    /// Threading: any thread.
    public final func observe<Value>(
        _ property: JobProperty<Value>,
        handler: @escaping @Sendable (JobChange<Value>) -> Void
    ) -> JobObservation {
        let entry = ObservationEntry(property: property.kind) { kind, job in
            handler(JobChange(kind: kind, job: job, value: property.read(job)))
        }
        state.withLock { $0.appendObserver(entry) }
        observationCount.add(1, ordering: .releasing)
        return JobObservation(entry: entry, job: self)
    }

    /// Sends will-change and did-change notifications for `property` around `change`, for
    /// subclasses whose overrides (``isAsynchronous``, a custom property) change value.
    /// For ``isReady`` use ``updateReadiness(_:)``, which also tells the queue.
    ///
    /// Threading: any thread.
    public final func announceChange<Value>(of property: JobProperty<Value>, _ change: () throws -> Void) rethrows {
        let observed = isObserved
        if observed { deliver(property.kind, .willChange) }
        try change()
        if observed { deliver(property.kind, .didChange) }
    }
}
