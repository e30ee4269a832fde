import KilnJobs
import KilnPaths
import KilnPluginAPI

/// A job whose work finishes later: it starts `work`, which calls the closure it is given once,
/// from any thread, when it is done. It holds a slot of its queue (the remote's `net:` queue)
/// while a request is under way, and no thread.
///
/// Threading: as ``Job``.
final class DeferredWorkJob: Job, @unchecked Sendable {
    private let work: @Sendable (_ done: @escaping @Sendable () -> Void) -> Void

    init(_ name: String, work: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) {
        self.work = work
        super.init()
        self.name = name
    }

    override var isAsynchronous: Bool { true }

    override func start() throws(JobError) {
        guard try beginExecution() else { return }
        work { [self] in try? finish() }
    }
}

/// What a run asks the remote cache for one job: a look-up before it runs, and storing its result
/// after it ran and succeeded. Both follow ``RemoteRecipe``; neither ever fails the job — a
/// failure of the cache is reported once (``RemoteCacheSession``) and the job runs here.
///
/// Threading: immutable; any thread. The work runs on the job's own thread (hashing files) and
/// on the remote library's (requests).
struct RemoteSteps: Sendable {
    let session: RemoteCacheSession
    let plan: BuildPlan
    let position: Int
    let request: JobRequest

    /// Looks the job up; `done(true)` when the cache's result is now in place (its outputs
    /// written, `output` holding what the job printed), `done(false)` when the job must run.
    func lookUp(into output: TaskOutput, done: @escaping @Sendable (Bool) -> Void) {
        guard session.isUp, case .success(let recipe) = RemoteRecipe.plan(at: position, request: request, in: plan),
            let client = session.client
        else { return done(false) }
        // Asks for `spec`'s result, writing its outputs when `writing`; `hit` gets a hit's
        // printed output and files, and a miss or a failure ends the look-up with `done(false)`.
        @Sendable func ask(
            _ spec: RemoteActionSpec,
            writing: Bool,
            hit: @escaping @Sendable (_ printed: [UInt8], _ files: [String: [UInt8]]) -> Void
        ) {
            guard let action = try? client.prepare(spec) else { return done(false) }
            client.lookUp(action, writing: writing) { result in
                switch result {
                case .success(.hit(let printed, let files)):
                    hit(printed, files)
                case .success(.miss(let note)):
                    if let note { session.say("kiln: \(request.label): \(note)") }
                    done(false)
                case .failure(let failure):
                    session.failed(failure)
                    done(false)
                }
            }
        }
        @Sendable func fetch(_ spec: RemoteActionSpec) {
            ask(spec, writing: true) { printed, _ in
                output.append(printed)
                done(true)
            }
        }
        guard let discovery = recipe.discovery, let depfile = recipe.depfile else { return fetch(recipe.spec) }
        ask(discovery, writing: false) { _, files in
            // The headers the run that stored it read, with their content here and now.
            guard let text = files[depfile], let full = recipe.full(depfileText: String(decoding: text, as: UTF8.self))
            else { return done(false) }
            fetch(full)
        }
    }

    /// Runs the job on the server. `done` gets what it came to, or `nil` when the server can't
    /// run it (the job runs here then): the recipe refuses it, or the server failed (reported once).
    ///
    /// A job with a depfile is sent with the headers its last depfile names, if it has one here:
    /// the server sees only what the action lists, so such a job must list its headers in
    /// `sources:` to run remotely the first time.
    func execute(into output: TaskOutput, done: @escaping @Sendable (RemoteExecution?) -> Void) {
        guard session.executes, case .success(let recipe) = RemoteRecipe.plan(at: position, request: request, in: plan),
            let client = session.client
        else { return done(nil) }
        guard let spec = recipe.full(depfileText: recipe.depfileHere), let action = try? client.prepare(spec) else {
            return done(nil)
        }
        client.execute(action) { result in
            switch result {
            case .success(let execution):
                output.append(execution.output)
                done(execution)
            case .failure(let failure):
                session.executionFailed(failure)
                done(nil)
            }
        }
    }

    /// Stores the result of the job, which ran here, exited 0 and left every output it declares:
    /// the full action's, then (for a job with a depfile) the discovery action's. `done` is called
    /// when the cache has them, or the attempt failed.
    func store(_ output: TaskOutput, done: @escaping @Sendable () -> Void) {
        guard session.isUp, !session.settings.readOnly,
            case .success(let recipe) = RemoteRecipe.plan(at: position, request: request, in: plan),
            let client = session.client
        else { return done() }
        let depfileText = recipe.depfileHere
        // A command that wrote no depfile has no result to share: its headers are unknown.
        if recipe.depfile != nil, depfileText == nil { return done() }
        guard let fullSpec = recipe.full(depfileText: depfileText), let full = try? client.prepare(fullSpec) else {
            return done()
        }
        var printed: [UInt8] = []
        output.forEachBytes { printed += $0 }
        client.store(full, output: printed) { result in
            if case .failure(let failure) = result {
                session.failed(failure)
                return done()
            }
            guard let discoverySpec = recipe.discovery, let discovery = try? client.prepare(discoverySpec) else {
                return done()
            }
            client.store(discovery, output: []) { result in
                if case .failure(let failure) = result { session.failed(failure) }
                done()
            }
        }
    }
}
