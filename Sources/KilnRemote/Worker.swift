import Dispatch
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KilnPluginAPI
import SwiftProtobuf

typealias BotSession = Google_Devtools_Remoteworkers_V1test2_BotSession
typealias Lease = Google_Devtools_Remoteworkers_V1test2_Lease
typealias BotsClient = Google_Devtools_Remoteworkers_V1test2_Bots.Client<HTTP2ClientTransport.Posix>

/// The library's worker entry point (``RemoteWorkerRequest/entryPoint``): runs a bot until SIGINT
/// or SIGTERM, or until it can't go on (then ``RemoteWorkerRequest/failure`` says why).
///
/// Threading: blocks the calling thread, which must not be one of Swift concurrency's.
@_cdecl("kiln_remote_worker")
public func kilnRemoteWorker(_ request: UnsafeMutableRawPointer) {
    let request = Unmanaged<RemoteWorkerRequest>.fromOpaque(request).takeUnretainedValue()
    let done = DispatchSemaphore(value: 0)
    let worker = BotWorker(request)
    let main = Task {
        do {
            try await worker.run()
        } catch is CancellationError {
        } catch {
            request.failure = (error as? RemoteFailure)?.message ?? "\(error)"
        }
        done.signal()
    }
    // SIGINT and SIGTERM end the worker: its running leases' commands are stopped, its
    // buildbox-casd too, and the scheduler gives their leases to another bot.
    var sources: [any DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { main.cancel() }
        source.resume()
        sources.append(source)
    }
    done.wait()
    for source in sources { source.cancel() }
}

/// A bot of a Remote Workers API scheduler (BuildGrid's Bots service), as buildbox-worker is, and
/// no more: it joins the farm (`CreateBotSession`), then reports its leases and picks up new ones
/// (`UpdateBotSession`, a long poll), and runs each lease's Action with buildbox-run against its
/// own buildbox-casd. That casd is a proxy of the server's CAS: the inputs come from the server
/// through it, and the outputs buildbox-run captures go up to the server through it, so the
/// ActionResult the lease completes with names blobs the server has.
///
/// - **Capacity:** up to ``RemoteWorkerRequest/capacity`` leases at once (BuildGrid reads the
///   worker config `capacity`).
/// - **Keep-alive:** while every slot is busy, the bot reports before its session expires (a third
///   of the time the server gave it); a bot that stops reporting — killed, or cut off — loses its
///   session, and the server gives its leases to another bot.
/// - **A lease that can't run** (an Action that can't be fetched, a runner that crashes) completes
///   with status INTERNAL, which the scheduler counts as the job's failure.
///
/// Threading: ``run()`` is one task; each lease runs in a child task of its own.
final class BotWorker: Sendable {
    private let request: RemoteWorkerRequest
    private let finished = FinishedLeases()

    init(_ request: RemoteWorkerRequest) {
        self.request = request
    }

    private var socket: String { request.directory + "/casd.sock" }

    private func say(_ text: String) {
        FileHandle.standardError.write(Data("kiln worker \(request.botID): \(text)\n".utf8))
    }

    /// Starts the casd proxy, connects, joins, and runs leases until cancelled.
    func run() async throws {
        try FileManager.default.createDirectory(
            atPath: request.directory + "/leases",
            withIntermediateDirectories: true
        )
        let casd = try startCasd()
        defer {
            casd.stop()
            try? FileManager.default.removeItem(atPath: socket)
        }
        let server = try await connect()
        defer { server.close() }
        let bots = Google_Devtools_Remoteworkers_V1test2_Bots.Client(wrapping: server.client)
        var session = try await join(bots)
        var running: [String: Task<Void, Never>] = [:]
        var toReport: [Lease] = []
        var completed: Set<String> = []
        defer { for task in running.values { task.cancel() } }
        var leaseNumber = 0

        while true {
            try Task.checkCancellation()
            // While every slot is busy, wait for a lease to finish or for the keep-alive.
            if running.count >= request.capacity && toReport.isEmpty {
                await finished.wait(upTo: keepAlive(session))
            }
            for lease in finished.take() {
                running[lease.id] = nil
                toReport.append(lease)
                // Never run a lease twice, should the server list it again before it hears.
                if completed.count > 10_000 { completed = [] }
                completed.insert(lease.id)
            }
            var update = Google_Devtools_Remoteworkers_V1test2_UpdateBotSessionRequest()
            update.name = session.name
            update.botSession = session
            update.botSession.status = .ok
            update.botSession.leases =
                running.keys.sorted().map { id in
                    var lease = Lease()
                    lease.id = id
                    lease.state = .active
                    return lease
                } + toReport
            let answer: BotSession?
            do {
                answer = try await updateOrFinish(bots, update, racing: !running.isEmpty && toReport.isEmpty)
            } catch let error as RPCError where error.code == .deadlineExceeded {
                continue
            } catch let error as RPCError {
                try Task.checkCancellation()
                let lost = [.notFound, .invalidArgument, .failedPrecondition, .unavailable].contains(error.code)
                say(
                    "UpdateBotSession failed (\(RemoteCache.describe(error))); "
                        + (lost ? "joining again" : "reporting again") + " in 1 s"
                )
                try await Task.sleep(for: .seconds(1))
                if lost {
                    session = try await join(bots)
                    // Completed leases of the lost session are the scheduler's to retry now.
                    toReport = []
                }
                continue
            }
            guard let answer else { continue }  // a lease finished while the server was polled
            toReport = []
            session = answer
            for lease in answer.leases {
                switch lease.state {
                // BuildGrid hands a lease out ACTIVE already; the protocol says PENDING.
                case .pending, .active:
                    guard running[lease.id] == nil, !completed.contains(lease.id) else { continue }
                    leaseNumber += 1
                    let number = leaseNumber
                    running[lease.id] = Task { [self] in
                        finished.add(await run(lease, number: number, server: server))
                    }
                case .cancelled:
                    running.removeValue(forKey: lease.id)?.cancel()
                default:
                    break
                }
            }
        }
    }

