import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import KilnPluginAPI

typealias V2 = Build_Bazel_Remote_Execution_V2_ContentAddressableStorage
typealias ActionCache = Build_Bazel_Remote_Execution_V2_ActionCache

/// A client of one REAPI server's action cache and content-addressable storage. Its unary calls —
/// every request of a look-up and of a store — share one lean HTTP/2 connection
/// (``UnaryConnection``), which multiplexes the requests of every job; ByteStream's large blobs go
/// over grpc-swift-2's client, on a connection of its own.
///
/// - **Look-up:** `GetActionResult`; a result is used only when its exit code is 0 and it has
///   every output the Command names. Its blobs come with `BatchReadBlobs` (up to the server's
///   batch limit together) or ByteStream `Read` (larger ones); each is hashed and compared with its
///   digest, fetched a second time when it differs, and never written when it differs twice.
///   Outputs are written to a temporary file beside their place, then renamed over it.
/// - **Store:** the outputs, what the job printed, the Command and the Action are hashed; the ones
///   `FindMissingBlobs` says the server lacks go up with `BatchUpdateBlobs` or ByteStream `Write`;
///   then `UpdateActionResult`.
///
/// Every request has the connection's timeout; one that fails is a ``RemoteFailure``.
///
/// Threading: any thread (``RemoteClient``); requests run on Swift concurrency's threads.
final class RemoteCache: RemoteClient {
    let server: RemoteEndpoint
    var endpoint: RemoteEndpoint? { server }
    /// The unary calls' connection.
    let unary: UnaryConnection
    /// The streaming calls' client (ByteStream; `Execute` in ``RemoteExecution``).
    let client: GRPCClient<HTTP2ClientTransport.Posix>
    private let runner: Task<Void, Never>
    /// Streaming calls' options: the timeout, and responses of up to 64 MiB.
    let options: CallOptions
    /// How long one request may take.
    let timeout: Duration
    /// The most bytes one batch request may carry (the server's limit, or 4 MiB less room for
    /// the envelope when it states none).
    private let batchLimit: Int64
    /// Small blobs' reads, joined across concurrent look-ups.
    private let smallReads: BatchedReads

    private init(
        endpoint: RemoteEndpoint,
        timeout: Duration,
        unary: UnaryConnection,
        client: GRPCClient<HTTP2ClientTransport.Posix>,
        runner: Task<Void, Never>,
        batchLimit: Int64
    ) {
        self.server = endpoint
        self.unary = unary
        self.client = client
        self.runner = runner
        var options = CallOptions.defaults
        options.timeout = timeout
        options.maxResponseMessageBytes = 64 << 20
        self.options = options
        self.timeout = timeout
        self.batchLimit = batchLimit
        let instance = endpoint.instance
        smallReads = BatchedReads(limit: batchLimit) { digests in
            var request = Build_Bazel_Remote_Execution_V2_BatchReadBlobsRequest()
            request.instanceName = instance
            request.digests = digests
            request.digestFunction = .sha256
            return try await unary.call(
                V2.Method.BatchReadBlobs.descriptor,
                request,
                timeout: timeout,
                as: Build_Bazel_Remote_Execution_V2_BatchReadBlobsResponse.self
            ).responses
        }
    }

