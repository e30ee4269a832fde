import Foundation
import GRPCCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import SwiftProtobuf

/// gRPC's unary calls over one HTTP/2 connection, made the lean way: one channel handler owns every
/// stream (no channel, pipeline, task or async sequence per call), and the calls asked for
/// meanwhile go out together, with one flush.
///
/// A warm cache is a thousand `GetActionResult` calls, and grpc-swift-2's client spent about 940K
/// instructions on each (its structured tasks, per-stream channels and async streams, and the
/// timer task behind the deadline): most of a hit's cost. The streaming calls (ByteStream,
/// `Execute`) stay with grpc-swift-2; every unary call of the cache comes here.
///
/// What it speaks: HTTP/2 over plain TCP (`grpc://`), requests of one message each, without
/// compression; a response of one uncompressed message, with its `grpc-status` in the trailers
/// (or a trailers-only response). Its deadline goes to the server as `grpc-timeout`, and the call
/// fails with `deadlineExceeded` here when it passes. A call the server resets, a connection that
/// closes or a server that goes away fails the calls it had, each with an ``RPCError``: the cache
/// then counts as down (``RemoteCacheSession``). The next call connects again: a long-lived
/// `kiln worker` outlives a server's restart.
///
/// Threading: every member is safe from any thread. A connection's state lives on its event loop
/// (``UnaryCallHandler``); the current connection, and the calls waiting to be written on it, are
/// guarded by locks of their own.
final class UnaryConnection: Sendable {
    /// A call waiting to be written.
    struct Call: Sendable {
        var path: String
        /// The request, framed (the 5-byte gRPC prefix and the message).
        var message: ByteBuffer
        var deadline: NIODeadline
        var timeout: Duration
        var completion: @Sendable (Result<ByteBuffer, RPCError>) -> Void
    }

    private let host: String
    private let port: Int
    private let authority: String
    private let connectTimeout: Duration
    /// The connection calls go on, until it closes; `closed` once ``close()`` was called.
    private let current = NIOLockedValueBox<(link: Link?, closed: Bool)>((nil, false))

    private init(host: String, port: Int, authority: String, connectTimeout: Duration) {
        self.host = host
        self.port = port
        self.authority = authority
        self.connectTimeout = connectTimeout
    }

    /// Connects to `host`:`port` (`authority` is what requests name) within `timeout`.
    ///
    /// - Throws: ``RPCError`` `unavailable`, saying why in a few words: the name doesn't resolve,
    ///   the connection was refused, it timed out.
    static func connect(host: String, port: Int, authority: String, timeout: Duration) async throws
        -> UnaryConnection
    {
        let connection = UnaryConnection(host: host, port: port, authority: authority, connectTimeout: timeout)
        _ = try await connection.link()
        return connection
    }

    /// The open connection, connecting when there is none (the first call, or the last one closed).
    private func link() async throws -> Link {
        let (known, closed) = current.withLockedValue { ($0.link, $0.closed) }
        if closed { throw RPCError(code: .unavailable, message: "the connection was closed") }
        if let known, known.channel.isActive { return known }
        let fresh = try await Self.open(host: host, port: port, authority: authority, timeout: connectTimeout)
        // Another call may have connected meanwhile: the first connection made is kept.
        let kept = current.withLockedValue { current -> Link? in
            if current.closed { return nil }
            if let other = current.link, other.channel.isActive { return other }
            current.link = fresh
            return fresh
        }
        if kept !== fresh { fresh.close() }
        guard let kept else { throw RPCError(code: .unavailable, message: "the connection was closed") }
        return kept
    }

