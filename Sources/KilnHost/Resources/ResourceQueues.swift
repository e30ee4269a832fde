import KilnJobs
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One ``JobQueue`` per resource, as the Concurrency Programming Guide suggests: `cpu` (width =
/// cores, or `-j`), one `disk:<device>` queue per storage device (width 1 by default — one
/// writer per disk head), one `net:<host>` queue per network host (width 4 by default), and the
/// Taskfile's own resources with their widths.
///
/// A task's `disk` claim is resolved to the devices of the paths it writes (the nearest existing
/// directory of each output), so tasks writing to different disks don't wait for each other.
///
/// Threading: every member is safe from any thread; the queue table is guarded by its mutex.
public final class ResourceQueues: Sendable {
    private let widths: [String: Int]
    private let queues = HostMutex<[String: JobQueue]>([:])
    private let deviceCache = HostMutex<[String: String]>([:])

    /// Creates the table.
    ///
    /// - Parameters:
    ///   - definitions: The Taskfile's `resources:` (user-defined, or widths for `cpu`, `disk`, `net`).
    ///   - cpuWidth: The width of `cpu` when the command line sets it (`-j`); overrides the Taskfile.
    ///   - defaultWidths: Widths of particular resources unless the Taskfile sets them (the remote
    ///     cache's `net:HOST:PORT`).
    public init(definitions: [ResourceDefinition], cpuWidth: Int? = nil, defaultWidths: [String: Int] = [:]) {
        var widths = ["cpu": JobQueue.defaultMaxConcurrentJobCount, "disk": 1, "net": 4]
        widths.merge(defaultWidths) { _, given in given }
        for definition in definitions { widths[definition.name] = definition.width }
        if let cpuWidth { widths["cpu"] = max(1, cpuWidth) }
        self.widths = widths
    }

    /// The queue of one concrete resource (`cpu`, `disk:sda1`, `net:example.com`, `link`, …),
    /// created on first use.
    public func queue(named name: String) -> JobQueue {
        queues.withLock { queues in
            if let queue = queues[name] { return queue }
            let family = name.split(separator: ":", maxSplits: 1).first.map(String.init) ?? name
            let queue = JobQueue(name: name, maxConcurrentJobCount: widths[name] ?? widths[family] ?? 1)
            queues[name] = queue
            return queue
        }
    }

    /// The resource an interactive job (go-task's `interactive: true`) holds: one at a time
    /// has the terminal. Taskfiles can't claim it (a name with a space).
    public static let terminal = "the terminal"

    /// The concrete resources a task's claims stand for, sorted — the global order in which a job
    /// acquires them, which is what makes overlapping multi-resource claims deadlock-free.
    ///
    /// - Parameters:
    ///   - claims: The task's `resources:` (`cpu` when empty).
    ///   - outputs: Absolute paths the job writes, for `disk`.
    ///   - directory: The job's directory, for `disk` when it declares no outputs.
    public func resources(for claims: [String], outputs: [String], directory: String) -> [String] {
        var names = Set<String>()
        for claim in claims.isEmpty ? ["cpu"] : claims {
            if claim == "disk" {
                let paths = outputs.isEmpty ? [directory] : outputs
                for path in paths { names.insert("disk:" + device(of: path)) }
            } else {
                names.insert(claim)
            }
        }
        return names.sorted()
    }

    /// Every queue created so far, sorted by name.
    public var all: [(name: String, queue: JobQueue)] {
        queues.withLock { $0.map { ($0.key, $0.value) } }.sorted { $0.name < $1.name }
    }

    /// The configured width of a resource.
    public func width(of name: String) -> Int {
        let family = name.split(separator: ":", maxSplits: 1).first.map(String.init) ?? name
        return widths[name] ?? widths[family] ?? 1
    }

    /// The storage device holding `path` (or its nearest existing ancestor): its block-device name
    /// (`sda1`) when the kernel has one, else `major:minor`.
    func device(of path: String) -> String {
        var candidate = path
        while true {
            var info = stat()
            if stat(candidate, &info) == 0 {
                let directoryKey = "\(info.st_dev)"
                if let cached = deviceCache.withLock({ $0[directoryKey] }) { return cached }
                let major = (info.st_dev >> 8) & 0xfff
                let minor = (info.st_dev & 0xff) | ((info.st_dev >> 12) & 0xfff00)
                var name = "\(major):\(minor)"
                if let uevent = try? Files.readText("/sys/dev/block/\(major):\(minor)/uevent"),
                    let line = uevent.split(separator: "\n").first(where: { $0.hasPrefix("DEVNAME=") })
                {
                    name = String(line.dropFirst("DEVNAME=".count))
                }
                deviceCache.withLock { $0[directoryKey] = name }
                return name
            }
            let parent = Path.directory(of: candidate)
            if parent == candidate || parent.isEmpty { return "unknown" }
            candidate = parent
        }
    }
}
