import KilnPaths
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// The checked model of a Taskfile, saved under `.kiln/taskfile.cache` after a successful load so
/// the next run can skip YAML parsing and checking: for a 10k-task Taskfile that is most of
/// kiln's start-up time and memory.
///
/// The cache is valid only for the same main Taskfile path and the same contents of every file
/// the load read (each hashed; an optional include that was missing must still be missing), and
/// for the same cache format. Anything else — a changed byte, a new include, a corrupt or
/// truncated cache — means a normal load, which then rewrites it. Writes go to a temporary file
/// renamed into place, so a reader never sees half a cache.
///
/// Threading: stateless; safe from any thread.
enum TaskfileCache {
    /// The header — magic, format version, what the load read — is ``TaskfileCacheHeader``'s, which
    /// the launcher reads too. **Bump ``TaskfileCacheHeader/formatVersion`` when the encoding or the
    /// meaning of ``Taskfile`` changes.**
    static let magic = TaskfileCacheHeader.magic

    /// The cache file of a project.
    static func path(root: String) -> String { KilnDirectory(root: root).taskfileCache }

    /// The cached model, if the cache is valid for `taskfilePath`.
    static func load(taskfilePath: String, root: String, context: TaskfileContext) -> Taskfile? {
        guard let bytes = Files.readSealed(path(root: root), magic: magic) else { return nil }
        var reader = BinaryReader(bytes: bytes)
        guard validHeader(&reader, taskfilePath: taskfilePath, context: context) != nil else { return nil }
        let identity = FileChecksum.of(bytes[0..<reader.offset])
        var taskfile = reader.readTaskfile(cachePath: path(root: root))
        taskfile?.contentIdentity = identity
        return taskfile
    }

    /// A hash of the valid cache's header — the Taskfile path, and every file the load read with
    /// the hash of its contents — or `nil` when there is no valid cache. Equal identities mean
    /// the same Taskfiles with the same contents; kiln's up-to-date snapshot is keyed on it.
    static func identity(taskfilePath: String, root: String, context: TaskfileContext) -> ContentHash? {
        TaskfileCacheHeader.identity(taskfilePath: taskfilePath, root: root, holds: context.holds)
    }

    /// Every file the cached load read, and each optional include it looked for and didn't find;
    /// `nil` when there is no valid cache for `taskfilePath`.
    static func filesRead(taskfilePath: String, root: String, context: TaskfileContext) -> [String]? {
        guard let bytes = Files.readSealed(path(root: root), magic: magic) else { return nil }
        var reader = BinaryReader(bytes: bytes)
        return validHeader(&reader, taskfilePath: taskfilePath, context: context)
    }

    /// Removes the cache (a Taskfile whose model can't be kept: it has dynamic variables).
    static func remove(root: String) {
        unlink(path(root: root))
    }

    /// Reads the header (``TaskfileCacheHeader/read(_:taskfilePath:holds:)``), each recorded
    /// requirement checked against `context`.
    private static func validHeader(_ reader: inout BinaryReader, taskfilePath: String, context: TaskfileContext)
        -> [String]?
    {
        TaskfileCacheHeader.read(&reader, taskfilePath: taskfilePath, holds: context.holds)
    }

    /// Saves `taskfile`, whose load read `files` (with `missingOptional` includes absent).
    /// Sets the taskfile's ``Taskfile/contentIdentity`` to the header's checksum.
    static func save(_ taskfile: inout Taskfile, missingOptional: [String], requirements: [TaskfileRequirement] = []) {
        var writer = BinaryWriter()
        writer.append(magic)
        writer.write(TaskfileCacheHeader.formatVersion)
        writer.write(taskfile.path)
        var entries: [(String, ContentHash)] = []
        for file in taskfile.files {
            let hash = fingerprint(file)
            guard hash != absent else { return }
            entries.append((file, hash))
        }
        entries += missingOptional.map { ($0, absent) }
        writer.write(entries.count)
        for (file, hash) in entries {
            writer.write(file)
            writer.write(hash.high)
            writer.write(hash.low)
        }
        writer.write(requirements.count)
        for requirement in requirements {
            writer.write(requirement.key)
            writer.write(requirement.valueHash != nil)
            if let hash = requirement.valueHash { writer.write(hash) }
        }
        taskfile.contentIdentity = FileChecksum.of(writer.bytes[...])
        writer.write(taskfile)
        KilnDirectory(root: taskfile.root).create()
        FileChecksum.seal(&writer.bytes)
        // Owner only: the model holds the variables' values, and those may come from the
        // environment (a token a template reads).
        Files.writeAtomically(path(root: taskfile.root), bytes: writer.bytes, mode: 0o600)
    }

