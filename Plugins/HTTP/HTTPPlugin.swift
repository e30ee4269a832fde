import CKilnCurl
import KilnJobs
import KilnPluginAPI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `http` task kind: downloads a URL to a file, or uploads a file to a URL, as an
/// **asynchronous** job — the transfer runs on one shared libcurl event loop, so a job waiting on
/// the network holds no worker thread. By default a job holds the `net:HOST` queue of its URL's
/// host, so the downloads from one server are limited by that queue's width.
///
/// ```yaml
/// fetch:
///   plugin: http
///   generates: [vendor/data.json]
///   with:
///     url: https://example.com/data.json   # required
///     method: GET                          # GET (default), PUT, POST or DELETE
///     output: vendor/data.json             # GET: where the body goes (default: the first of generates)
///     input: dist/app.tar.gz               # PUT/POST: the file to send (default: the first of sources)
///     headers: {Authorization: 'Bearer {{.TOKEN}}'}
///     timeout: 60                          # seconds for the whole transfer (default 60)
///     connect-timeout: 10                  # seconds to connect (default 10)
///     retries: 3                           # more attempts after a failure that may pass (default 3)
///     backoff: 0.5                         # seconds before the first retry, doubled each time (default 0.5)
/// ```
///
/// A response outside 200–299 fails the job (`GET …: HTTP 404 Not Found`); 5xx responses,
/// refused or failed connections and timeouts are retried with exponential backoff first. A
/// download is written to a temporary file and renamed into place only when it succeeded.
///
/// Threading: a value type; safe from any thread.
struct HTTPKind: TaskKind {
    struct Configuration: Sendable {
        var url: String
        var method: String
        var output: String?
        var input: String?
        var headers: [(String, String)]
        var timeout: Double
        var connectTimeout: Double
        var retries: Int
        var backoff: Double
    }

    let name = "http"
    let version = "1"

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        let keys: Set<String> = [
            "url", "method", "output", "input", "headers", "timeout", "connect-timeout", "retries", "backoff",
        ]
        try value.rejectUnknownKeys(keys, in: "the http plugin's 'with'")
        guard let url = value["url"] else {
            throw TaskConfigurationError("the http plugin needs 'url: …' in 'with'", at: value.location)
        }
        let text = try url.requireString("'url'")
        let lowered = text.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || text.hasPrefix("{{") else {
            throw TaskConfigurationError("'url' must start with http:// or https://, not '\(text)'", at: url.location)
        }
        let method = try value["method"]?.requireString("'method'").uppercased() ?? "GET"
        guard ["GET", "PUT", "POST", "DELETE"].contains(method) else {
            throw TaskConfigurationError(
                "'method' must be GET, PUT, POST or DELETE, not '\(method)'",
                at: value["method"]?.location
            )
        }
        var headers: [(String, String)] = []
        if let node = value["headers"] {
            guard let map = node.map else {
                throw TaskConfigurationError("'headers' must be a map of names to values", at: node.location)
            }
            for (key, _, entry) in map { headers.append((key, try entry.requireString("header '\(key)'"))) }
        }
        func seconds(_ key: String, _ fallback: Double) throws(TaskConfigurationError) -> Double {
            guard let node = value[key] else { return fallback }
            let number = try node.requireDouble("'\(key)'")
            guard number > 0 else {
                throw TaskConfigurationError("'\(key)' must be more than 0 seconds", at: node.location)
            }
            return number
        }
        var retries = 3
        if let node = value["retries"] {
            retries = try node.requireInteger("'retries'")
            guard (0...20).contains(retries) else {
                throw TaskConfigurationError("'retries' must be 0 to 20", at: node.location)
            }
        }
        return Configuration(
            url: text,
            method: method,
            output: try value["output"]?.requireString("'output'"),
            input: try value["input"]?.requireString("'input'"),
            headers: headers,
            timeout: try seconds("timeout", 60),
            connectTimeout: try seconds("connect-timeout", 10),
            retries: retries,
            backoff: try seconds("backoff", 0.5)
        )
    }

    func summary(of configuration: Configuration, request: JobRequest) -> String {
        let url = request.display(configuration.url)
        switch configuration.method {
        case "GET": return "GET \(url) → \(download(configuration, request) ?? "(discarded)")"
        case "PUT", "POST": return "\(configuration.method) \(upload(configuration, request) ?? "(empty)") → \(url)"
        default: return "\(configuration.method) \(url)"
        }
    }

    func resources(of configuration: Configuration, request: JobRequest) -> [String] {
        ["net:" + Self.host(of: request.display(configuration.url))]
    }

    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        let absolute = { (path: String) in path.hasPrefix("/") ? path : request.directory + "/" + path }
        // Rendered for real here: a template that fails fails the job, naming why.
        for template in [configuration.url, configuration.output, configuration.input].compactMap({ $0 })
            + configuration.headers.map(\.1)
        {
            _ = try request.render(template)
        }
        return HTTPJob(
            url: request.display(configuration.url),
            method: configuration.method,
            output: download(configuration, request).map(absolute),
            input: upload(configuration, request).map(absolute),
            headers: configuration.headers.map { ($0.0, request.display($0.1)) },
            configuration: configuration,
            context: context
        )
    }

    private func download(_ configuration: Configuration, _ request: JobRequest) -> String? {
        guard configuration.method == "GET" else { return nil }
        return configuration.output.map(request.display) ?? request.outputs.first
    }

    private func upload(_ configuration: Configuration, _ request: JobRequest) -> String? {
        guard configuration.method == "PUT" || configuration.method == "POST" else { return nil }
        return configuration.input.map(request.display) ?? request.inputs.first
    }

    /// The host of a URL (`example.com:8080` keeps its port), for its queue's name.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            rest = rest[rest.index(colon, offsetBy: 3)...]
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last.map(String.init) ?? ""
        return host.isEmpty ? "unknown" : host.lowercased()
    }
}

