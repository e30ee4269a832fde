import Foundation
import GRPCCore
import KilnTestSupport
import Testing

@testable import KilnRemote

/// The remote cache's lean unary calls (``UnaryConnection``): against a real REAPI server,
/// buildbox-casd (a gRPC C++ server), and against sockets that misbehave as no server should.
@Suite("Unary gRPC calls over one lean HTTP/2 connection", .serialized)
struct UnaryConnectionTests {
    typealias CAS = Build_Bazel_Remote_Execution_V2_ContentAddressableStorage

    /// buildbox-casd on 127.0.0.1, storing in a temporary directory, until ``stop()``.
    final class Casd: @unchecked Sendable {
        let process: Process
        let storage: TemporaryDirectory
        let port: Int

        /// Starts a server on `fixed`, or on a free port.
        init(port fixed: Int? = nil) async throws {
            let program = try Peers.buildbox("buildbox-casd")
            storage = try TemporaryDirectory(prefix: "kiln-unary-casd")
            for _ in 0..<(fixed == nil ? 20 : 200) {
                let port = fixed ?? Int.random(in: 20_000..<60_000)
                let process = Process()
                process.executableURL = URL(fileURLWithPath: program)
                process.arguments = ["--bind=127.0.0.1:\(port)", storage.path("cache")]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                for _ in 0..<200 where process.isRunning {
                    if let connection = try? await UnaryConnection.connect(
                        host: "127.0.0.1",
                        port: port,
                        authority: "127.0.0.1:\(port)",
                        timeout: .seconds(1)
                    ) {
                        connection.close()
                        self.process = process
                        self.port = port
                        return
                    }
                    try await Task.sleep(for: .milliseconds(25))
                }
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
            }
            storage.remove()
            throw Unavailable(description: "buildbox-casd didn't start listening")
        }

        func connect() async throws -> UnaryConnection {
            try await UnaryConnection.connect(
                host: "127.0.0.1",
                port: port,
                authority: "127.0.0.1:\(port)",
                timeout: .seconds(5)
            )
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
            storage.remove()
        }
    }

    /// A TCP listener on 127.0.0.1 that gives each connection to `serve` on a thread of its own.
    final class Listener: @unchecked Sendable {
        let socket: Int32
        let port: Int