    /// Connects and reads the server's capabilities: it must take SHA-256 digests and speak REAPI
    /// 2.1 or later (outputs named by `output_paths`).
    static func connect(_ endpoint: RemoteEndpoint, timeout: Duration) async throws(RemoteFailure) -> RemoteCache {
        let unary: UnaryConnection
        do {
            unary = try await UnaryConnection.connect(
                host: endpoint.host,
                port: endpoint.port,
                authority: endpoint.host.contains(":")
                    ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)",
                timeout: timeout
            )
        } catch {
            throw RemoteFailure("can't reach \(endpoint): \(describe(error))")
        }
        let transport: HTTP2ClientTransport.Posix
        do {
            transport = try HTTP2ClientTransport.Posix(
                target: endpoint.host.contains(":")
                    ? .ipv6(address: endpoint.host, port: endpoint.port)
                    : (endpoint.host.allSatisfy { $0.isNumber || $0 == "." }
                        ? .ipv4(address: endpoint.host, port: endpoint.port)
                        : .dns(host: endpoint.host, port: endpoint.port)),
                transportSecurity: .plaintext
            )
        } catch {
            unary.close()
            throw RemoteFailure("can't reach \(endpoint): \(error)")
        }
        let client = GRPCClient(transport: transport)
        let runner = Task {
            do { try await client.runConnections() } catch {}
        }
        var request = Build_Bazel_Remote_Execution_V2_GetCapabilitiesRequest()
        request.instanceName = endpoint.instance
        do {
            let capabilities = try await unary.call(
                Build_Bazel_Remote_Execution_V2_Capabilities.Method.GetCapabilities.descriptor,
                request,
                timeout: timeout,
                as: Build_Bazel_Remote_Execution_V2_ServerCapabilities.self
            )
            return RemoteCache(
                endpoint: endpoint,
                timeout: timeout,
                unary: unary,
                client: client,
                runner: runner,
                batchLimit: try acceptedBatchLimit(capabilities, of: endpoint)
            )
        } catch {
            unary.close()
            client.beginGracefulShutdown()
            runner.cancel()
            throw error as? RemoteFailure
                ?? RemoteFailure("\(endpoint) didn't answer GetCapabilities: \(describe(error))")
        }
    }

    /// Checks a server's capabilities — it must take SHA-256 digests and speak REAPI 2.1 or
    /// later — and returns the most bytes one batch may carry: its limit (at most 4 MiB), less
    /// room for the envelope.
    private static func acceptedBatchLimit(
        _ capabilities: Build_Bazel_Remote_Execution_V2_ServerCapabilities,
        of endpoint: RemoteEndpoint
    ) throws(RemoteFailure) -> Int64 {
        let cache = capabilities.cacheCapabilities
        let functions = cache.digestFunctions
        guard functions.isEmpty || functions.contains(.sha256) else {
            throw RemoteFailure("\(endpoint) doesn't take SHA-256 digests, the only function kiln hashes with")
        }
        if capabilities.hasHighApiVersion {
            let high = capabilities.highApiVersion
            guard high.major > 2 || high.major == 2 && high.minor >= 1 else {
                throw RemoteFailure(
                    "\(endpoint) speaks REAPI \(high.major).\(high.minor); kiln needs 2.1 or later (output_paths)"
                )
            }
        }
        let stated = cache.maxBatchTotalSizeBytes
        return (stated > 0 ? min(stated, 4 << 20) : 4 << 20) - 64 << 10
    }

    func prepare(_ spec: RemoteActionSpec) throws(RemoteFailure) -> RemoteAction {
        try ActionRecipe.prepare(spec)
    }

    func digest(ofFile path: String) throws(RemoteFailure) -> RemoteDigest {
        try ActionRecipe.fileDigest(path).0.remote
    }

    func digest(of bytes: [UInt8]) -> RemoteDigest {
        ActionRecipe.digest(of: bytes).remote
    }

    func lookUp(
        _ action: RemoteAction,
        writing: Bool,
        completion: @escaping @Sendable (Result<RemoteLookup, RemoteFailure>) -> Void
    ) {
        Task {
            do {
                completion(.success(try await lookUp(action, writing: writing)))
            } catch {
                completion(.failure(Self.failure(error, doing: "GetActionResult", at: server)))
            }
        }
    }

    func store(
        _ action: RemoteAction,
        output: [UInt8],
        completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void
    ) {
        Task {
            do {
                try await store(action, output: output)
                completion(.success(()))
            } catch {
                completion(.failure(Self.failure(error, doing: "uploading a result", at: server)))
            }
        }
    }

    func close() {
        unary.close()
        client.beginGracefulShutdown()
        let done = DispatchSemaphore(value: 0)
        let runner = self.runner
        Task {
            await runner.value
            done.signal()
        }
        // Requests under way have the connection's timeout; a server that hangs them can't keep
        // kiln from ending.
        if done.wait(timeout: .now() + 10) == .timedOut { runner.cancel() }
    }

    // MARK: Look-up

    private func lookUp(_ action: RemoteAction, writing: Bool) async throws -> RemoteLookup {
        let made = action.details as! ActionRecipe.Made
        var request = Build_Bazel_Remote_Execution_V2_GetActionResultRequest()
        request.instanceName = server.instance
        request.actionDigest = made.actionDigest
        request.inlineStdout = true
        request.inlineStderr = true
        // Small outputs come with the result (up to the server's limit): one request, not two.
        request.inlineOutputFiles = action.spec.outputFiles
        request.digestFunction = .sha256
        let result: Build_Bazel_Remote_Execution_V2_ActionResult
        do {
            result = try await unary.call(
                ActionCache.Method.GetActionResult.descriptor,
                request,
                timeout: timeout,
                as: Build_Bazel_Remote_Execution_V2_ActionResult.self
            )
        } catch let error as RPCError where error.code == .notFound {
            return .miss(note: nil)
        }
        // A failure is never used, whoever stored it (bazel#14543).
        guard result.exitCode == 0 else {
            return .miss(note: "the cache holds a failed result (exit status \(result.exitCode)); it runs here")
        }
        switch try await take(result, of: action, writing: writing) {
        case .taken(let output, let files): return .hit(output: output, files: files)
        case .unusable(let why): return .miss(note: "the cached result " + why + "; the job runs here")
        }
    }

    /// What ``take(_:of:writing:)`` came to.
    enum Taken {
        /// The outputs are in place (or in `files`), and this is what the job printed.
        case taken(output: [UInt8], files: [String: [UInt8]])
        /// The result can't be used: it lacks an output, or a blob didn't match its digest twice.
        case unusable(String)
    }

    /// Takes `result`'s outputs for `action`: the inlined ones and the fetched ones, each verified
    /// against its digest (fetched again when it differs), then written in place when `writing`.
    /// Nothing is written unless every output is there and verified.
    func take(_ result: Build_Bazel_Remote_Execution_V2_ActionResult, of action: RemoteAction, writing: Bool)
        async throws
        -> Taken
    {
        let byPath = Dictionary(result.outputFiles.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        for path in action.spec.outputFiles where byPath[path] == nil {
            return .unusable("lacks the output '\(path)'")
        }
        // Inlined contents are checked like fetched ones; those that differ are fetched.
        var inlined: [String: Data] = [:]
        var wanted: [ProtoDigest] = []
        for path in action.spec.outputFiles {
            let file = byPath[path]!
            if !file.contents.isEmpty, ActionRecipe.digest(of: file.contents) == file.digest {
                inlined[file.digest.hash] = file.contents
            } else {
                wanted.append(file.digest)
            }
        }
        if result.hasStdoutDigest, result.stdoutRaw.isEmpty { wanted.append(result.stdoutDigest) }
        if result.hasStderrDigest, result.stderrRaw.isEmpty { wanted.append(result.stderrDigest) }
        var (blobs, corrupt) = wanted.isEmpty ? ([:], nil) : try await fetch(wanted)
        blobs.merge(inlined) { fetched, _ in fetched }
        if let corrupt {
            return .unusable(
                "has a blob, \(corrupt.remote), that didn't match its digest twice; nothing was written from it"
            )
        }
        let directory = action.spec.workingPath
        var files: [String: [UInt8]] = [:]
        for path in action.spec.outputFiles {
            let file = byPath[path]!
            let data = blobs[file.digest.hash] ?? Data()
            if writing {
                try write(data, to: directory + "/" + path, executable: file.isExecutable)
            } else {
                files[path] = [UInt8](data)
            }
        }
        var printed = result.stdoutRaw
        if printed.isEmpty, result.hasStdoutDigest { printed = blobs[result.stdoutDigest.hash] ?? Data() }
        printed.append(
            result.stderrRaw.isEmpty && result.hasStderrDigest
                ? blobs[result.stderrDigest.hash] ?? Data() : result.stderrRaw
        )
        return .taken(output: [UInt8](printed), files: files)
    }

    /// Fetches `digests`, verifying each, fetching again the ones that differ. Returns the blobs
    /// by hash, and a digest whose blob differed twice.
    func fetch(_ digests: [ProtoDigest]) async throws -> ([String: Data], ProtoDigest?) {
        var unique: [String: ProtoDigest] = [:]
        for digest in digests { unique[digest.hash] = digest }
        var blobs: [String: Data] = [:]
        var pending = Array(unique.values)
        for attempt in 0..<2 {
            var failed: [ProtoDigest] = []
            for (digest, data) in try await read(pending) {
                if ActionRecipe.digest(of: data) == digest {
                    blobs[digest.hash] = data
                } else {
                    failed.append(digest)
                }
            }
            if failed.isEmpty { break }
            if attempt == 1 { return (blobs, failed[0]) }
            pending = failed
        }
        return (blobs, nil)
    }

    /// Reads blobs: the small ones in batches, the large ones with ByteStream.
    private func read(_ digests: [ProtoDigest]) async throws -> [(ProtoDigest, Data)] {
        var found: [(ProtoDigest, Data)] = []
        var batch: [ProtoDigest] = []
        var batchSize: Int64 = 0
        func flush() async throws {
            guard !batch.isEmpty else { return }
            found += try await smallReads.read(batch)
            batch = []
            batchSize = 0
        }
        for digest in digests {
            if digest.sizeBytes == 0 {
                found.append((digest, Data()))
            } else if digest.sizeBytes > batchLimit {
                found.append((digest, try await readStream(digest)))
            } else {
                if batchSize + digest.sizeBytes > batchLimit { try await flush() }
                batch.append(digest)
                batchSize += digest.sizeBytes
            }
        }
        try await flush()
        return found
    }

    private func readStream(_ digest: ProtoDigest) async throws -> Data {
        var request = Google_Bytestream_ReadRequest()
        request.resourceName = resourcePrefix + "blobs/\(digest.hash)/\(digest.sizeBytes)"
        return try await Google_Bytestream_ByteStream.Client(wrapping: client).read(request, options: options) {
            response in
            var data = Data()
            for try await piece in response.messages { data.append(piece.data) }
            return data
        }
    }

    private var resourcePrefix: String { server.instance.isEmpty ? "" : server.instance + "/" }

    /// Writes `data` to `path` whole or not at all: a reader sees the old file or the new one, and
    /// a failure leaves no half-written output. The bytes go to an unnamed file in the directory
    /// (`O_TMPFILE`), which gets its name once complete: `linkat` when `path` doesn't exist yet (a
    /// fresh checkout: one change to the directory), else a temporary name renamed over it.
    private func write(_ data: Data, to path: String, executable: Bool) throws {
        let slash = path.lastIndex(of: "/")!
        let directory = String(path[..<slash])
        try makeDirectories(directory)
        let mode: mode_t = executable ? 0o755 : 0o644
        let temporary =
            directory
            + "/.\(path[path.index(after: slash)...]).kiln-remote-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // O_TMPFILE (Linux: __O_TMPFILE | O_DIRECTORY), which Glibc's module doesn't export.
        let unnamed = open(directory, 0o20_000_000 | O_DIRECTORY | O_WRONLY | O_CLOEXEC, mode)
        if unnamed >= 0 {
            defer { Glibc.close(unnamed) }
            try writeAll(data, to: unnamed, path: path)
            let source = "/proc/self/fd/\(unnamed)"
            if linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 { return }
            if errno == EEXIST, linkat(AT_FDCWD, source, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 {
                guard rename(temporary, path) == 0 else {
                    let error = errno
                    unlink(temporary)
                    throw RemoteFailure("can't write \(path): \(String(cString: strerror(error)))")
                }
                return
            }
            // No /proc to name it by: a named temporary file, as on a file system without O_TMPFILE.
        }
        let named = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard named >= 0 else { throw RemoteFailure("can't write \(temporary): \(String(cString: strerror(errno)))") }
        do {
            defer { Glibc.close(named) }
            try writeAll(data, to: named, path: path)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path) == 0 else {
            let error = errno
            unlink(temporary)
            throw RemoteFailure("can't write \(path): \(String(cString: strerror(error)))")
        }
    }

    private func writeAll(_ data: Data, to descriptor: Int32, path: String) throws {
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += count
            }
        }
        if failure != 0 { throw RemoteFailure("can't write \(path): \(String(cString: strerror(failure)))") }
    }

    private func makeDirectories(_ directory: String) throws {
        var status = stat()
        if stat(directory, &status) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            try makeDirectories(String(directory[..<slash]))
        }
        if mkdir(directory, 0o777) != 0, errno != EEXIST {
            throw RemoteFailure("can't make the directory \(directory): \(String(cString: strerror(errno)))")
        }
    }

    // MARK: Store

    private func store(_ action: RemoteAction, output: [UInt8]) async throws {
        let made = action.details as! ActionRecipe.Made
        let directory = action.spec.workingPath
        var result = Build_Bazel_Remote_Execution_V2_ActionResult()
        var blobs = made.messages
        for path in Set(action.spec.outputFiles).sorted() {
            let absolute = directory + "/" + path
            let (digest, executable) = try ActionRecipe.fileDigest(absolute)
            var file = Build_Bazel_Remote_Execution_V2_OutputFile()
            file.path = path
            file.digest = digest
            file.isExecutable = executable
            result.outputFiles.append(file)
            blobs[digest.hash] = (digest, { try Self.contents(of: absolute, digest: digest) })
        }
        if !output.isEmpty {
            let data = Data(output)
            result.stdoutDigest = ActionRecipe.digest(of: data)
            blobs[result.stdoutDigest.hash] = (result.stdoutDigest, { data })
        }
        result.exitCode = 0

        try await uploadMissing(blobs)

        var update = Build_Bazel_Remote_Execution_V2_UpdateActionResultRequest()
        update.instanceName = server.instance
        update.actionDigest = made.actionDigest
        update.actionResult = result
        update.digestFunction = .sha256
        _ = try await unary.call(
            ActionCache.Method.UpdateActionResult.descriptor,
            update,
            timeout: timeout,
            as: Build_Bazel_Remote_Execution_V2_ActionResult.self
        )
    }

    /// Uploads the blobs of `blobs` that `FindMissingBlobs` says the server lacks.
    func uploadMissing(_ blobs: [String: Blob]) async throws {
        var find = Build_Bazel_Remote_Execution_V2_FindMissingBlobsRequest()
        find.instanceName = server.instance
        find.blobDigests = blobs.values.map(\.0)
        find.digestFunction = .sha256
        let missing = try await unary.call(
            V2.Method.FindMissingBlobs.descriptor,
            find,
            timeout: timeout,
            as: Build_Bazel_Remote_Execution_V2_FindMissingBlobsResponse.self
        ).missingBlobDigests
        try await upload(missing.compactMap { blobs[$0.hash] })
    }

    /// A file's bytes, which must still have `digest`: an output changed since it was hashed is
    /// not uploaded under the old digest.
    static func contents(of path: String, digest: ProtoDigest) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path), ActionRecipe.digest(of: data) == digest else {
            throw RemoteFailure("\(path) changed while it was uploaded; the result is not stored")
        }
        return data
    }

    /// Uploads blobs: the small ones in batches, the large ones with ByteStream.
    private func upload(_ blobs: [Blob]) async throws {
        var batch = Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsRequest()
        batch.instanceName = server.instance
        batch.digestFunction = .sha256
        var batchSize: Int64 = 0
        func flush() async throws {
            guard !batch.requests.isEmpty else { return }
            let response = try await unary.call(
                V2.Method.BatchUpdateBlobs.descriptor,
                batch,
                timeout: timeout,
                as: Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsResponse.self
            )
            for answer in response.responses where answer.status.code != 0 {
                throw RemoteFailure("the cache refused the blob \(answer.digest.remote): \(answer.status.message)")
            }
            batch.requests = []
            batchSize = 0
        }
        for (digest, contents) in blobs {
            if digest.sizeBytes > batchLimit {
                try await writeStream(digest, data: try contents())
                continue
            }
            if batchSize + digest.sizeBytes > batchLimit { try await flush() }
            var request = Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsRequest.Request()
            request.digest = digest
            request.data = try contents()
            batch.requests.append(request)
            batchSize += digest.sizeBytes
        }
        try await flush()
    }

    private func writeStream(_ digest: ProtoDigest, data: Data) async throws {
        let name = resourcePrefix + "uploads/\(UUID().uuidString.lowercased())/blobs/\(digest.hash)/\(digest.sizeBytes)"
        let piece = 1 << 20
        let response = try await Google_Bytestream_ByteStream.Client(wrapping: client).write(
            options: options,
            requestProducer: { writer in
                var offset = 0
                repeat {
                    var request = Google_Bytestream_WriteRequest()
                    if offset == 0 { request.resourceName = name }
                    let end = min(offset + piece, data.count)
                    request.writeOffset = Int64(offset)
                    request.data = data.subdata(in: offset..<end)
                    request.finishWrite = end == data.count
                    try await writer.write(request)
                    offset = end
                } while offset < data.count
            }
        )
        guard response.committedSize == digest.sizeBytes || response.committedSize == -1 else {
            throw RemoteFailure(
                "the cache committed \(response.committedSize) of \(digest.sizeBytes) bytes of \(digest.remote)"
            )
        }
    }

    // MARK: Errors

    static func failure(_ error: any Error, doing what: String, at endpoint: RemoteEndpoint) -> RemoteFailure {
        if let failure = error as? RemoteFailure { return failure }
        return RemoteFailure("\(endpoint): \(what) failed: \(describe(error))")
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? RPCError {
            return "\(error.code)" + (error.message.isEmpty ? "" : ": \(error.message)")
        }
        return "\(error)"
    }
}