    /// Stands for a file that doesn't exist (or can't be read).
    static let absent = TaskfileCacheHeader.absent

    /// The content hash of a file, or ``absent``.
    static func fingerprint(_ path: String) -> ContentHash { TaskfileCacheHeader.fingerprint(path) }
}

// MARK: - Encoding

extension BinaryWriter {
    mutating func write(_ location: SourceLocation) {
        writeShared(location.file)
        write(location.line)
        write(location.column)
    }

    mutating func write(_ located: [Located<String>]) {
        write(located.count)
        for item in located {
            write(item.value)
            write(item.location)
        }
    }

    mutating func write(_ dictionary: [String: String]) {
        write(dictionary.count)
        for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            write(key)
            write(value)
        }
    }

    mutating func write(_ dictionary: [String: TemplateValue]) {
        write(dictionary.count)
        for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            write(key)
            write(value)
        }
    }

    /// A variable's value: a tag, then its contents.
    mutating func write(_ value: TemplateValue) {
        switch value {
        case .missing, .null: write(byte: 0)
        case .bool(let flag): write(byte: flag ? 1 : 2)
        case .int(let number):
            write(byte: 3)
            write(UInt64(bitPattern: Int64(number)))
        case .float(let number):
            write(byte: 4)
            write(number.bitPattern)
        case .string(let text):
            write(byte: 5)
            write(text)
        case .list(let items):
            write(byte: 6)
            write(items.count)
            for item in items { write(item) }
        case .map(let entries):
            write(byte: 7)
            write(entries)
        case .time(let time):
            write(byte: 8)
            write(time.seconds)
            write(time.nanoseconds)
            write(time.offset)
            write(time.zone)
        }
    }

    mutating func write(_ value: ConfigurationValue) {
        write(value.location)
        switch value.kind {
        case .null: write(0)
        case .scalar(let text):
            write(1)
            write(text)
        case .list(let items):
            write(2)
            write(items.count)
            for item in items { write(item) }
        case .map(let entries):
            write(3)
            write(entries.count)
            for entry in entries {
                write(entry.key)
                write(entry.keyLocation)
                write(entry.value)
            }
        }
    }

    /// The model after the header: the table of shared strings (file paths, directories, task
    /// kinds), then the rest (``writeBody(_:)``), whose every task record can be read alone given
    /// the table (``CachedTaskRecords``).
    mutating func write(_ taskfile: Taskfile) {
        var body = BinaryWriter()
        body.writeBody(taskfile)
        write(body.sharedStrings)
        append(body.bytes)
    }

    /// The model's globals and tables; the task count; where the outline starts (8 bytes); each
    /// task's record; the outline (``TaskOutline``: each record's length, then the task's name,
    /// flags, dependencies and aliases; then the task kinds). Positions count from the body's
    /// first byte.
    private mutating func writeBody(_ taskfile: Taskfile) {
        write(taskfile.path)
        write(taskfile.root)
        write(taskfile.version)
        write(taskfile.files.count)
        for file in taskfile.files { write(file) }
        write(taskfile.resources.count)
        for resource in taskfile.resources {
            write(resource.name)
            write(resource.width)
            write(resource.location)
        }
        write(taskfile.plugins)
        write(taskfile.hooks.count)
        for (name, tasks) in taskfile.hooks.sorted(by: { $0.key < $1.key }) {
            write(name)
            write(tasks)
        }
        write(taskfile.outputGroup != nil)
        if let group = taskfile.outputGroup {
            write(group.begin)
            write(group.end)
            write(group.showsOnlyFailures)
        }
        write(taskfile.secrets.values)
        write(taskfile.watchInterval)
        write(taskfile.remote != nil)
        if let remote = taskfile.remote {
            write(remote.endpoint.host)
            write(remote.endpoint.port)
            write(remote.endpoint.instance)
            write(remote.readOnly)
            write(
                Int(
                    remote.timeout.components.seconds * 1_000_000_000 + remote.timeout.components.attoseconds
                        / 1_000_000_000
                )
            )
        }
        // Tasks of one file share their variables dictionary: write each distinct one once. A
        // task's tables are most often its predecessor's (the same storage, so `==` is quick):
        // hashing a whole dictionary costs thousands of instructions.
        var variableTables: [[String: TemplateValue]: Int] = [:]
        var variableOrder: [[String: TemplateValue]] = []
        var tables: [[String: String]: Int] = [:]
        var order: [[String: String]] = []
        var tableIndices: [(variables: Int, environment: Int)] = []
        tableIndices.reserveCapacity(taskfile.tasks.count)
        for (position, task) in taskfile.tasks.enumerated() {
            if let previous = tableIndices.last, task.variables == taskfile.tasks[position - 1].variables,
                task.environment == taskfile.tasks[position - 1].environment
            {
                tableIndices.append(previous)
                continue
            }
            let variables = variableTables[task.variables] ?? variableOrder.count
            if variables == variableOrder.count {
                variableTables[task.variables] = variables
                variableOrder.append(task.variables)
            }
            let environment = tables[task.environment] ?? order.count
            if environment == order.count {
                tables[task.environment] = environment
                order.append(task.environment)
            }
            tableIndices.append((variables, environment))
        }
        write(variableOrder.count)
        for dictionary in variableOrder { write(dictionary) }
        write(order.count)
        for dictionary in order { write(dictionary) }
        write(taskfile.tasks.count)
        let outlineAt = bytes.count
        write(UInt64(0))
        var recordStarts: [Int] = []
        recordStarts.reserveCapacity(taskfile.tasks.count)
        for (task, indices) in zip(taskfile.tasks, tableIndices) {
            recordStarts.append(bytes.count)
            write(task.name)
            write(task.location)
            write(task.summary)
            write(task.dependencies)
            write(task.calls)
            write(task.commands)
            write(task.sources)
            write(task.generates)
            write(indices.variables)
            write(task.renderedSources == task.sources.map(\.value))
            if task.renderedSources != task.sources.map(\.value) {
                write(task.renderedSources.count)
                for pattern in task.renderedSources { write(pattern) }
            }
            write(indices.environment)
            // Shared: most tasks of a Taskfile have the same directory, kind and file.
            writeShared(task.directory)
            write(task.resources)
            write(task.each == .sources)
            write(task.batchSize ?? 0)
            writeShared(task.kind.value)
            write(task.kind.location)
            write(task.pluginConfiguration != nil)
            if let configuration = task.pluginConfiguration { write(configuration) }
            write(task.allowsOutsideRoot)
            write(task.depfile)
            if let depfile = task.locatedDepfile { write(depfile.location) }
            write(task.keepsDepfile)
            writeShared(task.file)
            write(task.options)
        }
        withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { word in
            for (index, byte) in word.enumerated() { bytes[outlineAt + index] = byte }
        }
        let outline = taskfile.tasks.outline
        var previous = outlineAt + 8
        for position in 0..<outline.count {
            write(recordStarts[position] - previous)
            previous = recordStarts[position]
            write(outline.names[position])
            write(Int(outline.flags[position].rawValue))
            let dependencies = outline.dependencies(of: position)
            write(dependencies.count)
            for dependency in dependencies { write(Int(dependency)) }
            // Each task's own, in order: the reader's outline makes the table as ``TaskOutline/init(_:)`` did.
            write(taskfile.tasks[position].aliases)
        }
        write(outline.kinds.count)
        for kind in outline.kinds {
            writeShared(kind.name)
            write(kind.firstTask)
        }
    }

    mutating func write(_ strings: [String]) {
        write(strings.count)
        for string in strings { write(string) }
    }

    mutating func write(_ options: TaskOptions) {
        // Most tasks have none: one byte.
        guard options != TaskOptions() else {
            write(false)
            return
        }
        write(true)
        write(options.longSummary)
        write(options.aliases)
        write(options.isInternal)
        write(options.label)
        write(options.isSilent)
        write(options.ignoresError)
        write(options.platforms != nil)
        if let platforms = options.platforms { write(platforms) }
        write(options.prompts)
        write(options.preconditions.count)
        for precondition in options.preconditions {
            write(precondition.test.value)
            write(precondition.test.location)
            write(precondition.message)
        }
        write(options.runsEveryTime)
        write(options.deferredErrors.count)
        for failure in options.deferredErrors {
            write(failure.code)
            write(failure.message)
            write(failure.location != nil)
            if let location = failure.location { write(location) }
        }
        write(options.requiredVariables.count)
        for required in options.requiredVariables {
            write(required.name)
            write(required.allowed != nil)
            if let allowed = required.allowed { write(allowed) }
            write(required.location)
        }
        write(options.commandOptions.count)
        for command in options.commandOptions {
            write(command.isSilent)
            write(command.ignoresError)
            write(command.shellOptions)
            write(command.isDeferred)
            write(command.condition.map { [$0] } ?? [])
            write(command.platforms != nil)
            if let platforms = command.platforms { write(platforms) }
            write(command.timeout)
            write(command.deferredCall ?? -1)
            write(command.loop != nil)
            if let loop = command.loop {
                write(loop.name)
                switch loop.items {
                case .list(let values):
                    write(byte: 0)
                    write(values)
                case .variable(let name, let split):
                    write(byte: 1)
                    write(name)
                    write(split)
                case .sources: write(byte: 2)
                case .generates: write(byte: 3)
                case .matrix(let rows):
                    write(byte: 4)
                    write(rows.count)
                    for row in rows {
                        write(row.key)
                        write(row.values)
                    }
                }
            }
        }
        write(options.partOf)
        write(options.statusChecks)
        write(options.shellOptions)
        write(options.conditionHolds)
        write(byte: options.fingerprint?.rawValue ?? 0)
        write(options.isInteractive)
        write(options.failureIgnored)
        write(options.timeout)
        write(options.deferralBody)
        write(options.isDeferredCommand)
        // The rarely set ones, when one is.
        write(options.rareOptions != nil)
        if let rare = options.rareOptions {
            write(rare.guardedWork)
            write(rare.guardedBy)
            write(rare.recordsGuard)
            write(rare.callTest.map { [$0] } ?? [])
            write(rare.conditionalBody)
            write(rare.watches)
        }
    }

    /// A `timeout:` as written (none: an empty list).
    mutating func write(_ duration: GoDuration?) {
        write(duration.map { [$0.description] } ?? [])
    }

    mutating func write(_ options: ShellOptions) {
        write(options.posix)
        write(options.bash)
    }
}

