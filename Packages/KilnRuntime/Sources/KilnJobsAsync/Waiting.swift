// The suspending forms of the engine's waits. They live apart from KilnJobs so that the engine's
// library doesn't need Swift's concurrency runtime, nor the libdispatch that runtime loads: kiln's
// runs use threads and blocking waits only, and each library a process loads costs it memory.
// A plugin or program that awaits jobs imports this module beside KilnJobs.
import KilnJobs

extension Job {
    /// Suspends the calling task until the job has finished.
    ///
    /// - Throws: ``JobError`` in the same cases as the blocking form, ``Job/waitUntilFinished()``.
    ///
    /// Threading: any task.
    public final func waitUntilFinished() async throws(JobError) {
        try checkWaitable()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !addFinishWaiter({ continuation.resume() }) { continuation.resume() }
        }
    }
}

extension JobQueue {
    /// Suspends the calling task until the queue holds no jobs — including jobs added meanwhile.
    ///
    /// - Throws: ``JobError`` as the blocking form, ``JobQueue/waitUntilAllJobsAreFinished()``.
    ///
    /// Threading: any task.
    public func waitUntilAllJobsAreFinished() async throws(JobError) {
        try checkNotInside()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !addEmptyWaiter({ continuation.resume() }) { continuation.resume() }
        }
    }
}
