import KilnGitFormat
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

extension HookPlan {
    /// Bump when the encoding or the meaning of a plan changes.
    static let magic = Array("KILNHOOKPLAN\u{2}\n".utf8)

    /// Where the plan of `hook` is kept: `.kiln/hooks/HOOK.plan` under the project root.
    public static func path(root: String, hook: String) -> String {
        KilnDirectory(root: root).hookPlan(hook)
    }

    /// Saves the plan of `hook`, made from inputs read from `madeAt` on (``FileSignature/now()``
    /// taken before the Taskfile was loaded). Not saved — and the next hook runs in full — when a
    /// watched file changed too recently to be sure of (see ``FileSignature/isSettled(at:)``), or can't be written.
    ///
    /// - Returns: Whether it was saved.
    @discardableResult
    public func save(hook: String, madeAt: Int64) -> Bool {
        guard isCurrent(madeAt: madeAt) else { return false }
        var writer = PlanWriter()
        writer.bytes += Self.magic
        writer.write(madeAt)
        writer.write(taskfilePath)
        writer.write(root)
        writer.write(taskfiles)
        writer.write(Int64(tasks.count))
        for task in tasks {
            writer.write(task.directory)
            writer.write(task.patterns)
            writer.write(task.discovered)
        }
        writer.write(Int64(watched.count))
        for file in watched {
            writer.write(file.path)
            writer.write(
                file.signature.map {
                    [
                        $0.device, $0.inode, UInt64(bitPattern: $0.size), UInt64(bitPattern: $0.modified),
                        UInt64(bitPattern: $0.changed),
                    ].map(Int64.init(bitPattern:))
                } ?? []
            )
        }
        FileChecksum.seal(&writer.bytes)
        let destination = Self.path(root: root, hook: hook)
        KilnDirectory(root: root).createHooks()
        let temporary = destination + ".\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return false }
        let written = writer.bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == writer.bytes.count, rename(temporary, destination) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// The saved plan of `hook` under `root`, if there is one and it is current: every watched
    /// file as it was. `nil` otherwise (missing, damaged, another format, or out of date).
    public static func load(root: String, hook: String) -> HookPlan? {
        let file = path(root: root, hook: hook)
        // A damaged plan is ignored: the full hook answers, and saves a sound one.
        guard let raw = readSmallFile(file), let bytes = FileChecksum.opened(raw, magic: magic, path: file) else {
            return nil
        }
        var reader = PlanReader(bytes: bytes)
        guard reader.take(magic.count).map(Array.init) == magic, let madeAt = reader.integer(),
            let taskfilePath = reader.string(),
            let root = reader.string(), let taskfiles = reader.strings(), let taskCount = reader.integer(),
            taskCount < 1_000_000
        else { return nil }
        var tasks: [Task] = []
        for _ in 0..<taskCount {
            guard let directory = reader.string(), let patterns = reader.strings(), let discovered = reader.strings()
            else { return nil }
            tasks.append(Task(directory: directory, patterns: patterns, discovered: discovered))
        }
        guard let watchedCount = reader.integer(), watchedCount < 1_000_000 else { return nil }
        var watched: [Watched] = []
        for _ in 0..<watchedCount {
            guard let path = reader.string(), let values = reader.integers(), values.isEmpty || values.count == 5 else {
                return nil
            }
            var file = Watched(path: path)
            file.signature =
                values.isEmpty
                ? nil
                : FileSignature(
                    device: UInt64(bitPattern: values[0]),
                    inode: UInt64(bitPattern: values[1]),
                    size: values[2],
                    modified: values[3],
                    changed: values[4]
                )
            watched.append(file)
        }
        guard reader.isAtEnd else { return nil }
        let plan = HookPlan(
            taskfilePath: taskfilePath,
            root: root,
            taskfiles: taskfiles,
            tasks: tasks,
            watched: watched
        )
        return plan.isCurrent(madeAt: madeAt) ? plan : nil
    }
}

/// Little-endian integers and length-prefixed strings.
private struct PlanWriter {
    var bytes: [UInt8] = []

    mutating func write(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    mutating func write(_ text: String) {
        write(Int64(text.utf8.count))
        bytes += text.utf8
    }

    mutating func write(_ texts: [String]) {
        write(Int64(texts.count))
        for text in texts { write(text) }
    }

    mutating func write(_ values: [Int64]) {
        write(Int64(values.count))
        for value in values { write(value) }
    }
}

/// Reads what ``PlanWriter`` wrote; `nil` for anything past the end or out of range.
private struct PlanReader {
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func integer() -> Int64? {
        guard let raw = take(8) else { return nil }
        return raw.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    mutating func string() -> String? {
        guard let count = integer(), count < Int64(bytes.count), let raw = take(Int(count)) else { return nil }
        return String(decoding: raw, as: UTF8.self)
    }

    mutating func strings() -> [String]? {
        list { $0.string() }
    }

    mutating func integers() -> [Int64]? {
        list { $0.integer() }
    }

    /// A count, then that many items read by `item`.
    private mutating func list<Item>(_ item: (inout PlanReader) -> Item?) -> [Item]? {
        guard let count = integer(), count >= 0, count < Int64(bytes.count) else { return nil }
        var result: [Item] = []
        for _ in 0..<count {
            guard let value = item(&self) else { return nil }
            result.append(value)
        }
        return result
    }
}