    /// A connection to `host`:`port`.
    private static func open(host: String, port: Int, authority: String, timeout: Duration) async throws -> Link {
        do {
            return try await Link.open(host: host, port: port, authority: authority, timeout: timeout)
        } catch let error as NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                throw RPCError(code: .unavailable, message: "can't resolve \(host)")
            }
            let reasons = error.connectionErrors.map { failure in
                (failure.error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(failure.error)"
            }
            throw RPCError(code: .unavailable, message: Set(reasons).sorted().joined(separator: "; "))
        } catch ChannelError.connectTimeout(_) {
            throw RPCError(code: .unavailable, message: "no connection within \(timeout)")
        }
    }

    /// Calls `method` with `request` and returns its response.
    ///
    /// - Throws: ``RPCError``: the server's status when it isn't OK, `deadlineExceeded` after
    ///   `timeout`, `unavailable` when the connection failed or can't be made, `internalError` for
    ///   a response that isn't one message of `Response`.
    func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor,
        _ request: Request,
        timeout: Duration,
        as response: Response.Type = Response.self
    ) async throws -> Response {
        try await link().call(method, request, timeout: timeout, as: response)
    }

    /// Closes the connection; calls under way fail with `unavailable`, and so does every call after.
    func close() {
        current.withLockedValue { current -> Link? in
            current.closed = true
            return current.link
        }?.close()
    }
}

/// One HTTP/2 connection of a ``UnaryConnection``: its channel, its handler, and the calls waiting
/// to be written on it.
///
/// Threading: every member is safe from any thread; `pending` is guarded by its lock.
private final class Link: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<UnaryCallHandler>
    private let pending = NIOLockedValueBox<(calls: [UnaryConnection.Call], scheduled: Bool)>(([], false))

    private init(channel: any Channel, handler: NIOLoopBound<UnaryCallHandler>) {
        self.channel = channel
        self.handler = handler
    }

    static func open(host: String, port: Int, authority: String, timeout: Duration) async throws -> Link {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let channel = try await ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.nanoseconds(UnaryCallHandler.nanoseconds(timeout)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        // The headers it sends are made right here, and of those it receives it
                        // reads three (`:status`, `grpc-status`, `grpc-message`): validating every
                        // block cost about 10% of the connection's work.
                        NIOHTTP2Handler(
                            mode: .client,
                            initialSettings: UnaryCallHandler.settings,
                            headerBlockValidation: .disabled,
                            contentLengthValidation: .disabled
                        ),
                        UnaryCallHandler(authority: authority)
                    )
                }
            }
            .connect(host: host, port: port)
            .get()
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(
                try channel.pipeline.syncOperations.handler(type: UnaryCallHandler.self),
                eventLoop: channel.eventLoop
            )
        }.get()
        return Link(channel: channel, handler: handler)
    }

    /// ``UnaryConnection/call(_:_:timeout:as:)`` on this connection.
    func call<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message>(
        _ method: MethodDescriptor,
        _ request: Request,
        timeout: Duration,
        as response: Response.Type = Response.self
    ) async throws -> Response {
        let bytes: [UInt8] = try request.serializedBytes()
        var message = channel.allocator.buffer(capacity: bytes.count + 5)
        message.writeInteger(UInt8(0))
        message.writeInteger(UInt32(bytes.count))
        message.writeBytes(bytes)
        let path = "/" + method.fullyQualifiedMethod
        let deadline = NIODeadline.now() + .nanoseconds(UnaryCallHandler.nanoseconds(timeout))
        var body = try await withCheckedThrowingContinuation { continuation in
            submit(
                UnaryConnection.Call(path: path, message: message, deadline: deadline, timeout: timeout) {
                    continuation.resume(with: $0)
                }
            )
        }
        // One message, uncompressed: the 5-byte prefix, then exactly its length.
        guard let compressed = body.readInteger(as: UInt8.self), let length = body.readInteger(as: UInt32.self),
            compressed == 0, body.readableBytes == Int(length)
        else {
            throw RPCError(code: .internalError, message: "the response to \(method) isn't one uncompressed message")
        }
        do {
            return try Response(serializedBytes: body.readBytes(length: body.readableBytes) ?? [])
        } catch {
            throw RPCError(code: .internalError, message: "the response to \(method) doesn't decode: \(error)")
        }
    }

    /// Queues `call`; the first call queued since the loop last wrote asks it to write them all.
    private func submit(_ call: UnaryConnection.Call) {
        let schedule = pending.withLockedValue { pending -> Bool in
            pending.calls.append(call)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        channel.eventLoop.execute { [self] in
            let calls = pending.withLockedValue { pending -> [UnaryConnection.Call] in
                pending.scheduled = false
                defer { pending.calls = [] }
                return pending.calls
            }
            handler.value.start(calls)
        }
    }

    /// Closes the connection; calls under way fail with `unavailable`.
    func close() {
        channel.close(promise: nil)
    }
}