        init(serve: @escaping @Sendable (Int32) -> Void) throws {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.socket = socket
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socket, $0, length) == 0 && listen(socket, 8) == 0 && getsockname(socket, $0, &length) == 0
                }
            }
            guard bound else { throw Unavailable(description: "can't listen: \(String(cString: strerror(errno)))") }
            port = Int(UInt16(bigEndian: address.sin_port))
            Thread.detachNewThread {
                while true {
                    let connection = accept(socket, nil, nil)
                    if connection < 0 { return }
                    Thread.detachNewThread { serve(connection) }
                }
            }
        }

        func close() {
            shutdown(socket, Int32(SHUT_RDWR))
            Glibc.close(socket)
        }
    }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads from `connection` until the client has sent its first request (the preface, its
    /// settings and window, and at least part of a HEADERS frame: over 80 bytes).
    static func awaitRequest(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while total <= 80 {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { return }
            total += count
        }
    }

    static func digest(_ bytes: [UInt8]) -> ProtoDigest {
        ActionRecipe.digest(of: Data(bytes))
    }

    /// Stores `blobs` with one `BatchUpdateBlobs`; the status code of each.
    static func storeBlobs(_ blobs: [[UInt8]], on connection: UnaryConnection) async throws -> [Int32] {
        var upload = Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsRequest()
        upload.requests = blobs.map { blob in
            var request = Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsRequest.Request()
            request.digest = digest(blob)
            request.data = Data(blob)
            return request
        }
        let stored = try await connection.call(
            CAS.Method.BatchUpdateBlobs.descriptor,
            upload,
            timeout: .seconds(120),
            as: Build_Bazel_Remote_Execution_V2_BatchUpdateBlobsResponse.self
        )
        return stored.responses.map(\.status.code)
    }

    /// The blob of `blob`'s digest, read alone with `BatchReadBlobs`.
    static func readBlob(_ blob: [UInt8], on connection: UnaryConnection) async throws -> [UInt8]? {
        var request = Build_Bazel_Remote_Execution_V2_BatchReadBlobsRequest()
        request.digests = [digest(blob)]
        let response = try await connection.call(
            CAS.Method.BatchReadBlobs.descriptor,
            request,
            timeout: .seconds(120),
            as: Build_Bazel_Remote_Execution_V2_BatchReadBlobsResponse.self
        )
        return response.responses.first.map { [UInt8]($0.data) }
    }

    @Test("thousands of calls at once on one connection each get their own answer")
    func manyConcurrentCalls() async throws {
        let server = try await Casd()
        defer { server.stop() }
        let connection = try await server.connect()
        defer { connection.close() }
        // A thousand calls at once, eight times a run's look-ups in flight. (Far more made NIOHTTP2's
        // per-frame stream look-up, a linear scan, the cost of a debug build's test.)
        let blobs = (0..<500).map { index in
            Array("blob \(index) ".utf8) + [UInt8](repeating: UInt8(index % 251), count: index % 700)
        }
        let stored = try await Self.storeBlobs(blobs, on: connection)
        #expect(stored.count == blobs.count)
        #expect(stored.allSatisfy { $0 == 0 })

        // Each blob read alone, all at once, and an action nobody stored looked up beside each.
        let (read, missing) = try await withThrowingTaskGroup(of: (Int, [UInt8]?, RPCError?).self) { group in
            for (index, blob) in blobs.enumerated() {
                group.addTask { (index, try await Self.readBlob(blob, on: connection), nil) }
                group.addTask {
                    var request = Build_Bazel_Remote_Execution_V2_GetActionResultRequest()
                    request.actionDigest = Self.digest(Array("no such action \(index)".utf8))
                    do {
                        _ = try await connection.call(
                            Build_Bazel_Remote_Execution_V2_ActionCache.Method.GetActionResult.descriptor,
                            request,
                            timeout: .seconds(120),
                            as: Build_Bazel_Remote_Execution_V2_ActionResult.self
                        )
                        return (index, nil, nil)
                    } catch let error as RPCError {
                        return (index, nil, error)
                    }
                }
            }
            var read: [Int: [UInt8]] = [:]
            var missing: [RPCError] = []
            for try await (index, bytes, error) in group {
                if let bytes { read[index] = bytes }
                if let error { missing.append(error) }
            }
            return (read, missing)
        }
        #expect(read.count == blobs.count)
        #expect(blobs.indices.allSatisfy { read[$0] == blobs[$0] })
        #expect(missing.count == blobs.count)
        #expect(missing.allSatisfy { $0.code == .notFound })
    }

    @Test("responses far past the connection's flow-control window arrive whole")
    func largeResponses() async throws {
        let server = try await Casd()
        defer { server.stop() }
        let connection = try await server.connect()
        defer { connection.close() }
        // 6 blobs of 3.5 MiB, each read 3 times: 63 MiB, about 4 times the window.
        var generator = SeededGenerator(seed: 7)
        let chunk = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let blobs = (0..<6).map { index in
            var blob = Array([[UInt8]](repeating: chunk, count: (7 << 19) / chunk.count).joined())
            blob[index] ^= 0xFF
            return blob
        }
        for blob in blobs {
            #expect(try await Self.storeBlobs([blob], on: connection) == [0])
        }
        // Three rounds of the six at once: the window is granted again across rounds as within
        // them, and the test process (which the fuzz tests' peak-RSS bound shares) holds 6 × 3.5
        // MiB in flight, not 18.
        var matched = 0
        for _ in 0..<3 {
            matched += try await withThrowingTaskGroup(of: Bool.self) { group in
                for blob in blobs {
                    group.addTask { try await Self.readBlob(blob, on: connection) == blob }
                }
                var matched = 0
                for try await same in group where same { matched += 1 }
                return matched
            }
        }
        #expect(matched == 18)
    }

    @Test("a method the server doesn't have fails with its status and message (a trailers-only response)")
    func unknownMethod() async throws {
        let server = try await Casd()
        defer { server.stop() }
        let connection = try await server.connect()
        defer { connection.close() }
        let method = MethodDescriptor(fullyQualifiedService: "kiln.test.Nothing", method: "Here")
        do {
            _ = try await connection.call(
                method,
                Build_Bazel_Remote_Execution_V2_GetActionResultRequest(),
                timeout: .seconds(60),
                as: Build_Bazel_Remote_Execution_V2_ActionResult.self
            )
            Issue.record("the call succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unimplemented, "\(error)")
        }
    }

    /// Calls GetActionResult on a connection to `listener` and returns how it failed (`nil`: it
    /// didn't).
    func failure(from listener: Listener, timeout: Duration) async throws -> RPCError? {
        do {
            let connection = try await UnaryConnection.connect(
                host: "127.0.0.1",
                port: listener.port,
                authority: "127.0.0.1:\(listener.port)",
                timeout: .seconds(30)
            )
            defer { connection.close() }
            _ = try await connection.call(
                Build_Bazel_Remote_Execution_V2_ActionCache.Method.GetActionResult.descriptor,
                Build_Bazel_Remote_Execution_V2_GetActionResultRequest(),
                timeout: timeout,
                as: Build_Bazel_Remote_Execution_V2_ActionResult.self
            )
            return nil
        } catch let error as RPCError {
            return error
        }
    }

    @Test("a server that takes the connection and never answers: the call fails at its deadline")
    func silentServer() async throws {
        let listener = try Listener { connection in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(connection, &buffer, buffer.count) > 0 {}
            close(connection)
        }
        defer { listener.close() }
        // Without the deadline the call would wait forever.
        let error = try await failure(from: listener, timeout: .milliseconds(300))
        #expect(error?.code == .deadlineExceeded, "\(String(describing: error))")
    }

    @Test("a server that closes the connection, or answers what isn't HTTP/2: the call fails, unavailable")
    func brokenServers() async throws {
        let closing = try Listener { connection in
            Self.awaitRequest(connection)
            close(connection)
        }
        defer { closing.close() }
        let garbage = try Listener { connection in
            Self.awaitRequest(connection)
            let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
            _ = write(connection, answer, answer.count)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(connection, &buffer, buffer.count) > 0 {}
            close(connection)
        }
        defer { garbage.close() }
        for listener in [closing, garbage] {
            // Had the failure gone unnoticed, the call would end at its deadline instead.
            let error = try await failure(from: listener, timeout: .seconds(120))
            #expect(error?.code == .unavailable, "\(String(describing: error))")
        }
    }

    @Test("after the server restarts, the next call connects again: the failed ones were unavailable")
    func reconnectsAfterARestart() async throws {
        let first = try await Casd()
        let connection = try await first.connect()
        defer { connection.close() }
        let blob = Array("kept across a restart".utf8)
        #expect(try await Self.storeBlobs([blob], on: connection) == [0])
        let port = first.port
        first.stop()
        do {
            _ = try await Self.readBlob(blob, on: connection)
            Issue.record("a call to a stopped server succeeded")
        } catch let error as RPCError {
            #expect(error.code == .unavailable, "\(error)")
        }
        let second = try await Casd(port: port)
        defer { second.stop() }
        // A new server, a new storage: the blob is stored again, then read back.
        #expect(try await Self.storeBlobs([blob], on: connection) == [0])
        #expect(try await Self.readBlob(blob, on: connection) == blob)
    }

    @Test("a refused connection fails to connect with unavailable, saying so in a few words")
    func refusedConnection() async throws {
        // A port just listened on and closed: nothing listens there now.
        let listener = try Listener { close($0) }
        let port = listener.port
        listener.close()
        do {
            let connection = try await UnaryConnection.connect(
                host: "127.0.0.1",
                port: port,
                authority: "127.0.0.1:\(port)",
                timeout: .seconds(30)
            )
            connection.close()
            Issue.record("connected to a closed port")
        } catch let error as RPCError {
            #expect(error.code == .unavailable)
            #expect(error.message == "Connection refused", "\(error)")
        }
    }

    @Test("the deadline goes to the server as grpc-timeout: at most 8 digits and a unit")
    func grpcTimeoutHeader() {
        #expect(UnaryCallHandler.grpcTimeout(.seconds(5)) == "5000m")
        #expect(UnaryCallHandler.grpcTimeout(.milliseconds(1)) == "1m")
        #expect(UnaryCallHandler.grpcTimeout(.microseconds(10)) == "1m")
        #expect(UnaryCallHandler.grpcTimeout(.seconds(200_000)) == "200000S")
        #expect(UnaryCallHandler.grpcTimeout(.seconds(Int64.max / 2)) == "99999999S")
    }
}