/// One transfer, with retries. Asynchronous: `start()` hands it to the event loop and returns.
final class HTTPJob: Job, @unchecked Sendable {
    let url: String
    let method: String
    let output: String?
    let input: String?
    let headers: [(String, String)]
    let configuration: HTTPKind.Configuration
    let context: TaskContext

    init(
        url: String,
        method: String,
        output: String?,
        input: String?,
        headers: [(String, String)],
        configuration: HTTPKind.Configuration,
        context: TaskContext
    ) {
        self.url = url
        self.method = method
        self.output = output
        self.input = input
        self.headers = headers
        self.configuration = configuration
        self.context = context
        super.init()
    }

    /// `true`: the job finishes when its transfer does.
    override var isAsynchronous: Bool { true }

    /// Whether the transfer was handed to the loop (only then has `cancel()` anything to stop).
    private let submitted = Atomic<Bool>(false)

    override func start() throws(JobError) {
        guard try beginExecution() else { return }
        submitted.store(true, ordering: .sequentiallyConsistent)
        CurlLoop.shared.submit(Transfer(job: self))
    }

    /// Stops the transfer in flight (or the wait before a retry); the job then finishes.
    override func cancel() {
        super.cancel()
        if submitted.load(ordering: .sequentiallyConsistent) { CurlLoop.shared.cancel(self) }
    }
}

/// One attempt's state: the easy handle and the files it reads or writes.
///
/// Threading: owned by the event loop's thread once submitted.
final class Transfer: @unchecked Sendable {
    let job: HTTPJob
    var attempt = 0
    var handle: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The download's file (`-1`: the body is discarded).
    var descriptor: Int32 = -1
    /// The upload's file.
    var uploadDescriptor: Int32 = -1
    var temporary: String?
    /// libcurl writes its message for a failure here; stable for the transfer's life.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    var received = 0

    init(job: HTTPJob) { self.job = job }

