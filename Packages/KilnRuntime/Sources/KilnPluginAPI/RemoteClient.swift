/// What the `kiln` host and its REAPI client library (`libKilnRemote.so`) share: the host opens
/// that library only when a remote cache or executor is configured, and both link this module,
/// so the types below are one type on each side of the `dlopen`.
///
/// The host says *what* a job is (``RemoteActionSpec``); the library turns it into the
/// protocol's Command, input tree and Action (``RemoteClient/prepare(_:)``), which is the one
/// recipe for a job's remote key — `kiln explain --remote-keys` prints what a run would look up.

/// A digest as the Remote Execution API writes one: a hash of the content and its size, with the
/// function that made the hash (`sha256:<hex>/<size>`).
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteDigest: Sendable, Hashable, CustomStringConvertible {
    /// The digest function, lower case (`sha256`).
    public var function: String
    /// The hash, in lower-case hexadecimal.
    public var hash: String
    /// The content's size in bytes.
    public var size: Int64

    /// Creates a digest.
    public init(function: String = "sha256", hash: String, size: Int64) {
        self.function = function
        self.hash = hash
        self.size = size
    }

    /// `sha256:<hex>/<size>`.
    public var description: String { "\(function):\(hash)/\(size)" }
}

/// Where a remote cache or executor is (`grpc://HOST:PORT`) and which of its instances to use.
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The REAPI instance name (`--remote-instance`); empty for the server's default.
    public var instance: String

    /// Reads `grpc://HOST:PORT` (`grpc://[::1]:PORT` for an IPv6 address). Returns `nil` for any
    /// other form: TLS (`grpcs://`) and Unix sockets are not supported yet.
    public init?(url: String, instance: String = "") {
        guard url.hasPrefix("grpc://") else { return nil }
        var rest = Substring(url.dropFirst("grpc://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { return nil }
            portText = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return nil }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains("/"), let port = Int(portText), (1...65535).contains(port) else {
            return nil
        }
        self.host = String(host)
        self.port = port
        self.instance = instance
    }

    /// `grpc://HOST:PORT`, with ` (instance NAME)` when one is named.
    public var description: String {
        url + (instance.isEmpty ? "" : " (instance \(instance))")
    }

    /// `grpc://HOST:PORT` (`grpc://[::1]:PORT` for an IPv6 address), as ``init(url:instance:)``
    /// reads it: the server alone, without the instance.
    public var url: String {
        "grpc://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// The name of the host's resource queue, `net:HOST:PORT`.
    public var queueName: String { "net:\(host):\(port)" }
}

/// A job as the remote sees it: a command line run in a directory of an input tree, with the
/// files it reads and the files it writes. Every path is relative and uses `/`.
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteActionSpec: Sendable, Hashable {
    /// The directory on this machine that is the input tree's root (the project's root).
    public var root: String
    /// The command line: the shell with its options and the command.
    public var arguments: [String]
    /// The environment the job declares (the Command holds it sorted by name).
    public var environment: [String: String]
    /// The directory the command runs in, relative to the root (empty: the root).
    public var workingDirectory: String
    /// The files the job must leave, relative to the working directory.
    public var outputFiles: [String]
    /// The files it reads, relative to the root: its sources, the headers its last depfile named,
    /// and its dependencies' outputs.
    public var inputs: [String]

    /// The working directory on this machine: ``root`` joined with ``workingDirectory``.
    public var workingPath: String { workingDirectory.isEmpty ? root : root + "/" + workingDirectory }

    /// Creates a spec.
    public init(
        root: String,
        arguments: [String],
        environment: [String: String],
        workingDirectory: String,
        outputFiles: [String],
        inputs: [String]
    ) {
        self.root = root
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.outputFiles = outputFiles
        self.inputs = inputs
    }
}

/// A job made into the protocol's Action by ``RemoteClient/prepare(_:)``: its key, and what the
/// library needs to look it up, upload it or run it.
///
/// Threading: immutable; safe to share between threads.
public final class RemoteAction: Sendable {
    /// What it was made from.
    public let spec: RemoteActionSpec
    /// The Action's digest: the key the action cache stores its result under.
    public let key: RemoteDigest
    /// The Command's digest.
    public let commandKey: RemoteDigest
    /// The input tree's root digest.
    public let inputRootKey: RemoteDigest
    /// The library's own part (the encoded messages).
    public let details: any Sendable

    /// Creates a prepared action (the library does).
    public init(
        spec: RemoteActionSpec,
        key: RemoteDigest,
        commandKey: RemoteDigest,
        inputRootKey: RemoteDigest,
        details: any Sendable
    ) {
        self.spec = spec
        self.key = key
        self.commandKey = commandKey
        self.inputRootKey = inputRootKey
        self.details = details
    }
}

/// What a look-up found.
///
/// Threading: a value type; safe to pass between threads.
public enum RemoteLookup: Sendable {
    /// The cache had a successful result, and this is what the job printed. Its outputs, each
    /// verified against its digest, are written in place — or, when the look-up was asked not to
    /// write, are in `files`, by path relative to the working directory.
    case hit(output: [UInt8], files: [String: [UInt8]])
    /// No usable result: the job runs here. `note` says why a result the cache had was not used
    /// (a blob that didn't match its digest twice, an output missing from it).
    case miss(note: String?)
}

/// What a remote execution came to: the action ran on the server's workers (or the server had
/// its result), and its outputs are in place when it exited 0.
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteExecution: Sendable {
    /// The command's exit status.
    public var exitCode: Int32
    /// What it printed.
    public var output: [UInt8]
    /// Whether the server answered from its cache instead of running it.
    public var cached: Bool

    /// Creates one.
    public init(exitCode: Int32, output: [UInt8], cached: Bool) {
        self.exitCode = exitCode
        self.output = output
        self.cached = cached
    }
}

/// A remote cache or executor that failed a request: unreachable, too slow, or refusing.
///
/// Threading: a value type; safe to pass between threads.
public struct RemoteFailure: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for people.
    public var message: String

    /// Creates a failure.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// The client of one remote cache: the REAPI ActionCache, ContentAddressableStorage and ByteStream
/// services of one server. Its requests run on the library's own threads (gRPC's event loop);
/// completions are called there, once each, and must not block.
///
/// Threading: every method may be called from any thread, concurrently.
public protocol RemoteClient: AnyObject, Sendable {
    /// The server; `nil` for a client made only to compute keys (``RemoteConnectRequest/endpoint``).
    var endpoint: RemoteEndpoint? { get }

    /// The SHA-256 digest of the file at `path`.
    func digest(ofFile path: String) throws(RemoteFailure) -> RemoteDigest

    /// The SHA-256 digest of `bytes`.
    func digest(of bytes: [UInt8]) -> RemoteDigest

    /// Makes the job's Command, input tree and Action, hashing its input files (SHA-256, read on
    /// the calling thread). Throws when an input can't be read.
    func prepare(_ spec: RemoteActionSpec) throws(RemoteFailure) -> RemoteAction

    /// Asks the action cache for `action`'s result. On a hit, downloads and verifies its outputs
    /// and, when `writing`, writes each in place (a temporary file renamed over it), then reports
    /// what the job printed; a failure of the server is a ``RemoteFailure``.
    func lookUp(
        _ action: RemoteAction,
        writing: Bool,
        completion: @escaping @Sendable (Result<RemoteLookup, RemoteFailure>) -> Void
    )

    /// Stores the result of `action`, which ran here, succeeded and left every output: uploads
    /// the outputs, what it printed, the Command and the Action the server lacks, then the result.
    func store(
        _ action: RemoteAction,
        output: [UInt8],
        completion: @escaping @Sendable (Result<Void, RemoteFailure>) -> Void
    )

    /// Runs `action` on the server (REAPI `Execute`): uploads the inputs, the Command and the Action
    /// it lacks, follows the operation (`WaitExecution` after a dropped stream), then fetches and
    /// verifies the outputs and writes them in place when the command exited 0. A failure of the
    /// server (not of the command) is a ``RemoteFailure``.
    func execute(
        _ action: RemoteAction,
        completion: @escaping @Sendable (Result<RemoteExecution, RemoteFailure>) -> Void
    )

    /// Closes the connection once the requests under way have ended; blocks until then.
    func close()
}

/// How the host asks `libKilnRemote.so` for a client: it passes one of these, unretained, to the
/// library's C entry point ``entryPoint``, which connects, reads the server's capabilities and
/// fills in ``client`` or ``failure``.
///
/// Threading: the entry point fills it in before it returns; read it after.
public final class RemoteConnectRequest: @unchecked Sendable {
    /// The C entry point's name.
    public static let entryPoint = "kiln_remote_connect"

    /// The server; `nil` asks for a client that only computes keys (``RemoteClient/prepare(_:)``,
    /// ``RemoteClient/digest(ofFile:)``) and connects to nothing: `kiln explain --remote-keys`.
    public let endpoint: RemoteEndpoint?
    /// How long a request may take before the server counts as down.
    public let timeout: Duration
    /// The client, when the server answered.
    public var client: (any RemoteClient)?
    /// Why there is none.
    public var failure: String?

    /// Creates a request.
    public init(endpoint: RemoteEndpoint?, timeout: Duration) {
        self.endpoint = endpoint
        self.timeout = timeout
    }
}

/// What `kiln worker` asks the library for: a bot of a Remote Workers API (Bots) scheduler, such
/// as BuildGrid's, that runs each lease's Action with buildbox-run against a buildbox-casd of its
/// own (a proxy of the server's CAS). Passed through the C entry point ``entryPoint``, which
/// returns only when the worker stops: on SIGINT or SIGTERM, or when it can't go on (``failure``).
///
/// Threading: the host fills it in on one thread, the library runs it on that thread and fills in
/// ``failure``; not shared while that happens.
public final class RemoteWorkerRequest: @unchecked Sendable {
    /// The C entry point's name.
    public static let entryPoint = "kiln_remote_worker"

    /// The scheduler, and the instance its bots join (the bot session's parent).
    public let server: RemoteEndpoint
    /// The bot's ID, unique in the farm (default: the host name and the process ID).
    public let botID: String
    /// The worker's own directory: its buildbox-casd's socket and cache, and each lease's files.
    public let directory: String
    /// How many leases it runs at once.
    public let capacity: Int
    /// The buildbox-casd executable.
    public let casd: String
    /// The buildbox-run executable (its bubblewrap runner).
    public let runner: String
    /// Arguments added to every buildbox-run (its sandbox's bind mounts, say).
    public let runnerArguments: [String]
    /// Whether to print each lease as it starts and ends.
    public let verbose: Bool
    /// Why the worker stopped, when it couldn't go on.
    public var failure: String?

    /// Creates a request.
    public init(
        server: RemoteEndpoint,
        botID: String,
        directory: String,
        capacity: Int,
        casd: String,
        runner: String,
        runnerArguments: [String],
        verbose: Bool
    ) {
        self.server = server
        self.botID = botID
        self.directory = directory
        self.capacity = capacity
        self.casd = casd
        self.runner = runner
        self.runnerArguments = runnerArguments
        self.verbose = verbose
    }
}