    /// `UpdateBotSession`, long-polled: the server holds it until it has a lease for this bot or
    /// the deadline nears. With `racing`, a lease that finishes meanwhile cancels the call (`nil`),
    /// so its result is reported at once.
    private func updateOrFinish(
        _ bots: BotsClient,
        _ update: Google_Devtools_Remoteworkers_V1test2_UpdateBotSessionRequest,
        racing: Bool
    ) async throws -> BotSession? {
        let options = {
            var options = CallOptions.defaults
            options.timeout = .seconds(30)
            return options
        }()
        guard racing else { return try await bots.updateBotSession(update, options: options) }
        return try await withThrowingTaskGroup(of: BotSession?.self) { group in
            group.addTask { try await bots.updateBotSession(update, options: options) }
            group.addTask { [finished] in
                await finished.wait(upTo: .seconds(30))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// How long the bot may wait before its session needs a report: a third of what is left of it.
    private func keepAlive(_ session: BotSession) -> Duration {
        guard session.hasExpireTime else { return .seconds(5) }
        let left = session.expireTime.date.timeIntervalSinceNow
        return .milliseconds(Int64(max(0.5, min(30, left / 3)) * 1000))
    }

    /// `CreateBotSession`, until the server answers.
    private func join(_ bots: BotsClient) async throws
        -> BotSession
    {
        var create = Google_Devtools_Remoteworkers_V1test2_CreateBotSessionRequest()
        create.parent = request.server.instance
        create.botSession.botID = request.botID
        create.botSession.status = .ok
        var capacity = Google_Devtools_Remoteworkers_V1test2_Worker.Config()
        capacity.key = "capacity"
        capacity.value = String(request.capacity)
        create.botSession.worker.configs = [capacity]
        var device = Google_Devtools_Remoteworkers_V1test2_Device()
        device.handle = request.botID
        create.botSession.worker.devices = [device]
        var options = CallOptions.defaults
        options.timeout = .seconds(30)
        var complained = false
        while true {
            do {
                let session = try await bots.createBotSession(create, options: options)
                say("joined \(request.server) as \(session.name), \(request.capacity) at once")
                return session
            } catch let error as RPCError {
                try Task.checkCancellation()
                if !complained {
                    say("CreateBotSession failed (\(RemoteCache.describe(error))); trying again every second")
                    complained = true
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Connects to the server, waiting for it to come up.
    private func connect() async throws -> RemoteCache {
        var complained = false
        while true {
            do {
                return try await RemoteCache.connect(request.server, timeout: .seconds(10))
            } catch {
                try Task.checkCancellation()
                if !complained {
                    say("\(error.message); trying again every second")
                    complained = true
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Starts buildbox-casd as a proxy of the server's CAS on the worker's Unix socket, and waits
    /// for the socket.
    private func startCasd() throws -> RunningProgram {
        try? FileManager.default.removeItem(atPath: socket)
        var arguments = [
            "--cas-remote=\(request.server.url)",
            "--bind=unix:\(socket)",
        ]
        if !request.server.instance.isEmpty { arguments.append("--instance=\(request.server.instance)") }
        arguments.append(request.directory + "/cache")
        let casd = try RunningProgram(request.casd, arguments, log: request.directory + "/casd.log")
        for _ in 0..<400 {
            if FileManager.default.fileExists(atPath: socket) { return casd }
            guard casd.isRunning else { break }
            usleep(25_000)
        }
        casd.stop()
        throw RemoteFailure("buildbox-casd didn't start; see \(request.directory)/casd.log")
    }

    /// Runs one lease: its Action (inline, or fetched by digest) with buildbox-run; returns the
    /// lease completed with the ActionResult, or with status INTERNAL when it couldn't run.
    private func run(_ lease: Lease, number: Int, server: RemoteCache) async -> Lease {
        var done = Lease()
        done.id = lease.id
        done.state = .completed
        let directory = request.directory + "/leases/\(number)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = ContinuousClock.now
        do {
            let action = try await actionBytes(of: lease, from: server)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try action.write(to: URL(fileURLWithPath: directory + "/action"))
            var arguments = [
                "--remote=unix:\(socket)",
                "--action=\(directory)/action",
                "--action-result=\(directory)/result",
                "--log-level=warning",
            ]
            if !request.server.instance.isEmpty { arguments.append("--instance=\(request.server.instance)") }
            let runner = try RunningProgram(
                request.runner,
                arguments + request.runnerArguments,
                log: directory + "/runner.log"
            )
            let status = await withTaskCancellationHandler {
                await runner.exitStatus()
            } onCancel: {
                runner.stop()
            }
            try Task.checkCancellation()
            guard let bytes = FileManager.default.contents(atPath: directory + "/result") else {
                let log = (try? String(contentsOfFile: directory + "/runner.log", encoding: .utf8)) ?? ""
                throw RemoteFailure("buildbox-run exited with status \(status) and no result: \(log.suffix(2000))")
            }
            let result = try Build_Bazel_Remote_Execution_V2_ActionResult(serializedBytes: bytes)
            done.result = try Google_Protobuf_Any(message: result)
            done.status.code = 0
            if request.verbose {
                let seconds = (ContinuousClock.now - started).components
                say(
                    "lease \(lease.id): exit \(result.exitCode), "
                        + String(format: "%.2f s", Double(seconds.seconds) + Double(seconds.attoseconds) / 1e18)
                )
            }
        } catch is CancellationError {
            // Cancelled by the server, or the worker is stopping: nothing to say.
            done.status.code = 1  // CANCELLED
        } catch {
            done.status.code = 13  // INTERNAL
            done.status.message = (error as? RemoteFailure)?.message ?? "\(error)"
            say("lease \(lease.id) couldn't run: \(done.status.message)")
        }
        return done
    }

    /// The serialized Action a lease carries, or fetches the one its Digest names.
    private func actionBytes(of lease: Lease, from server: RemoteCache) async throws -> Data {
        if lease.payload.isA(Build_Bazel_Remote_Execution_V2_Action.self) {
            return try Build_Bazel_Remote_Execution_V2_Action(unpackingAny: lease.payload).serializedData()
        }
        guard lease.payload.isA(ProtoDigest.self) else {
            throw RemoteFailure("lease \(lease.id) carries a \(lease.payload.typeURL), not an Action or its Digest")
        }
        let digest = try ProtoDigest(unpackingAny: lease.payload)
        let (blobs, bad) = try await server.fetch([digest])
        guard bad == nil, let action = blobs[digest.hash] else {
            throw RemoteFailure("the server doesn't have the Action \(digest.remote)")
        }
        return action
    }
}

/// The leases that finished and aren't reported yet, and a wake-up for the lease loop.
///
/// Threading: guarded by its lock; ``wait(upTo:)`` from one task at a time.
final class FinishedLeases: @unchecked Sendable {
    private let lock = NSLock()
    private var leases: [Lease] = []
    private var waiter: CheckedContinuation<Void, Never>?

    /// Adds a finished lease and wakes the waiting loop.
    func add(_ lease: Lease) {
        let waiter = lock.withLock {
            leases.append(lease)
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume()
    }

    /// The finished leases, taken.
    func take() -> [Lease] {
        lock.withLock {
            defer { leases = [] }
            return leases
        }
    }

    /// Returns when a lease has finished (at once when one is waiting), after `limit`, or when
    /// the task is cancelled.
    func wait(upTo limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let now = self.lock.withLock {
                            // A cancellation before this point finds no waiter: look for it here.
                            guard self.leases.isEmpty, !Task.isCancelled else { return true }
                            self.waiter = continuation
                            return false
                        }
                        if now { continuation.resume() }
                    }
                } onCancel: {
                    self.lock.withLock {
                        defer { self.waiter = nil }
                        return self.waiter
                    }?.resume()
                }
            }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }
}

/// A program the worker started (buildbox-casd, buildbox-run), its output in a log file.
///
/// Threading: any thread; the process's state is Foundation's.
final class RunningProgram: @unchecked Sendable {
    private let process = Process()

    init(_ program: String, _ arguments: [String], log: String) throws {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw RemoteFailure("can't start \(program): \(error)")
        }
        try? output.close()
    }

    var isRunning: Bool { process.isRunning }

    /// Waits for the program to exit; its exit status (or 128 + the signal that ended it).
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [process] in
                process.waitUntilExit()
                continuation.resume(
                    returning: process.terminationReason == .uncaughtSignal
                        ? 128 + process.terminationStatus : process.terminationStatus
                )
            }
        }
    }

    /// SIGTERM, and the wait for it to end.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