/// Reads of small blobs, joined: a server that doesn't inline outputs in `GetActionResult`
/// (buildbox-casd doesn't) costs each hit a second request, and a thousand concurrent hits a
/// thousand `BatchReadBlobs` of one blob each. Here, up to ``inFlight`` requests are under way at
/// once; the reads asked for meanwhile wait and go together in the next one, up to the server's
/// batch limit. A read that finds the pipe free goes at once, alone: no delay when it is quiet.
///
/// Threading: any thread; its state is guarded by its lock.
final class BatchedReads: @unchecked Sendable {
    typealias Answer = Build_Bazel_Remote_Execution_V2_BatchReadBlobsResponse.Response
    private struct Waiter {
        let digests: [ProtoDigest]
        let size: Int64
        let continuation: CheckedContinuation<[(ProtoDigest, Data)], any Error>
    }

    /// How many requests may be under way at once.
    static let inFlight = 4
    private let limit: Int64
    private let send: @Sendable ([ProtoDigest]) async throws -> [Answer]
    private let lock = NSLock()
    private var waiting: [Waiter] = []
    private var running = 0

    /// `send` makes one `BatchReadBlobs` request; `limit` is the most bytes one may carry.
    init(limit: Int64, send: @escaping @Sendable ([ProtoDigest]) async throws -> [Answer]) {
        self.limit = limit
        self.send = send
    }

