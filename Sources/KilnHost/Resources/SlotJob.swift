import KilnJobs

/// Holds one slot of a resource queue for a job that claims several resources.
///
/// A job claiming resources R1 < R2 < … < Rn (sorted by name) runs as a chain: a slot job in R1
/// which, once it holds its slot, adds a slot job to R2, and so on; the last stage adds the real
/// job to Rn. Every task acquires in the same global order and keeps what it holds while it waits
/// for the next, so no two tasks can wait on each other in a circle: overlapping claims never
/// deadlock. A slot job is asynchronous: it holds its queue's slot but no thread.
///
/// The host calls ``release()`` on every stage from the real job's completion block, which runs
/// exactly once however the real job ends. If a stage is cancelled before it handed over (a failed
/// dependency, Ctrl-C), it cancels the real job — still in no queue, so it finishes at once and
/// releases its dependents.
///
/// Threading: as ``Job``.
final class SlotJob: Job, @unchecked Sendable {
    private let nextQueue: JobQueue
    private let next: Job
    private let realJob: Job
    /// The resource whose slot this job holds.
    let resource: String

    /// - Parameters:
    ///   - resource: The resource whose slot this holds.
    ///   - label: The task or job label, for the name.
    ///   - next: What to add to `nextQueue` once the slot is held: the next stage or the real job.
    ///   - realJob: The job the chain leads to.
    init(resource: String, label: String, next: Job, in nextQueue: JobQueue, realJob: Job) {
        self.resource = resource
        self.next = next
        self.nextQueue = nextQueue
        self.realJob = realJob
        super.init()
        name = "\(label) [holds \(resource)]"
        requiresSuccessfulDependencies = true
    }

    override var isAsynchronous: Bool { true }

    override func start() throws(JobError) {
        guard try beginExecution() else {
            realJob.cancel()
            return
        }
        // The real job may have been cancelled while this stage waited for its slot.
        if realJob.isCancelled || realJob.isFinished {
            release()
            return
        }
        do {
            try nextQueue.addJob(next)
        } catch {
            release()
            realJob.cancel()
        }
    }

    /// Cancelling a stage cancels the job it leads to.
    override func cancel() {
        super.cancel()
        realJob.cancel()
    }

    /// Gives the slot back. Harmless if the stage never started or was already released.
    func release() {
        try? finish()
    }
}
