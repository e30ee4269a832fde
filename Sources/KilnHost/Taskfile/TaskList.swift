import KilnPaths

/// A Taskfile's tasks, in the order written: an array of ``TaskDefinition``, or the Taskfile
/// cache's records, each decoded the first time it is read.
///
/// After a small change, a run plans and runs a few tasks of ten thousand
/// (``ChangedPart``): it reads every task's ``TaskOutline`` — its name, its dependencies, the
/// facts planning needs — and the full definitions of those few. Decoding every definition
/// cost a 10k-task project most of such a run's start-up.
///
/// Threading: a value type whose storage is immutable but for the decoded definitions, kept
/// under a lock; safe to pass between threads and read from any of them.
public struct TaskList: RandomAccessCollection, Sendable, ExpressibleByArrayLiteral {
    private let storage: Storage

    /// The tasks of `definitions`.
    public init(_ definitions: [TaskDefinition]) {
        storage = Storage(definitions: definitions)
    }

    /// The tasks written.
    public init(arrayLiteral definitions: TaskDefinition...) {
        self.init(definitions)
    }

    /// Tasks read from the cache's `records`, whose outline was saved with them.
    init(records: CachedTaskRecords, outline: TaskOutline) {
        storage = Storage(records: records, outline: outline)
    }

    /// The first task's position: 0.
    public var startIndex: Int { 0 }
    /// The position after the last task: the number of tasks.
    public var endIndex: Int { storage.count }

    /// The task at `position`, decoded now if it came from the cache and wasn't read before.
    public subscript(position: Int) -> TaskDefinition { storage.definition(at: position) }

    /// What planning reads of every task: names, dependencies by position, flags.
    var outline: TaskOutline { storage.outline }

    /// How many definitions were decoded from the cache so far (all of them for an array).
    var decodedCount: Int { storage.decodedCount }

    /// Whether the cache's records are still held: until every definition is decoded.
    var holdsRecords: Bool { storage.holdsRecords }

    /// Immutable after creation, but for the memo of decoded definitions and the outline worked
    /// out on first use, each under its lock.
    private final class Storage: Sendable {
        let count: Int
        private let definitions: [TaskDefinition]
        /// From the cache: the definitions decoded so far, how many are not, and the records,
        /// let go of once every one is decoded (a run of every task would hold the file's bytes
        /// beside them to the end).
        private let memo: HostMutex<Memo>
        private let computedOutline: HostMutex<TaskOutline?>
        private let fromCache: Bool

        private struct Memo {
            var decoded: [TaskDefinition?]
            var remaining: Int
            var records: CachedTaskRecords?
        }

        init(definitions: [TaskDefinition]) {
            count = definitions.count
            self.definitions = definitions
            fromCache = false
            memo = HostMutex(Memo(decoded: [], remaining: 0, records: nil))
            computedOutline = HostMutex(nil)
        }

        init(records: CachedTaskRecords, outline: TaskOutline) {
            count = records.count
            definitions = []
            fromCache = true
            memo = HostMutex(
                Memo(
                    decoded: [TaskDefinition?](repeating: nil, count: records.count),
                    remaining: records.count,
                    records: records
                )
            )
            computedOutline = HostMutex(outline)
        }

        func definition(at position: Int) -> TaskDefinition {
            guard fromCache else { return definitions[position] }
            let (known, records) = memo.withLock { memo -> (TaskDefinition?, CachedTaskRecords?) in
                if let known = memo.decoded[position] { return (known, nil) }
                return (nil, memo.records)
            }
            if let known { return known }
            // Decoded outside the lock: two threads may decode the same record; both get the same.
            // (The records are there until every definition is in the memo.)
            guard let records, let decoded = records.definition(at: position) else {
                // The file's checksum held, so its bytes are what kiln wrote: a record that doesn't
                // read back is kiln's mistake, and going on would run a task kiln can't describe.
                records?.discard()
                fatalError(
                    "kiln: task \(position) of \(records?.path ?? "the Taskfile cache") can't be read back (a kiln bug: please report it). The cache is removed: run again."
                )
            }
            memo.withLock { memo in
                guard memo.decoded[position] == nil else { return }
                memo.decoded[position] = decoded
                memo.remaining -= 1
                if memo.remaining == 0 { memo.records = nil }
            }
            return decoded
        }

        var outline: TaskOutline {
            computedOutline.withLock { outline in
                if let outline { return outline }
                let made = TaskOutline(definitions)
                outline = made
                return made
            }
        }

        var decodedCount: Int {
            fromCache ? memo.withLock { count - $0.remaining } : count
        }

        /// Whether the cache's records are still held (they go once every definition is decoded).
        var holdsRecords: Bool { memo.withLock { $0.records != nil } }
    }
}

/// What planning reads of every task, kept apart from the definitions so a run that plans a
/// few tasks of many decodes only those few (``TaskList``): each task's name, its dependencies
/// as positions, and the facts ``BuildPlanner`` and ``ChangedPart`` decide by.
///
/// Made from the definitions by ``init(_:)``, the one place these facts are derived; the
/// Taskfile cache saves what it made and reads it back.
///
/// Threading: a value type.
struct TaskOutline: Sendable, Equatable {
    /// Facts about a task that planning decides by.
    struct Flags: OptionSet, Sendable, Hashable {
        let rawValue: UInt16
        /// ``TaskDefinition/runsHere``.
        static let runsHere = Flags(rawValue: 1 << 0)
        /// ``TaskDefinition/isGroup``.
        static let isGroup = Flags(rawValue: 1 << 1)
        /// `status:` tests (``TaskDefinition/hasStatusChecks``).
        static let hasStatusChecks = Flags(rawValue: 1 << 2)
        /// `each: sources`.
        static let each = Flags(rawValue: 1 << 3)
        /// It calls other tasks (``TaskDefinition/calls``).
        static let calls = Flags(rawValue: 1 << 4)
        /// A piece of another task (``TaskDefinition/partOf``).
        static let partOf = Flags(rawValue: 1 << 5)
        /// Guarded by another (``TaskDefinition/guardedBy``).
        static let guarded = Flags(rawValue: 1 << 6)
        /// `prompt:`s.
        static let prompts = Flags(rawValue: 1 << 7)
        /// `watch: true`.
        static let watches = Flags(rawValue: 1 << 8)
    }

