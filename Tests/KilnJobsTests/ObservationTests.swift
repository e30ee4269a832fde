import KilnJobs
import KilnTestSupport
import Synchronization
import Testing

extension JobEngineTests {
    @Suite("Observation")
    struct ObservationTests {
        struct Failure: Error {}

        @Test("isCancelled notifications carry false before the change and true after")
        func isCancelledValues() {
            let job = Job()
            let log = EventLog()
            let token = job.observe(.isCancelled) { log.record("\($0.kind) \($0.value)") }
            job.cancel()
            #expect(log.events == ["willChange false", "didChange true"])
            withExtendedLifetime(token) {}
        }

        @Test("isExecuting and isFinished notifications of a synchronous job carry old then new values, in order")
        func executingAndFinishedValues() throws {
            let job = Job()
            let log = EventLog()
            let tokens = [
                job.observe(.isExecuting) { log.record("isExecuting \($0.kind) \($0.value)") },
                job.observe(.isFinished) { log.record("isFinished \($0.kind) \($0.value)") },
            ]
            try job.start()
            #expect(
                log.events == [
                    "isExecuting willChange false",
                    "isExecuting didChange true",
                    "isExecuting willChange true",
                    "isFinished willChange false",
                    "isExecuting didChange false",
                    "isFinished didChange true",
                ]
            )
            withExtendedLifetime(tokens) {}
        }

        @Test("isReady notifications carry old then new readiness as a dependency is added and finishes")
        func isReadyValues() throws {
            let job = Job()
            let dependency = Job()
            let log = EventLog()
            let token = job.observe(.isReady) { log.record("\($0.kind) \($0.value)") }
            job.addDependency(dependency)
            #expect(log.events == ["willChange true", "didChange false"])
            try dependency.start()
            #expect(log.events == ["willChange true", "didChange false", "willChange false", "didChange true"])
            withExtendedLifetime(token) {}
        }

