import KilnPaths

/// The output signatures a run's tasks and jobs published, for their dependents and for the
/// snapshot: by task name or plain job key, and an `each:` task's jobs' by their file's
/// position in the task's list.
///
/// An `each:` task over 100k files publishes 100k signatures. By position they take 16 bytes a
/// job; in a dictionary by key, each held its key (`task` NUL `file`, 64 bytes of string on the
/// heap) and a 32-byte bucket, in a table that doubles as it grows (two tables at once while it
/// does).
///
/// Threading: a value type (``IncrementalState`` keeps it under its mutex).
struct PublishedSignatures {
    /// By task name or plain job key (``JobKey/stored``); the previous snapshot's table, as a
    /// run starts from it, holds `each:` jobs' keys too.
    private(set) var named: [String: ContentHash] = [:]
    /// The jobs of `each:` tasks listed in this run, by task.
    private var each: [String: EachTask] = [:]
    /// When ``named`` started as the previous snapshot's table (``carry(_:)``), the names set
    /// since, in order, repeats and all: with the table's count, what tells whether the names
    /// are still the snapshot's and which signatures are new (``UpToDateSnapshot/Patch``).
    private(set) var setSinceCarried: [String]?

    /// A table for `names` signatures by name, made that large at once. Grown one publish at a
    /// time, a 10k-task run's table doubled from 8,192 to 16,384 buckets while jobs ran, and
    /// both tables were alive at that moment: 0.79 MB, the heap's peak (massif).
    init(expecting names: Int = 0) {
        if names > 0 { named.reserveCapacity(names) }
    }

    private struct EachTask {
        /// The task's files, sorted (``Glob``'s order, `<`).
        let sources: [String]
        /// Zero for a job that published nothing (yet): a dependent combines zero for it either way.
        var signatures: [ContentHash]

        func position(of source: String) -> Int? {
            var low = 0
            var high = sources.count
            while low < high {
                let middle = (low + high) / 2
                if sources[middle] < source { low = middle + 1 } else { high = middle }
            }
            return low < sources.count && sources[low] == source ? low : nil
        }
    }

    /// Notes the files of an `each:` task, in the sorted order it lists them: its jobs' signatures
    /// are kept by position from now on (a key of the previous snapshot's stays in ``named``
    /// until its job publishes again, and isn't written to the next).
    mutating func listed(task: String, sources: [String]) {
        each[task] = EachTask(sources: sources, signatures: Array(repeating: Self.none, count: sources.count))
    }

    /// Whether nothing was published.
    var isEmpty: Bool { named.isEmpty && each.isEmpty }

    /// Whether a listed `each:` task keeps signatures by position.
    var hasListedTasks: Bool { !each.isEmpty }

    /// Starts from the previous snapshot's table: what its tasks and jobs published then (a copy
    /// shares its storage). The names set from now on are noted.
    mutating func carry(_ table: [String: ContentHash]) {
        named = table
        setSinceCarried = []
    }

    /// The signature published under a task's name or a plain job's key.
    subscript(name name: String) -> ContentHash? {
        get { named[name] }
        set {
            named[name] = newValue
            setSinceCarried?.append(name)
        }
    }

    /// The signature a job published (an `each:` job's, by its file's position in a listed task).
    subscript(key: JobKey) -> ContentHash? {
        get {
            if let source = key.source, let task = each[key.task], let position = task.position(of: source),
                task.signatures[position] != Self.none
            {
                return task.signatures[position]
            }
            return named[key.stored]
        }
        set {
            if let source = key.source, let position = each[key.task]?.position(of: source) {
                each[key.task]?.signatures[position] = newValue ?? Self.none
            } else {
                self[name: key.stored] = newValue
            }
        }
    }

    /// The output signature of a whole `each:` task: each job's key and what it published, one
    /// job per file of `sources`, in order (zero for a job that published nothing). By position
    /// when `sources` is the list the task noted (always, in a run): no key made and looked up
    /// a file.
    func eachTaskSignature(_ task: String, sources: [String]) -> ContentHash {
        var hasher = ContentHasher()
        let listed = each[task].flatMap { $0.sources == sources ? $0.signatures : nil }
        for (position, source) in sources.enumerated() {
            let key = JobKey(task: task, source: source)
            hasher.combine(storedKeyOf: key)
            if let listed, listed[position] != Self.none {
                hasher.combine(listed[position])
            } else {
                hasher.combine(self[key] ?? Self.none)
            }
        }
        return hasher.finalize()
    }

    private static let none = ContentHash(high: 0, low: 0)

    /// Whether `key` is a stored job key of a listed `each:` task (`task` NUL `file`), which
    /// ``forEach(_:)`` leaves to the task's own list.
    private func isListedJobKey(_ key: String) -> Bool {
        guard !each.isEmpty, let separator = key.utf8.firstIndex(of: 0) else { return false }
        return each[String(key[..<separator])] != nil
    }

    /// How many signatures ``forEach(_:)`` visits.
    var count: Int {
        var total = 0
        forEach { _, _, _ in total += 1 }
        return total
    }

    /// Calls `body` with each signature and the key it is published under: a name (or a stored
    /// key), or a listed `each:` job's task and file. The same ones in the same order each time.
    func forEach(_ body: (_ name: String, _ source: String?, _ signature: ContentHash) -> Void) {
        for (key, signature) in named where !isListedJobKey(key) { body(key, nil, signature) }
        for (task, list) in each {
            for (source, signature) in zip(list.sources, list.signatures) where signature != Self.none {
                body(task, source, signature)
            }
        }
    }
}

extension ContentHasher {
    /// Adds `key`'s stored form (``JobKey/stored``) as ``combine(_:)-(String)`` would add it, without
    /// making the string.
    mutating func combine(storedKeyOf key: JobKey) {
        guard let source = key.source else {
            combine(key.task)
            return
        }
        var length = UInt64(key.task.utf8.count + 1 + source.utf8.count)
        withUnsafeBytes(of: &length) { combineRaw($0) }
        func bytes(of part: String) {
            var part = part
            part.makeContiguousUTF8()
            part.utf8.withContiguousStorageIfAvailable { combineRaw(UnsafeRawBufferPointer($0)) }
        }
        bytes(of: key.task)
        var separator: UInt8 = 0
        withUnsafeBytes(of: &separator) { combineRaw($0) }
        bytes(of: source)
    }
}