extension BinaryReader {
    mutating func readLocation() -> SourceLocation? {
        guard let file = readSharedString(), let line = readInteger(), let column = readInteger() else { return nil }
        return SourceLocation(file: file, line: line, column: column)
    }

    mutating func readLocated() -> [Located<String>]? {
        guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
        var result: [Located<String>] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            guard let value = readString(), let location = readLocation() else { return nil }
            result.append(Located(value: value, location: location))
        }
        return result
    }

    mutating func readDictionary() -> [String: String]? {
        guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
        var result: [String: String] = [:]
        result.reserveCapacity(count)
        for _ in 0..<count {
            guard let key = readString(), let value = readString() else { return nil }
            result[key] = value
        }
        return result
    }

    mutating func readStrings() -> [String]? {
        guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
        var result: [String] = []
        for _ in 0..<count {
            guard let string = readString() else { return nil }
            result.append(string)
        }
        return result
    }

    /// A task's options: `.some(nil)` when they are the defaults (one byte).
    mutating func readOptions() -> TaskOptions?? {
        guard let present = readBool() else { return nil }
        guard present else { return .some(nil) }
        var options = TaskOptions()
        guard let longSummary = readOptionalString(), let aliases = readStrings(), let isInternal = readBool(),
            let label = readOptionalString(), let isSilent = readBool(), let ignoresError = readBool(),
            let hasPlatforms = readBool()
        else { return nil }
        options.longSummary = longSummary
        options.aliases = aliases
        options.isInternal = isInternal
        options.label = label
        options.isSilent = isSilent
        options.ignoresError = ignoresError
        if hasPlatforms {
            guard let platforms = readStrings() else { return nil }
            options.platforms = platforms
        }
        guard let prompts = readStrings(), let preconditionCount = readInteger(), preconditionCount >= 0,
            preconditionCount <= bytes.count
        else { return nil }
        options.prompts = prompts
        for _ in 0..<preconditionCount {
            guard let test = readString(), let location = readLocation(), let message = readOptionalString() else {
                return nil
            }
            options.preconditions.append(
                TaskOptions.Precondition(test: Located(value: test, location: location), message: message)
            )
        }
        guard let runsEveryTime = readBool(), let failureCount = readInteger(), failureCount >= 0,
            failureCount <= bytes.count
        else { return nil }
        options.runsEveryTime = runsEveryTime
        for _ in 0..<failureCount {
            guard let code = readString(), let message = readString(), let hasLocation = readBool() else { return nil }
            var location: SourceLocation?
            if hasLocation {
                guard let place = readLocation() else { return nil }
                location = place
            }
            options.deferredErrors.append(TaskOptions.DeferredError(code: code, message: message, location: location))
        }
        guard let requiredCount = readInteger(), requiredCount >= 0, requiredCount <= bytes.count else { return nil }
        for _ in 0..<requiredCount {
            guard let name = readString(), let hasAllowed = readBool() else { return nil }
            var allowed: [String]?
            if hasAllowed {
                guard let values = readStrings() else { return nil }
                allowed = values
            }
            guard let location = readLocation() else { return nil }
            options.requiredVariables.append(
                TaskOptions.RequiredVariable(name: name, allowed: allowed, location: location)
            )
        }
        guard let commandCount = readInteger(), commandCount >= 0, commandCount <= bytes.count else { return nil }
        for _ in 0..<commandCount {
            guard let isSilent = readBool(), let ignoresError = readBool(), let shellOptions = readShellOptions(),
                let isDeferred = readBool(), let condition = readLocated(), condition.count <= 1,
                let hasPlatforms = readBool()
            else {
                return nil
            }
            var command = CommandOptions(isSilent: isSilent, ignoresError: ignoresError)
            command.shellOptions = shellOptions
            command.isDeferred = isDeferred
            command.condition = condition.first
            if hasPlatforms {
                guard let platforms = readStrings() else { return nil }
                command.platforms = platforms
            }
            guard let timeout = readDuration(), let deferredCall = readInteger() else { return nil }
            command.timeout = timeout
            if deferredCall >= 0 { command.deferredCall = deferredCall }
            guard let hasLoop = readBool() else { return nil }
            if hasLoop {
                guard let name = readString(), let kind = readByte() else { return nil }
                let items: CommandLoop.Items
                switch kind {
                case 0:
                    guard let values = readStrings() else { return nil }
                    items = .list(values)
                case 1:
                    guard let variable = readString(), let split = readOptionalString() else { return nil }
                    items = .variable(variable, split: split)
                case 2: items = .sources
                case 3: items = .generates
                case 4:
                    guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
                    var rows: [(key: String, values: [String])] = []
                    for _ in 0..<count {
                        guard let key = readString(), let values = readStrings() else { return nil }
                        rows.append((key, values))
                    }
                    items = .matrix(rows)
                default: return nil
                }
                command.loop = CommandLoop(items: items, name: name)
            }
            options.commandOptions.append(command)
        }
        guard let partOf = readOptionalString(), let statusChecks = readLocated(),
            let shellOptions = readShellOptions(),
            let conditionHolds = readBool(), let fingerprint = readByte(), let isInteractive = readBool(),
            let failureIgnored = readBool(), let timeout = readDuration(),
            let deferralBody = readOptionalString(), let isDeferredCommand = readBool(), let hasRare = readBool()
        else {
            return nil
        }
        if hasRare {
            guard let guardedWork = readStrings(), let guardedBy = readOptionalString(), let recordsGuard = readBool(),
                let callTest = readLocated(), callTest.count <= 1, let conditionalBody = readOptionalString(),
                let watches = readBool()
            else {
                return nil
            }
            options.rareOptions = RareOptions(
                guardedWork: guardedWork,
                guardedBy: guardedBy,
                recordsGuard: recordsGuard,
                callTest: callTest.first,
                conditionalBody: conditionalBody,
                watches: watches
            )
        }
        options.timeout = timeout
        options.isInteractive = isInteractive
        options.failureIgnored = failureIgnored
        options.deferralBody = deferralBody
        options.isDeferredCommand = isDeferredCommand
        options.fingerprint = TaskOptions.Fingerprint(rawValue: fingerprint)
        options.partOf = partOf
        options.statusChecks = statusChecks
        options.shellOptions = shellOptions
        options.conditionHolds = conditionHolds
        return options
    }

    /// A `timeout:` as the writer writes it: `.some(nil)` for none, `nil` when the
    /// bytes don't hold one.
    mutating func readDuration() -> GoDuration?? {
        guard let written = readStrings(), written.count <= 1 else { return nil }
        guard let text = written.first else { return .some(nil) }
        return GoDuration(text).map { .some($0) }
    }

    mutating func readShellOptions() -> ShellOptions? {
        guard let posix = readStrings(), let bash = readStrings() else { return nil }
        var options = ShellOptions()
        options.posix = posix
        options.bash = bash
        return options
    }

    mutating func readVariables(depth: Int = 0) -> [String: TemplateValue]? {
        guard depth < 64, let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
        var result: [String: TemplateValue] = [:]
        result.reserveCapacity(count)
        for _ in 0..<count {
            guard let key = readString(), let value = readValue(depth: depth + 1) else { return nil }
            result[key] = value
        }
        return result
    }

    mutating func readValue(depth: Int) -> TemplateValue? {
        guard depth < 64, let tag = readByte() else { return nil }
        switch tag {
        case 0: return .null
        case 1: return .bool(true)
        case 2: return .bool(false)
        case 3: return readUInt64().map { .int(Int(Int64(bitPattern: $0))) }
        case 4: return readUInt64().map { .float(Double(bitPattern: $0)) }
        case 5: return readString().map(TemplateValue.string)
        case 6:
            guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
            var items: [TemplateValue] = []
            for _ in 0..<count {
                guard let item = readValue(depth: depth + 1) else { return nil }
                items.append(item)
            }
            return .list(items)
        case 7: return readVariables(depth: depth + 1).map(TemplateValue.map)
        case 8:
            guard let seconds = readInteger(), let nanoseconds = readInteger(), let offset = readInteger(),
                let zone = readString()
            else { return nil }
            return .time(TemplateTime(seconds: seconds, nanoseconds: nanoseconds, offset: offset, zone: zone))
        default: return nil
        }
    }

    mutating func readConfiguration(depth: Int = 0) -> ConfigurationValue? {
        guard depth < 64, let location = readLocation(), let tag = readInteger() else { return nil }
        switch tag {
        case 0: return ConfigurationValue(.null, at: location)
        case 1: return readString().map { ConfigurationValue(.scalar($0), at: location) }
        case 2:
            guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
            var items: [ConfigurationValue] = []
            for _ in 0..<count {
                guard let item = readConfiguration(depth: depth + 1) else { return nil }
                items.append(item)
            }
            return ConfigurationValue(.list(items), at: location)
        case 3:
            guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
            var entries: [(key: String, keyLocation: SourceLocation, value: ConfigurationValue)] = []
            for _ in 0..<count {
                guard let key = readString(), let keyLocation = readLocation(),
                    let value = readConfiguration(depth: depth + 1)
                else { return nil }
                entries.append((key, keyLocation, value))
            }
            return ConfigurationValue(.map(entries), at: location)
        default: return nil
        }
    }

    /// The model ``BinaryWriter/write(_:)-(Taskfile)`` wrote, read from just after the header of
    /// the cache at `cachePath`: everything but the task records, which are decoded as they are
    /// read (``TaskList``); each record's bounds are checked now.
    mutating func readTaskfile(cachePath: String) -> Taskfile? {
        guard let sharedStrings = readStrings() else { return nil }
        useSharedStrings(sharedStrings)
        let bodyStart = offset
        guard let path = readString(), let root = readString(), let version = readString(),
            let fileCount = readInteger(), fileCount >= 0, fileCount <= bytes.count
        else { return nil }
        var files: [String] = []
        for _ in 0..<fileCount {
            guard let file = readString() else { return nil }
            files.append(file)
        }
        guard let resourceCount = readInteger(), resourceCount >= 0, resourceCount <= bytes.count else { return nil }
        var resources: [ResourceDefinition] = []
        for _ in 0..<resourceCount {
            guard let name = readString(), let width = readInteger(), let location = readLocation() else { return nil }
            resources.append(ResourceDefinition(name: name, width: width, location: location))
        }
        guard let plugins = readLocated(), let hookCount = readInteger(), hookCount >= 0, hookCount < 64 else {
            return nil
        }
        var hooks: [String: [Located<String>]] = [:]
        for _ in 0..<hookCount {
            guard let name = readString(), let tasks = readLocated() else { return nil }
            hooks[name] = tasks
        }
        guard let hasOutputGroup = readBool() else { return nil }
        var outputGroup: OutputGroup?
        if hasOutputGroup {
            guard let begin = readOptionalString(), let end = readOptionalString(), let onlyFailures = readBool() else {
                return nil
            }
            outputGroup = OutputGroup()
            outputGroup?.begin = begin
            outputGroup?.end = end
            outputGroup?.showsOnlyFailures = onlyFailures
        }
        guard let secrets = readStrings(), let watchInterval = readDuration(), let hasRemote = readBool() else {
            return nil
        }
        var remote: RemoteSettings?
        if hasRemote {
            guard let host = readString(), let port = readInteger(), let instance = readString(),
                let readOnly = readBool(), let nanoseconds = readInteger(),
                var endpoint = RemoteEndpoint(url: "grpc://\(host.contains(":") ? "[\(host)]" : host):\(port)")
            else { return nil }
            endpoint.instance = instance
            remote = RemoteSettings(endpoint: endpoint, readOnly: readOnly, timeout: .nanoseconds(nanoseconds))
        }
        guard let variableTableCount = readInteger(), variableTableCount >= 0, variableTableCount <= bytes.count else {
            return nil
        }
        var variableTables: [[String: TemplateValue]] = []
        for _ in 0..<variableTableCount {
            guard let table = readVariables() else { return nil }
            variableTables.append(table)
        }
        guard let tableCount = readInteger(), tableCount >= 0, tableCount <= bytes.count else { return nil }
        var tables: [[String: String]] = []
        for _ in 0..<tableCount {
            guard let table = readDictionary() else { return nil }
            tables.append(table)
        }
        guard let taskCount = readInteger(), taskCount >= 0, taskCount <= bytes.count,
            let outlineWord = readUInt64(), outlineWord <= UInt64(bytes.count - bodyStart)
        else { return nil }
        let recordsStart = offset
        let outlineStart = bodyStart + Int(outlineWord)
        guard outlineStart >= recordsStart else { return nil }
        offset = outlineStart
        guard let outline = readOutline(taskCount: taskCount, recordsStart: recordsStart, recordsEnd: outlineStart)
        else { return nil }
        guard offset == bytes.count else { return nil }
        let records = CachedTaskRecords(
            path: cachePath,
            bytes: bytes,
            sharedStrings: sharedStrings,
            variableTables: variableTables,
            environmentTables: tables,
            starts: outline.starts,
            end: outlineStart
        )
        var taskfile = Taskfile(
            path: path,
            root: root,
            version: version,
            resources: resources,
            tasks: TaskList(records: records, outline: outline.outline),
            files: files,
            plugins: plugins,
            hooks: hooks
        )
        taskfile.outputGroup = outputGroup
        taskfile.watchInterval = watchInterval
        taskfile.remote = remote
        taskfile.secrets = SecretMask(values: secrets)
        return taskfile
    }

    /// The outline of `taskCount` tasks, and where each one's record starts: every record inside
    /// `recordsStart..<recordsEnd`, in order; every dependency a task's position.
    private mutating func readOutline(taskCount: Int, recordsStart: Int, recordsEnd: Int) -> (
        outline: TaskOutline, starts: [Int]
    )? {
        var outline = TaskOutline(reservingCapacity: taskCount)
        var starts: [Int] = []
        starts.reserveCapacity(taskCount)
        var previous = recordsStart
        for _ in 0..<taskCount {
            guard let length = readInteger(), length >= 0, previous + length < recordsEnd,
                let name = readString(), let rawFlags = readInteger(), rawFlags >= 0, rawFlags <= Int(UInt16.max),
                let dependencyCount = readInteger(), dependencyCount >= 0, dependencyCount <= bytes.count
            else { return nil }
            previous += length
            starts.append(previous)
            for _ in 0..<dependencyCount {
                guard let dependency = readInteger(), dependency >= 0, dependency < taskCount else { return nil }
                outline.addDependency(Int32(dependency))
            }
            guard let aliases = readStrings() else { return nil }
            outline.append(name: name, flags: TaskOutline.Flags(rawValue: UInt16(rawFlags)), aliases: aliases)
        }
        guard let kindCount = readInteger(), kindCount >= 0, kindCount <= bytes.count else { return nil }
        for _ in 0..<kindCount {
            guard let name = readSharedString(), let firstTask = readInteger(), firstTask >= 0, firstTask < taskCount
            else { return nil }
            outline.addKind(name, firstTask: firstTask)
        }
        return (outline, starts)
    }

    /// One task's record, as ``BinaryWriter/writeBody(_:)`` wrote it, given the tables it refers to.
    mutating func readTask(variableTables: [[String: TemplateValue]], environmentTables tables: [[String: String]])
        -> TaskDefinition?
    {
        guard let name = readString(), let location = readLocation(), let summary = readOptionalString(),
            let dependencies = readLocated(), let calls = readLocated(), let commands = readLocated(),
            let sources = readLocated(),
            let generates = readLocated(), let variablesIndex = readInteger(),
            variableTables.indices.contains(variablesIndex),
            let sourcesAsWritten = readBool()
        else { return nil }
        var renderedSources: [String]?
        if !sourcesAsWritten {
            guard let count = readInteger(), count >= 0, count <= bytes.count else { return nil }
            renderedSources = []
            for _ in 0..<count {
                guard let pattern = readString() else { return nil }
                renderedSources?.append(pattern)
            }
        }
        guard let environmentIndex = readInteger(), tables.indices.contains(environmentIndex),
            let directory = readSharedString(), let claims = readLocated(), let each = readBool(),
            let batch = readInteger(),
            let kindName = readSharedString(), let kindLocation = readLocation(), let hasConfiguration = readBool()
        else { return nil }
        var configuration: ConfigurationValue?
        if hasConfiguration {
            guard let value = readConfiguration() else { return nil }
            configuration = value
        }
        guard let allowsOutsideRoot = readBool(), let depfileText = readOptionalString() else { return nil }
        var depfile: Located<String>?
        if let depfileText {
            guard let depfileLocation = readLocation() else { return nil }
            depfile = Located(value: depfileText, location: depfileLocation)
        }
        guard let keepsDepfile = readBool(), let file = readSharedString(), let options = readOptions() else {
            return nil
        }
        return TaskDefinition(
            name: name,
            location: location,
            summary: summary,
            dependencies: dependencies,
            calls: calls,
            commands: commands,
            sources: sources,
            generates: generates,
            variables: variableTables[variablesIndex],
            renderedSources: renderedSources,
            environment: tables[environmentIndex],
            directory: directory,
            resources: claims,
            each: each ? .sources : .none,
            batchSize: batch > 0 ? batch : nil,
            kind: Located(value: kindName, location: kindLocation),
            pluginConfiguration: configuration,
            allowsOutsideRoot: allowsOutsideRoot,
            depfile: depfile,
            keepsDepfile: keepsDepfile,
            file: file,
            options: options
        )
    }
}

/// The task records of a Taskfile cache, kept to be decoded one at a time (``TaskList``): the
/// file's bytes, the shared strings and tables the records refer to, and where each starts.
///
/// Threading: a value type.
struct CachedTaskRecords: Sendable {
    /// The cache file, for messages.
    let path: String
    let bytes: [UInt8]
    let sharedStrings: [String]
    let variableTables: [[String: TemplateValue]]
    let environmentTables: [[String: String]]
    /// Where each record starts; each ends where the next starts, the last at ``end``.
    let starts: [Int]
    let end: Int

    var count: Int { starts.count }

    /// The task whose record is at `position`, or `nil` when the record doesn't read back whole.
    func definition(at position: Int) -> TaskDefinition? {
        var reader = BinaryReader(bytes: bytes, sharedStrings: sharedStrings)
        reader.offset = starts[position]
        let definition = reader.readTask(variableTables: variableTables, environmentTables: environmentTables)
        return reader.offset == (position + 1 < starts.count ? starts[position + 1] : end) ? definition : nil
    }

    /// Removes the cache file (a record didn't read back).
    func discard() { unlink(path) }
}