    /// Each task's name.
    private(set) var names: [String] = []
    /// Each task's flags.
    private(set) var flags: [Flags] = []
    /// Where each task's dependencies start in ``dependencyList`` (one more entry than tasks).
    private(set) var dependencyStarts: [Int32] = [0]
    /// Every task's dependencies, as positions of the task each names (the first task of that
    /// name), in the order written; a name no task has is left out, as the planner leaves it.
    private(set) var dependencyList: [Int32] = []
    /// Every alias and the task it names: the last task that claims it.
    private(set) var aliases: [String: String] = [:]
    /// Each task kind used, in the order first used, with the first task that uses it.
    private(set) var kinds: [(name: String, firstTask: Int)] = []
    /// Whether a task's name or alias has a `*` (a wildcard name).
    private(set) var hasWildcardNames = false

    var count: Int { names.count }

    /// The outline of `tasks`.
    init(_ tasks: [TaskDefinition]) {
        var positions: [String: Int] = [:]
        positions.reserveCapacity(tasks.count)
        for (position, task) in tasks.enumerated() where positions[task.name] == nil { positions[task.name] = position }
        var kindPositions: [String: Int] = [:]
        names.reserveCapacity(tasks.count)
        flags.reserveCapacity(tasks.count)
        dependencyStarts.reserveCapacity(tasks.count + 1)
        for (position, task) in tasks.enumerated() {
            var taskFlags: Flags = []
            if task.runsHere { taskFlags.insert(.runsHere) }
            if task.isGroup { taskFlags.insert(.isGroup) }
            if task.hasStatusChecks { taskFlags.insert(.hasStatusChecks) }
            if task.each != .none { taskFlags.insert(.each) }
            if !task.calls.isEmpty { taskFlags.insert(.calls) }
            if task.partOf != nil { taskFlags.insert(.partOf) }
            if task.guardedBy != nil { taskFlags.insert(.guarded) }
            if task.hasPrompts { taskFlags.insert(.prompts) }
            if task.options.watches { taskFlags.insert(.watches) }
            for dependency in task.dependencies {
                if let found = positions[dependency.value] { addDependency(Int32(found)) }
            }
            let kindName = task.kind.value
            if kindPositions[kindName] == nil {
                kindPositions[kindName] = kinds.count
                kinds.append((kindName, position))
            }
            append(name: task.name, flags: taskFlags, aliases: task.aliases)
        }
    }

    /// An empty outline, filled by ``addDependency(_:)``, ``append(name:flags:aliases:)`` and
    /// ``addKind(_:firstTask:)`` (the Taskfile cache's reader).
    init(reservingCapacity count: Int) {
        names.reserveCapacity(count)
        flags.reserveCapacity(count)
        dependencyStarts.reserveCapacity(count + 1)
    }

    /// Adds a dependency of the next task (``append(name:flags:aliases:)`` adds the task).
    mutating func addDependency(_ position: Int32) { dependencyList.append(position) }

    /// Adds the next task, whose dependencies were added since the last.
    mutating func append(name: String, flags taskFlags: Flags, aliases taskAliases: [String]) {
        names.append(name)
        flags.append(taskFlags)
        dependencyStarts.append(Int32(dependencyList.count))
        for alias in taskAliases {
            aliases[alias] = name
            if Self.isWildcard(alias) { hasWildcardNames = true }
        }
        if Self.isWildcard(name) { hasWildcardNames = true }
    }

    /// Whether a name has a `*` (compared as bytes: a search by characters costs ten times more,
    /// for ten thousand names).
    private static func isWildcard(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { $0.contains(UInt8(ascii: "*")) }
    }

    /// Adds a task kind, first used by the task at `firstTask`.
    mutating func addKind(_ name: String, firstTask: Int) {
        kinds.append((name, firstTask))
    }

    /// The dependencies of the task at `position`, as positions.
    func dependencies(of position: Int) -> ArraySlice<Int32> {
        dependencyList[Int(dependencyStarts[position])..<Int(dependencyStarts[position + 1])]
    }

    /// The position of the first task called `name`.
    func position(named name: String) -> Int? { names.firstIndex(of: name) }

    /// The position of the task `name` names, as ``Taskfile/task(named:)`` finds it: an alias
    /// first (the last task that claims it), then a task's name.
    func position(answeringTo name: String) -> Int? {
        if let owner = aliases[name] { return position(named: owner) }
        return position(named: name)
    }

    static func == (left: TaskOutline, right: TaskOutline) -> Bool {
        left.names == right.names && left.flags == right.flags && left.dependencyStarts == right.dependencyStarts
            && left.dependencyList == right.dependencyList && left.aliases == right.aliases
            && left.kinds.elementsEqual(right.kinds) { $0.name == $1.name && $0.firstTask == $1.firstTask }
            && left.hasWildcardNames == right.hasWildcardNames
    }
}