/// The channel handler of a ``UnaryConnection``: it opens a stream for each call, collects each
/// stream's response and trailers, grants the connection's flow-control window as data arrives,
/// and fails calls whose deadline passes, that are reset, or that the connection takes with it.
///
/// Threading: its event loop only.
final class UnaryCallHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What each stream gets to send before a `WINDOW_UPDATE`: the most (2³¹ − 1), so no stream
    /// waits on one; the connection's window below bounds what is buffered.
    static let settings = [
        HTTP2Setting(parameter: .initialWindowSize, value: (1 << 31) - 1),
        HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
        HTTP2Setting(parameter: .enablePush, value: 0),
    ]
    /// The connection's window: granted again once half of it has been received.
    static let connectionWindow = 16 << 20
    /// The largest response taken (as grpc-swift-2's client is set up for streaming calls).
    static let responseLimit = 64 << 20

    private struct Stream {
        var completion: @Sendable (Result<ByteBuffer, RPCError>) -> Void
        var timer: Scheduled<Void>?
        var sawHeaders = false
        var body: ByteBuffer?
    }

    private let authority: String
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    /// Data received since the connection's window was last granted again.
    private var ungranted = 0
    /// Why no call can be made any more (the connection closed, the server is going away).
    private var gone: RPCError?

    init(authority: String) {
        self.authority = authority
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelActive(context: ChannelHandlerContext) {
        // The connection's window starts at 64 KiB (HTTP/2's default): widen it at once.
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow)
        )
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        context.fireChannelActive()
    }

    /// Opens a stream for each of `calls`, writes them, and flushes once.
    func start(_ calls: [UnaryConnection.Call]) {
        guard let context, gone == nil else {
            let error = gone ?? RPCError(code: .unavailable, message: "the connection isn't open")
            for call in calls { call.completion(.failure(error)) }
            return
        }
        for call in calls {
            // Stream ids are odd and never reused: after 2³⁰ calls the connection has none left.
            guard nextStreamID < Int32.max - 1 else {
                gone = RPCError(code: .unavailable, message: "the connection has used every HTTP/2 stream id")
                call.completion(.failure(gone!))
                continue
            }
            let id = HTTP2StreamID(nextStreamID)
            nextStreamID += 2
            var headers = HPACKHeaders()
            headers.reserveCapacity(7)
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "http")
            headers.add(name: ":path", value: call.path)
            headers.add(name: ":authority", value: authority)
            headers.add(name: "content-type", value: "application/grpc")
            headers.add(name: "te", value: "trailers")
            headers.add(name: "grpc-timeout", value: Self.grpcTimeout(call.timeout))
            let timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: call.deadline) { [self] in
                reset(id, failing: RPCError(code: .deadlineExceeded, message: "no answer within \(call.timeout)"))
            }
            streams[id] = Stream(completion: call.completion, timer: timer)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))),
                promise: nil
            )
            let data = HTTP2Frame.FramePayload.Data(data: .byteBuffer(call.message), endStream: true)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(data))), promise: nil)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            received(headers, on: frame.streamID)
        case .data(let data):
            ungranted += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            if ungranted >= Self.connectionWindow / 2 {
                let grant = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: ungranted))
                context.writeAndFlush(wrapOutboundOut(grant), promise: nil)
                ungranted = 0
            }
            guard var stream = streams[frame.streamID], case .byteBuffer(var bytes) = data.data else { return }
            if (stream.body?.readableBytes ?? 0) + bytes.readableBytes > Self.responseLimit {
                let limit = RPCError(
                    code: .resourceExhausted,
                    message: "the response is over \(Self.responseLimit) bytes"
                )
                return reset(frame.streamID, failing: limit)
            }
            if stream.body == nil {
                stream.body = bytes
            } else {
                stream.body!.writeBuffer(&bytes)
            }
            streams[frame.streamID] = stream
            if data.endStream {
                finish(frame.streamID, .failure(RPCError(code: .internalError, message: "the response has no status")))
            }
        case .rstStream(let code):
            finish(
                frame.streamID,
                .failure(RPCError(code: .unavailable, message: "the server reset the stream (\(code))"))
            )
        case .goAway(let last, let code, _):
            let error = RPCError(code: .unavailable, message: "the server is going away (\(code))")
            gone = error
            for id in streams.keys where id > last { finish(id, .failure(error)) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            finish(
                streamError.streamID,
                .failure(RPCError(code: .internalError, message: "HTTP/2: \(streamError.baseError)"))
            )
            return
        }
        failAll(RPCError(code: .unavailable, message: "the connection failed: \(error)"))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(RPCError(code: .unavailable, message: "the connection closed"))
        context.fireChannelInactive()
    }

    private func failAll(_ error: RPCError) {
        if gone == nil { gone = error }
        for id in Array(streams.keys) { finish(id, .failure(error)) }
    }

    /// The response's headers, or its trailers: the call ends with the trailers' status.
    private func received(_ frame: HTTP2Frame.FramePayload.Headers, on id: HTTP2StreamID) {
        guard var stream = streams[id] else { return }
        let headers = frame.headers
        if !stream.sawHeaders {
            stream.sawHeaders = true
            streams[id] = stream
            guard headers.first(name: ":status") == "200" else {
                let status = headers.first(name: ":status") ?? "none"
                return reset(id, failing: RPCError(code: .unavailable, message: "the server answered HTTP \(status)"))
            }
            // A trailers-only response: the status, and no message.
            guard frame.endStream else { return }
        } else if !frame.endStream {
            return reset(id, failing: RPCError(code: .internalError, message: "the response's trailers don't end it"))
        }
        guard let text = headers.first(name: "grpc-status"), let raw = Int(text) else {
            return finish(id, .failure(RPCError(code: .internalError, message: "the response has no grpc-status")))
        }
        if raw == 0 {
            finish(id, .success(stream.body ?? ByteBuffer()))
        } else {
            let code = Status.Code(rawValue: raw).flatMap(RPCError.Code.init) ?? .unknown
            let message = headers.first(name: "grpc-message").map { $0.removingPercentEncoding ?? $0 } ?? ""
            finish(id, .failure(RPCError(code: code, message: message)))
        }
    }

    /// Ends the call of stream `id` with `result`.
    private func finish(_ id: HTTP2StreamID, _ result: Result<ByteBuffer, RPCError>) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.timer?.cancel()
        stream.completion(result)
    }

    /// Fails the call of stream `id` and tells the server to stop it.
    private func reset(_ id: HTTP2StreamID, failing error: RPCError) {
        guard streams[id] != nil, let context else { return }
        finish(id, .failure(error))
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))), promise: nil)
    }

    /// `timeout` as gRPC's `grpc-timeout` header: at most 8 digits and a unit.
    static func grpcTimeout(_ timeout: Duration) -> String {
        let milliseconds = max(1, nanoseconds(timeout) / 1_000_000)
        return milliseconds < 100_000_000 ? "\(milliseconds)m" : "\(min(milliseconds / 1000, 99_999_999))S"
    }

    /// `duration` in nanoseconds (negative ones as 0).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? .max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

@available(*, unavailable)
extension UnaryCallHandler: Sendable {}
