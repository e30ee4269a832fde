#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What the kernel says about the calling thread and process, read from `/proc` so that tests
/// check the engine against the system rather than against the engine's own helpers.
///
/// Threading: any thread; stateless.
public enum ThreadFacts {
    /// A thread's identity, comparable with `==`.
    public typealias ThreadIdentity = pthread_t

    /// The calling thread's identity.
    public static var currentThread: ThreadIdentity { pthread_self() }

    /// The calling thread's nice value (field 19 of `/proc/thread-self/stat`), or `nil` if unreadable.
    public static func currentNice() -> Int? {
        guard let stat = readFile("/proc/thread-self/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name start at field 3 (the state); nice is field 19.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 16 else { return nil }
        return Int(fields[16])
    }

    /// The number of CPUs the process may run on (`Cpus_allowed` in `/proc/thread-self/status`).
    public static func allowedProcessorCount() -> Int? {
        guard let mask = statusField("Cpus_allowed") else { return nil }
        var count = 0
        for character in mask where character != "," {
            guard let nibble = character.hexDigitValue else { return nil }
            count += nibble.nonzeroBitCount
        }
        return count
    }

    /// Whether the calling thread may raise its priority (`CAP_SYS_NICE` in `CapEff`), which
    /// restoring a lowered nice value needs.
    public static var mayRaisePriority: Bool {
        guard let field = statusField("CapEff"), let capabilities = UInt64(field, radix: 16) else { return false }
        let capSysNice: UInt64 = 23
        return capabilities & (1 << capSysNice) != 0
    }

    /// Whether the process runs under ThreadSanitizer, which makes everything several times
    /// slower: stress tests scale themselves down by ``workScale``.
    public static let isThreadSanitizerActive: Bool = {
        // RTLD_DEFAULT is a null handle on glibc.
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
    }()

    /// The fraction of their full size that stress tests should run: 1, or less under a sanitizer.
    public static var workScale: Double { isThreadSanitizerActive ? 0.1 : 1 }

    private static func statusField(_ name: String) -> String? {
        guard let status = readFile("/proc/thread-self/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return line.dropFirst(name.count + 1).trimmingWhitespace()
        }
        return nil
    }

    private static func readFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
