import Foundation
import GRPCCore
import KilnPluginAPI
import SwiftProtobuf

/// Remote execution: REAPI's `Execute`, on the server a ``RemoteCache`` talks to.
///
/// The inputs go up first — every input file, every Directory of the input tree, the Command and
/// the Action that `FindMissingBlobs` says the server lacks. `Execute` then streams the action's
/// `Operation` until it is done; when the stream drops first, `WaitExecution` picks the operation
/// up by name (three times at most). The finished operation's `ExecuteResponse` holds the
/// `ActionResult`, whose outputs are fetched, verified and written as a cache hit's are.
extension RemoteCache {
    func execute(
        _ action: RemoteAction,
        completion: @escaping @Sendable (Result<RemoteExecution, RemoteFailure>) -> Void
    ) {
        Task {
            do {
                completion(.success(try await execute(action)))
            } catch {
                completion(.failure(Self.failure(error, doing: "Execute", at: server)))
            }
        }
    }

    private func execute(_ action: RemoteAction) async throws -> RemoteExecution {
        let made = action.details as! ActionRecipe.Made
        var blobs = made.messages
        for file in made.files {
            let path = action.spec.root + "/" + file.path
            blobs[file.digest.hash] = (file.digest, { try Self.contents(of: path, digest: file.digest) })
        }
        for (hash, directory) in made.directories { blobs[hash] = (directory.digest, { directory.bytes }) }
        try await uploadMissing(blobs)

        var request = Build_Bazel_Remote_Execution_V2_ExecuteRequest()
        request.instanceName = server.instance
        request.actionDigest = made.actionDigest
        request.digestFunction = .sha256
        // kiln asked the cache already; a server that caches failures must not answer with one.
        request.skipCacheLookup = true
        // The action runs as long as it runs: no deadline on the stream itself.
        var streaming = CallOptions.defaults
        streaming.maxResponseMessageBytes = 64 << 20
        let execution = Build_Bazel_Remote_Execution_V2_Execution.Client(wrapping: client)
        var name = ""
        var finished: Google_Longrunning_Operation?
        for attempt in 0..<4 where finished == nil {
            let seen = OperationName()
            do {
                let follow:
                    @Sendable (StreamingClientResponse<Google_Longrunning_Operation>) async throws
                        -> Google_Longrunning_Operation? = { response in
                            for try await operation in response.messages {
                                seen.name = operation.name
                                if operation.done { return operation }
                            }
                            return nil
                        }
                if attempt == 0 || name.isEmpty {
                    finished = try await execution.execute(request, options: streaming, onResponse: follow)
                } else {
                    var wait = Build_Bazel_Remote_Execution_V2_WaitExecutionRequest()
                    wait.name = name
                    finished = try await execution.waitExecution(wait, options: streaming, onResponse: follow)
                }
            } catch let error as RPCError where error.code == .unavailable || error.code == .internalError {
                // A dropped stream: pick the operation up by name, if it has one.
                if attempt == 3 { throw error }
            }
            if !seen.name.isEmpty { name = seen.name }
        }
        guard let operation = finished else {
            throw RemoteFailure("\(server): the execution of \(made.actionDigest.remote) never finished")
        }
        if case .error(let status)? = operation.result {
            throw RemoteFailure("\(server): the execution failed: status \(status.code): \(status.message)")
        }
        let response = try Build_Bazel_Remote_Execution_V2_ExecuteResponse(unpackingAny: operation.response)
        guard response.status.code == 0 else {
            throw RemoteFailure(
                "\(server): the execution failed: status \(response.status.code): \(response.status.message)"
            )
        }
        let result = response.result
        guard result.exitCode == 0 else {
            // A failed command: what it printed, no outputs.
            var wanted: [ProtoDigest] = []
            if result.hasStdoutDigest, result.stdoutRaw.isEmpty { wanted.append(result.stdoutDigest) }
            if result.hasStderrDigest, result.stderrRaw.isEmpty { wanted.append(result.stderrDigest) }
            let (blobs, _) = wanted.isEmpty ? ([:], nil) : try await fetch(wanted)
            var printed = result.stdoutRaw.isEmpty ? blobs[result.stdoutDigest.hash] ?? Data() : result.stdoutRaw
            printed.append(result.stderrRaw.isEmpty ? blobs[result.stderrDigest.hash] ?? Data() : result.stderrRaw)
            if !response.message.isEmpty { printed.append(Data(("\n" + response.message + "\n").utf8)) }
            return RemoteExecution(exitCode: result.exitCode, output: [UInt8](printed), cached: response.cachedResult)
        }
        switch try await take(result, of: action, writing: true) {
        case .taken(let output, _):
            return RemoteExecution(exitCode: 0, output: output, cached: response.cachedResult)
        case .unusable(let why):
            throw RemoteFailure("\(server): the execution's result \(why)")
        }
    }
}

/// The name of the operation a stream reported, kept across a dropped stream.
///
/// Threading: guarded by its lock.
final class OperationName: @unchecked Sendable {
    private let lock = NSLock()
    private var value = ""

    var name: String {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