    deinit { errorBuffer.deallocate() }
}

/// The process's libcurl event loop: one thread drives every transfer with a multi handle.
///
/// Threading: ``submit(_:)`` and ``cancel(_:)`` from any thread (they queue a request and wake
/// the loop); everything else runs on the loop's thread.
final class CurlLoop: @unchecked Sendable {
    static let shared = CurlLoop()

    private struct Requests {
        var submitted: [Transfer] = []
        var cancelled: [ObjectIdentifier] = []
    }
    private let requests = Mutex(Requests())
    private let multi: UnsafeMutableRawPointer
    /// Transfers running, and those waiting for a retry (with the time they may start).
    private var running: [ObjectIdentifier: Transfer] = [:]
    private var waiting: [(due: UInt64, transfer: Transfer)] = []

    /// Why libcurl can't be used (it isn't installed), or `nil`.
    let unavailable: String?

    private init() {
        var message = [CChar](repeating: 0, count: 512)
        if kiln_curl_load(&message, message.count) != 0 {
            unavailable = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            multi = UnsafeMutableRawPointer(bitPattern: 1)!  // never used
            return
        }
        unavailable = nil
        kiln_curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        multi = kiln_curl_multi_init()!
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &thread,
            nil,
            { argument in
                Unmanaged<CurlLoop>.fromOpaque(argument!).takeRetainedValue().loop()
                return nil
            },
            box
        )
        pthread_detach(thread)
    }

    func submit(_ transfer: Transfer) {
        if let unavailable {
            try? transfer.job.finish(error: TaskFailure("\(transfer.job.method) \(transfer.job.url): \(unavailable)"))
            return
        }
        requests.withLock { $0.submitted.append(transfer) }
        kiln_curl_multi_wakeup(multi)
    }

    func cancel(_ job: HTTPJob) {
        guard unavailable == nil else { return }
        requests.withLock { $0.cancelled.append(ObjectIdentifier(job)) }
        kiln_curl_multi_wakeup(multi)
    }

    private func loop() {
        while true {
            let (submitted, cancelled) = requests.withLock { requests in
                defer { requests = Requests() }
                return (requests.submitted, requests.cancelled)
            }
            for transfer in submitted { begin(transfer) }
            for id in cancelled { stop(id) }
            let now = Self.now()
            let due = waiting.filter { $0.due <= now }
            waiting.removeAll { $0.due <= now }
            for entry in due { begin(entry.transfer) }

            var active: Int32 = 0
            kiln_curl_multi_perform(multi, &active)
            var result = CURLE_OK
            while let easy = kiln_curl_next_done(multi, &result) {
                guard let pointer = kiln_curl_private(easy) else { continue }
                let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
                finished(transfer, result: result)
            }
            // Sleep until there is network activity, a wake-up, or the next retry is due.
            var timeout: Int32 = 1000
            if let next = waiting.map(\.due).min() {
                timeout = Int32(clamping: max(0, (Int64(next) - Int64(Self.now())) / 1_000_000))
            }
            kiln_curl_multi_poll(multi, timeout)
        }
    }

    /// Starts an attempt (or finishes a job cancelled before it got here).
    private func begin(_ transfer: Transfer) {
        let job = transfer.job
        if job.isCancelled {
            try? job.finish()
            return
        }
        transfer.attempt += 1
        guard let easy = kiln_curl_easy_init() else {
            try? job.finish(error: TaskFailure("\(job.method) \(job.url): libcurl could not make a handle"))
            return
        }
        transfer.handle = easy
        transfer.received = 0
        kiln_curl_set_string(easy, CURLOPT_URL, job.url)
        kiln_curl_set_long(easy, CURLOPT_NOSIGNAL, 1)
        kiln_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        kiln_curl_set_long(easy, CURLOPT_TIMEOUT_MS, Int(job.configuration.timeout * 1000))
        kiln_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(job.configuration.connectTimeout * 1000))
        kiln_curl_set_string(easy, CURLOPT_USERAGENT, "kiln-http/1")
        transfer.errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        kiln_curl_set_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        kiln_curl_set_pointer(easy, CURLOPT_PRIVATE, Unmanaged.passUnretained(transfer).toOpaque())
        kiln_curl_set_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(transfer).toOpaque())
        kiln_curl_set_write_function(easy) { data, size, count, user in
            let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
            let length = size * count
            transfer.received += length
            guard transfer.descriptor >= 0 else { return length }  // no output: discard the body
            var offset = 0
            while offset < length {
                let written = write(transfer.descriptor, data + offset, length - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return 0 }  // makes libcurl fail the transfer with a write error
                offset += written
            }
            return length
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in job.headers { list = kiln_curl_slist_append(list, "\(name): \(value)") }
        // No "Expect: 100-continue": many servers never answer it, and libcurl would wait a second.
        if job.method == "PUT" || job.method == "POST" { list = kiln_curl_slist_append(list, "Expect:") }
        transfer.headerList = list
        if let list { kiln_curl_set_pointer(easy, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)) }

        switch job.method {
        case "GET":
            if let output = job.output {
                let temporary = output + ".\(getpid()).download"
                try? TaskFiles.createParentDirectories(of: output)
                transfer.descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                guard transfer.descriptor >= 0 else {
                    fail(transfer, TaskFailure("GET \(job.url): can't write \(temporary): \(TaskFiles.lastError)"))
                    return
                }
                transfer.temporary = temporary
            }
        case "PUT", "POST":
            if let input = job.input {
                transfer.uploadDescriptor = open(input, O_RDONLY | O_CLOEXEC)
                guard transfer.uploadDescriptor >= 0 else {
                    fail(transfer, TaskFailure("\(job.method) \(job.url): can't read \(input): \(TaskFiles.lastError)"))
                    return
                }
                var info = stat()
                fstat(transfer.uploadDescriptor, &info)
                kiln_curl_set_long(easy, job.method == "PUT" ? CURLOPT_UPLOAD : CURLOPT_POST, 1)
                kiln_curl_set_offset(
                    easy,
                    job.method == "PUT" ? CURLOPT_INFILESIZE_LARGE : CURLOPT_POSTFIELDSIZE_LARGE,
                    curl_off_t(info.st_size)
                )
                kiln_curl_set_pointer(easy, CURLOPT_READDATA, Unmanaged.passUnretained(transfer).toOpaque())
                kiln_curl_set_read_function(easy) { buffer, size, count, user in
                    let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
                    while true {
                        let count = read(transfer.uploadDescriptor, buffer, size * count)
                        if count < 0, errno == EINTR { continue }
                        return count < 0 ? Int(CURL_READFUNC_ABORT) : count
                    }
                }
            } else {
                kiln_curl_set_long(easy, job.method == "PUT" ? CURLOPT_UPLOAD : CURLOPT_POST, 1)
                kiln_curl_set_offset(
                    easy,
                    job.method == "PUT" ? CURLOPT_INFILESIZE_LARGE : CURLOPT_POSTFIELDSIZE_LARGE,
                    0
                )
            }
        default:
            kiln_curl_set_string(easy, CURLOPT_CUSTOMREQUEST, job.method)
        }
        running[ObjectIdentifier(job)] = transfer
        kiln_curl_multi_add_handle(multi, easy)
    }

    /// An attempt ended: finish the job, or schedule another attempt.
    private func finished(_ transfer: Transfer, result: CURLcode) {
        let job = transfer.job
        let status = transfer.handle.map { kiln_curl_response_code($0) } ?? 0
        let message = String(cString: transfer.errorBuffer)
        let detail = message.isEmpty ? String(cString: kiln_curl_easy_strerror(result)) : message
        release(transfer)
        running[ObjectIdentifier(job)] = nil
        if job.isCancelled {
            discard(transfer)
            try? job.finish()
            return
        }
        var failure: TaskFailure?
        var mayRetry = false
        if result != CURLE_OK {
            let what: String
            switch result {
            case CURLE_COULDNT_CONNECT: what = "connection refused (\(detail))"
            case CURLE_OPERATION_TIMEDOUT:
                what = "timed out after \(formatSeconds(job.configuration.timeout)) s (\(detail))"
            case CURLE_COULDNT_RESOLVE_HOST: what = "can't resolve the host (\(detail))"
            default: what = detail
            }
            failure = TaskFailure("\(job.method) \(job.url): \(what)")
            mayRetry = [
                CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_COULDNT_RESOLVE_HOST, CURLE_RECV_ERROR,
                CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
            ].contains(result)
        } else if !(200...299).contains(status) {
            failure = TaskFailure("\(job.method) \(job.url): HTTP \(status) \(Self.reason(status))")
            mayRetry = status >= 500 || status == 429
        }
        if let failure {
            discard(transfer)
            if mayRetry, transfer.attempt <= job.configuration.retries {
                let delay = job.configuration.backoff * Double(1 << (transfer.attempt - 1))
                job.context.log(
                    "\(failure.description); retrying in \(formatSeconds(delay)) s (attempt \(transfer.attempt + 1) of \(job.configuration.retries + 1))"
                )
                waiting.append((Self.now() + UInt64(delay * 1e9), transfer))
                return
            }
            let attempts = transfer.attempt > 1 ? " (after \(transfer.attempt) attempts)" : ""
            try? job.finish(error: TaskFailure(failure.description + attempts))
            return
        }
        if let temporary = transfer.temporary, let output = job.output {
            guard rename(temporary, output) == 0 else {
                let reason = TaskFiles.lastError
                unlink(temporary)
                try? job.finish(error: TaskFailure("GET \(job.url): can't move the download to \(output): \(reason)"))
                return
            }
            job.context.log(
                "GET \(job.url) → \(TaskFiles.shown(output, relativeTo: job.context.projectRoot)): \(transfer.received) bytes"
            )
        } else {
            job.context.log("\(job.method) \(job.url): HTTP \(status)")
        }
        try? job.finish()
    }

    /// Stops a job's transfer (running, or waiting to retry) and finishes the job.
    private func stop(_ id: ObjectIdentifier) {
        if let transfer = running.removeValue(forKey: id) {
            release(transfer)
            discard(transfer)
            try? transfer.job.finish()
        } else if let index = waiting.firstIndex(where: { ObjectIdentifier($0.transfer.job) == id }) {
            let transfer = waiting.remove(at: index).transfer
            try? transfer.job.finish()
        }
    }

    private func fail(_ transfer: Transfer, _ error: TaskFailure) {
        release(transfer)
        discard(transfer)
        try? transfer.job.finish(error: error)
    }

    /// Frees the attempt's handle, header list and files (the download's temporary file stays
    /// until it is renamed or discarded).
    private func release(_ transfer: Transfer) {
        if let easy = transfer.handle {
            kiln_curl_multi_remove_handle(multi, easy)
            kiln_curl_easy_cleanup(easy)
            transfer.handle = nil
        }
        if let list = transfer.headerList {
            kiln_curl_slist_free_all(list)
            transfer.headerList = nil
        }
        if transfer.descriptor >= 0 {
            close(transfer.descriptor)
            transfer.descriptor = -1
        }
        if transfer.uploadDescriptor >= 0 {
            close(transfer.uploadDescriptor)
            transfer.uploadDescriptor = -1
        }
    }

    /// Removes a download that didn't succeed.
    private func discard(_ transfer: Transfer) {
        if let temporary = transfer.temporary {
            unlink(temporary)
            transfer.temporary = nil
        }
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}

func formatSeconds(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(value)
}

/// The plugin's one C entry point.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "http", version: "1.0.0")
        plugin.register(HTTPKind())
    }
}
