import Dispatch
import KilnJobs
import Synchronization

/// A thread-safe counter for tests.
///
/// Threading: any thread; guarded by its mutex.
public final class Counter: Sendable {
    private let value = LockedValue(0)
    /// Creates a counter at zero.
    public init() {}
    /// Adds one and returns the new value.
    @discardableResult public func increment() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
    /// The current value.
    public var count: Int { value.withLock { $0 } }
}

/// A thread-safe, ordered log of events for tests.
///
/// Threading: any thread; guarded by its mutex.
public final class EventLog: Sendable {
    private let entries = LockedValue<[String]>([])
    /// Creates an empty log.
    public init() {}
    /// Appends an event.
    public func record(_ event: String) { entries.withLock { $0.append(event) } }
    /// The events so far, in order.
    public var events: [String] { entries.withLock { $0 } }
}

/// Tracks how many callers are inside a region at once, and the most ever seen.
///
/// Threading: any thread; guarded by its mutex.
public final class ConcurrencyProbe: Sendable {
    private let state = LockedValue((current: 0, peak: 0))
    /// Creates a probe.
    public init() {}
    /// Runs `body` inside the region.
    public func inside<T>(_ body: () throws -> T) rethrows -> T {
        state.withLock { state in
            state.current += 1
            state.peak = max(state.peak, state.current)
        }
        defer { state.withLock { $0.current -= 1 } }
        return try body()
    }
    /// The most callers ever inside at once.
    public var peak: Int { state.withLock { $0.peak } }
}

/// A one-shot gate: `wait()` blocks until `open()`.
///
/// Threading: any thread.
public final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let opened = LockedValue(false)
    /// Creates a closed gate.
    public init() {}
    /// Opens the gate for every waiter, now and later.
    public func open() {
        let first = opened.withLock { opened -> Bool in
            defer { opened = true }
            return !opened
        }
        if first { semaphore.signal() }
    }
    /// Blocks until the gate is open.
    public func wait() {
        semaphore.wait()
        semaphore.signal()
    }
    /// Blocks until the gate is open or `seconds` pass; returns whether it opened.
    public func wait(seconds: Double) -> Bool {
        guard semaphore.wait(timeout: .now() + seconds) == .success else { return false }
        semaphore.signal()
        return true
    }
}

/// A job that records when `main` runs.
///
/// Threading: as ``Job``.
public final class RecordingJob: Job, @unchecked Sendable {
    private let log: EventLog
    private let work: @Sendable () throws -> Void

    /// Creates a job named `name` that logs `name` when `main` runs, then runs `work`.
    public init(_ name: String, log: EventLog, work: @escaping @Sendable () throws -> Void = {}) {
        self.log = log
        self.work = work
        super.init()
        self.name = name
    }

    /// Logs the name and runs the work.
    public override func main() throws {
        log.record(name ?? "?")
        try work()
    }
}

/// A value guarded by a lock, for state that test closures share between threads (a `LockedValue`,
/// which ThreadSanitizer builds can see).
///
/// Threading: any thread; guarded by its mutex.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: LockedValue<Value>
    /// Creates a box holding `value`.
    public init(_ value: Value) { mutex = LockedValue(value) }
    /// The current value.
    public var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
    /// Runs `body` on the value under the lock and returns what it returns.
    @discardableResult
    public func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

/// Counts arrivals and lets a waiter block until a number of them have happened.
///
/// Threading: any thread.
public final class Arrivals: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    /// Creates a counter with no arrivals.
    public init() {}
    /// Records one arrival.
    public func arrive() { semaphore.signal() }
    /// Blocks until `count` more arrivals have happened (consuming them) or `seconds` pass.
    ///
    /// - Returns: `true` if all of them arrived in time.
    public func wait(for count: Int, seconds: Double = 10) -> Bool {
        let deadline = DispatchTime.now() + seconds
        for _ in 0..<count where semaphore.wait(timeout: deadline) == .timedOut {
            return false
        }
        return true
    }
}

/// A one-shot barrier: each of `parties` callers blocks until all of them have arrived.
///
/// Threading: any thread.
public final class Barrier: Sendable {
    private let parties: Int
    private let arrived = LockedValue(0)
    private let gate = Gate()
    /// Creates a barrier for `parties` callers.
    public init(parties: Int) { self.parties = parties }
    /// Arrives and blocks until every party has arrived or `seconds` pass.
    ///
    /// - Returns: `true` if every party arrived in time.
    public func arriveAndWait(seconds: Double = 10) -> Bool {
        let last = arrived.withLock { arrived -> Bool in
            arrived += 1
            return arrived == parties
        }
        if last { gate.open() }
        return gate.wait(seconds: seconds)
    }
}
