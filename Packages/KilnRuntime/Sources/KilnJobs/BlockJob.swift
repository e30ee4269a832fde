import Synchronization

/// A job that runs one or more blocks — KilnJobs' counterpart of `NSBlockOperation`.
///
/// With several blocks, they run concurrently on the shared pool (the thread that runs the job
/// takes part), and the job finishes when all have returned. The first error a block throws
/// becomes the job's ``Job/error``; the other blocks still run.
///
/// Threading: any member from any thread. `@unchecked Sendable` as ``Job``; the blocks are
/// guarded by `blocks`.
public final class BlockJob: Job, @unchecked Sendable {
    /// The blocks, and whether `main` has taken them (after which none can be added).
    ///
    /// A struct, not a tuple: a closure inside a tuple that passes through the lock's generic
    /// parameter is stored at the most general abstraction, so every store and every read of it
    /// allocated a conversion thunk, and destroying the tuple went through runtime metadata.
    struct Blocks {
        var first: (@Sendable () throws -> Void)?
        var more: [@Sendable () throws -> Void] = []
        var sealed = false
    }

    private let blocks: EngineLock<Blocks>

    /// Creates a job with one block.
    ///
    /// Threading: any thread.
    public init(block: @escaping @Sendable () throws -> Void) {
        blocks = EngineLock(Blocks(first: block))
        super.init()
    }

    /// Creates a job with no block yet; add them with ``addExecutionBlock(_:)``.
    ///
    /// Threading: any thread.
    public override init() {
        blocks = EngineLock(Blocks())
        super.init()
    }

    /// Adds a block to run with the others.
    ///
    /// - Throws: ``JobError`` `.tooLate` once the job has started or finished.
    ///
    /// Threading: any thread.
    public func addExecutionBlock(_ block: @escaping @Sendable () throws -> Void) throws(JobError) {
        // A job cancelled before it ran finishes without `main`, so nothing seals the blocks.
        let started = state.withLock { $0.phase >= .executing }
        let added =
            !started
            && blocks.withLock { blocks -> Bool in
                guard !blocks.sealed else { return false }
                if blocks.first == nil {
                    blocks.first = block
                } else {
                    blocks.more.append(block)
                }
                return true
            }
        guard added else {
            throw JobError(.tooLate, "can't add an execution block to \(description): it has started")
        }
    }

    /// The blocks, in the order they were added.
    ///
    /// Threading: any thread.
    public var executionBlocks: [@Sendable () throws -> Void] {
        blocks.withLock { blocks in (blocks.first.map { [$0] } ?? []) + blocks.more }
    }

    /// Runs the blocks; see the type's discussion.
    public override func main() throws {
        let taken = blocks.withLock { blocks -> Blocks in
            blocks.sealed = true
            return blocks
        }
        let (first, more) = (taken.first, taken.more)
        guard let first else { return }
        if more.isEmpty {
            try first()
            return
        }
        let group = ConcurrentBlocks([first] + more, job: self)
        for _ in 0..<min(more.count, Scheduler.shared.threadCount) {
            Scheduler.shared.submit { group.drain() }
        }
        group.drain()
        group.waitForAll()
        if let error = group.firstError { throw error }
    }
}

/// Blocks shared out between the threads that help: each claims the next unclaimed block. The
/// job's own thread only ever waits for blocks already running elsewhere, so it cannot deadlock.
private final class ConcurrentBlocks: Sendable {
    private let blocks: [@Sendable () throws -> Void]
    private let job: Job
    private let progress = EngineLock<(next: Int, finished: Int, error: (any Error)?)>((0, 0, nil))
    private let allDone = CountingSemaphore()

    init(_ blocks: [@Sendable () throws -> Void], job: Job) {
        self.blocks = blocks
        self.job = job
    }

    /// Runs unclaimed blocks until none is left. On a helper thread, the blocks run as part of
    /// their job: `JobQueue.current` and the wait checks see it.
    func drain() {
        ThreadContext.current.running(job, drainUnclaimed)
    }

    private func drainUnclaimed() {
        while true {
            let index = progress.withLock { progress -> Int? in
                guard progress.next < blocks.count else { return nil }
                defer { progress.next += 1 }
                return progress.next
            }
            guard let index else { return }
            var failure: (any Error)?
            do { try blocks[index]() } catch { failure = error }
            let last = progress.withLock { progress -> Bool in
                if progress.error == nil { progress.error = failure }
                progress.finished += 1
                return progress.finished == blocks.count
            }
            if last { allDone.signal() }
        }
    }

    func waitForAll() {
        Scheduler.shared.blocking { allDone.wait() }
    }

    var firstError: (any Error)? { progress.withLock { $0.error } }
}
