import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real HTTP/1.1 server on 127.0.0.1 (a port the kernel picks), for testing the http plugin
/// against the network rather than a mock. Each connection is served on its own thread: the
/// request is read whole (headers, and a body of `Content-Length` bytes), the handler decides
/// the response, and the connection is closed after it.
///
/// Threading: `requests` and `stop()` from any thread; the handler runs on connection threads.
public final class TestHTTPServer: Sendable {
    /// One request as received.
    public struct Request: Sendable {
        /// The request method, as sent (`GET`, `HEAD`…).
        public var method: String
        /// The request target, as sent.
        public var path: String
        /// Header fields, names lowercased.
        public var headers: [String: String]
        /// The request body.
        public var body: [UInt8]
    }

    /// What to answer.
    public struct Response: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// The response body.
        public var body: [UInt8]
        /// Seconds to wait before answering (for timeouts and cancellation in flight).
        public var delay: Double

        /// An answer with `status`, the UTF-8 of `body`, sent after `delay` seconds.
        public init(status: Int, body: String = "", delay: Double = 0) {
            self.status = status
            self.body = Array(body.utf8)
            self.delay = delay
        }
    }

    /// The port it listens on.
    public let port: UInt16
    private let listener: Int32
    private let received = Mutex<[Request]>([])
    private let stopped = Atomic<Bool>(false)
    private let handler: @Sendable (Request) -> Response

    /// Starts listening.
    public init(handler: @escaping @Sendable (Request) -> Response) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw ServerError("bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = descriptor
        self.handler = handler
        spawnThread { [self] in acceptLoop() }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Every request received so far.
    public var requests: [Request] { received.withLock { $0 } }

    /// Stops accepting connections; its port then refuses them.
    public func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// A port nothing listens on (bound, then released): connecting to it is refused.
    public static func closedPort() throws -> UInt16 {
        let server = try TestHTTPServer { _ in Response(status: 500) }
        server.stop()
        return server.port
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .sequentiallyConsistent) {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            spawnThread { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return }
            data += buffer[0..<count]
            headerEnd = Self.find([13, 10, 13, 10], in: data)
        }
        guard let headerEnd else { return }
        let head = String(decoding: data[0..<headerEnd], as: UTF8.self).split(separator: "\r\n").map(String.init)
        let requestLine = head.first?.split(separator: " ").map(String.init) ?? []
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        var body = Array(data[(headerEnd + 4)...])
        let expected = Int(headers["content-length"] ?? "0") ?? 0
        if headers["expect"]?.lowercased() == "100-continue" {
            let reply = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
            _ = send(connection, reply, reply.count, Int32(MSG_NOSIGNAL))
        }
        while body.count < expected {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { break }
            body += buffer[0..<count]
        }
        let request = Request(
            method: requestLine.first ?? "",
            path: requestLine.count > 1 ? requestLine[1] : "",
            headers: headers,
            body: body
        )
        received.withLock { $0.append(request) }
        let response = handler(request)
        if response.delay > 0 { usleep(UInt32(response.delay * 1_000_000)) }
        var reply = Array(
            "HTTP/1.1 \(response.status) \(response.status < 300 ? "OK" : "Error")\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n\r\n"
                .utf8
        )
        reply += response.body
        var offset = 0
        while offset < reply.count {
            // MSG_NOSIGNAL: a client that gave up (a timeout, Ctrl-C) must not SIGPIPE the tests.
            let written = reply[offset...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return }
            offset += written
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where Array(haystack[index..<index + needle.count]) == needle {
            return index
        }
        return nil
    }

    struct ServerError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