        @Test("dependencies notifications carry the old list before the change and the new one after")
        func dependenciesValues() {
            let job = Job()
            let first = Job()
            let second = Job()
            job.addDependency(first)
            let seen = Locked<[(JobChangeKind, [Job])]>([])
            let token = job.observe(.dependencies) { change in
                seen.withLock { $0.append((change.kind, change.value)) }
            }
            job.addDependency(second)
            job.removeDependency(first)
            let changes = seen.value
            #expect(changes.map(\.0) == [.willChange, .didChange, .willChange, .didChange])
            #expect(
                changes.map { $0.1.map(ObjectIdentifier.init) } == [
                    [ObjectIdentifier(first)],
                    [ObjectIdentifier(first), ObjectIdentifier(second)],
                    [ObjectIdentifier(first), ObjectIdentifier(second)],
                    [ObjectIdentifier(second)],
                ]
            )
            withExtendedLifetime(token) {}
        }

        @Test("queuePriority notifications carry the old priority before the change and the new one after")
        func queuePriorityValues() {
            let job = Job()
            let log = EventLog()
            let token = job.observe(.queuePriority) { log.record("\($0.kind) \($0.value)") }
            job.queuePriority = .high
            #expect(log.events == ["willChange normal", "didChange high"])
            withExtendedLifetime(token) {}
        }

        @Test("completionBlock notifications say whether a block was set before the change and after")
        func completionBlockValues() throws {
            let job = Job()
            let log = EventLog()
            let token = job.observe(.completionBlock) { log.record("\($0.kind) \($0.value)") }
            try job.setCompletionBlock {}
            job.completionBlock = nil
            #expect(log.events == ["willChange false", "didChange true", "willChange true", "didChange false"])
            withExtendedLifetime(token) {}
        }

        @Test("announceChange(of: .isAsynchronous) notifies around a subclass's change with old and new values")
        func isAsynchronousAnnounced() {
            final class SwitchingJob: Job, @unchecked Sendable {
                // Guarded by its own mutex.
                private let asynchronous = LockedValue(false)
                override var isAsynchronous: Bool { asynchronous.withLock { $0 } }
                func becomeAsynchronous() {
                    announceChange(of: .isAsynchronous) { asynchronous.withLock { $0 = true } }
                }
            }
            let job = SwitchingJob()
            let log = EventLog()
            let token = job.observe(.isAsynchronous) { log.record("\($0.kind) \($0.value)") }
            job.becomeAsynchronous()
            #expect(log.events == ["willChange false", "didChange true"])
            withExtendedLifetime(token) {}
        }

        @Test("notifications are delivered on the thread that made the change")
        func deliveredOnChangingThread() throws {
            let job = ClosureJob()
            let changingThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let deliveryThreads = Locked<[ThreadFacts.ThreadIdentity]>([])
            let token = job.observe(.queuePriority) { _ in
                deliveryThreads.withLock { $0.append(ThreadFacts.currentThread) }
            }
            let changed = Gate()
            spawnThread {
                changingThread.value = ThreadFacts.currentThread
                job.queuePriority = .low
                changed.open()
            }
            #expect(changed.wait(seconds: 10))
            #expect(deliveryThreads.value.count == 2)
            #expect(deliveryThreads.value.allSatisfy { $0 == changingThread.value })

            // Finishing is a change made by the thread that ran the job.
            let mainThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let finishThread = Locked<ThreadFacts.ThreadIdentity?>(nil)
            let queued = ClosureJob { _ in mainThread.value = ThreadFacts.currentThread }
            let finishToken = queued.observe(.isFinished) { change in
                if change.kind == .didChange { finishThread.value = ThreadFacts.currentThread }
            }
            let queue = JobQueue(name: "queue")
            try queue.addJob(queued)
            #expect(queue.empties())
            #expect(finishThread.value != nil)
            #expect(finishThread.value == mainThread.value)
            withExtendedLifetime([token, finishToken]) {}
        }

        @Test("an invalidated observation receives no more notifications")
        func invalidateStopsDelivery() {
            let job = Job()
            let calls = Counter()
            let token = job.observe(.queuePriority) { _ in calls.increment() }
            job.queuePriority = .high
            #expect(calls.count == 2)
            #expect(token.isValid)
            token.invalidate()
            #expect(!token.isValid)
            job.queuePriority = .low
            token.invalidate()
            #expect(calls.count == 2)
        }

        @Test("releasing the observation ends it")
        func releasingTokenStopsDelivery() {
            let job = Job()
            let calls = Counter()
            var token: JobObservation? = job.observe(.queuePriority) { _ in calls.increment() }
            job.queuePriority = .high
            #expect(calls.count == 2)
            #expect(token?.isValid == true)
            token = nil
            job.queuePriority = .low
            #expect(calls.count == 2)
        }

        @Test("invalidate() waits for a delivery in flight on another thread, and no delivery follows")
        func invalidateDuringDelivery() {
            let job = Job()
            let calls = Counter()
            let entered = Arrivals()
            let proceed = Gate()
            let inside = Locked(false)
            let log = EventLog()
            let token = job.observe(.queuePriority) { _ in
                calls.increment()
                inside.value = true
                entered.arrive()
                _ = proceed.wait(seconds: 10)
                log.record("handler returned")
                inside.value = false
            }
            spawnThread { job.queuePriority = .high }
            #expect(entered.wait(for: 1))

            let invalidated = Gate()
            spawnThread {
                token.invalidate()
                log.record("invalidate returned, handler inside: \(inside.value)")
                invalidated.open()
            }
            // invalidate() deactivates before it waits; once isValid is false it waits on the handler.
            #expect(eventually { !token.isValid })
            proceed.open()
            #expect(invalidated.wait(seconds: 10))
            #expect(log.events == ["handler returned", "invalidate returned, handler inside: false"])

            job.queuePriority = .low
            #expect(calls.count == 1)
        }

        @Test("the job does not keep an observer alive once its observation is released")
        func jobDoesNotRetainObserver() {
            final class Observer: Sendable {
                let calls = Counter()
            }
            let job = Job()
            weak var weakObserver: Observer?
            var token: JobObservation?
            do {
                let observer = Observer()
                weakObserver = observer
                token = job.observe(.queuePriority) { _ in observer.calls.increment() }
            }
            job.queuePriority = .high
            #expect(weakObserver?.calls.count == 2)
            #expect(token?.isValid == true)
            token = nil
            #expect(weakObserver == nil)
            job.queuePriority = .low
            withExtendedLifetime(job) {}
        }

        @Test("a job cancelled by a failed dependency sends isCancelled notifications with old then new value")
        func cancelledByDependencyValues() throws {
            let dependency = ClosureJob { _ in throw Failure() }
            let job = Job()
            job.requiresSuccessfulDependencies = true
            job.addDependency(dependency)
            let log = EventLog()
            let token = job.observe(.isCancelled) { log.record("\($0.kind) \($0.value)") }
            try dependency.start()
            #expect(job.isCancelled)
            #expect(log.events == ["willChange false", "didChange true"])
            withExtendedLifetime(token) {}
        }
    }
}