    /// The blobs of `digests` (together at most the limit), each as the server sent it; a blob
    /// the server lacks is a ``RemoteFailure`` for this read only.
    func read(_ digests: [ProtoDigest]) async throws -> [(ProtoDigest, Data)] {
        try await withCheckedThrowingContinuation { continuation in
            let size = digests.reduce(0) { $0 + $1.sizeBytes }
            let batch: [Waiter]? = lock.withLock {
                waiting.append(Waiter(digests: digests, size: size, continuation: continuation))
                guard running < Self.inFlight else { return nil }
                running += 1
                return nextBatch()
            }
            if let batch { launch(batch) }
        }
    }

    /// Takes the waiting reads that fit in one request (at least one). Under the lock.
    private func nextBatch() -> [Waiter] {
        var taken = 0
        var size: Int64 = 0
        while taken < waiting.count, taken == 0 || size + waiting[taken].size <= limit {
            size += waiting[taken].size
            taken += 1
        }
        defer { waiting.removeFirst(taken) }
        return Array(waiting.prefix(taken))
    }

    private func launch(_ batch: [Waiter]) {
        Task {
            do {
                var answers: [String: Answer] = [:]
                for answer in try await send(batch.flatMap(\.digests)) { answers[answer.digest.hash] = answer }
                for waiter in batch {
                    waiter.continuation.resume(with: Result { try Self.blobs(waiter.digests, in: answers) })
                }
            } catch {
                for waiter in batch { waiter.continuation.resume(throwing: error) }
            }
            let next: [Waiter]? = lock.withLock {
                guard !waiting.isEmpty else {
                    running -= 1
                    return nil
                }
                return nextBatch()
            }
            if let next { launch(next) }
        }
    }

    private static func blobs(_ digests: [ProtoDigest], in answers: [String: Answer]) throws -> [(ProtoDigest, Data)] {
        try digests.map { digest in
            guard let answer = answers[digest.hash], answer.status.code == 0 else {
                let status = answers[digest.hash]?.status
                throw RemoteFailure(
                    "the cache lost the blob \(digest.remote) (status \(status?.code ?? 5): \(status?.message ?? "not in the answer"))"
                )
            }
            return (digest, answer.data)
        }
    }
}
