import KilnPluginAPI

/// The fixed fields of a ``TaskDefinition``, and its `cmds:`, `sources:` and `generates:` packed
/// after them in the same allocation: one object a task, shared by its copies.
///
/// A run holds every task of its plan. As a class of fields beside an array of `Located<String>`,
/// a `cp` task took two objects and a string (its command) — 154 + 152 + 64 bytes asked of
/// `malloc` (massif, a 10k-task run: 3.6 MB of its 10.7 MB heap). Here the lists take 12 bytes an
/// entry and their text, and the fields that most tasks have alike take nothing: the file is the
/// key's unless ``Rare`` says otherwise.
///
/// Packed entries: each one's end in the text (`UInt32`), line and column (`Int32`), 12 bytes an
/// entry, then the text of every entry, one after another. An entry is made when read
/// (``LocatedList``): a command longer than 15 bytes allocates its string then.
///
/// Threading: immutable once ``make(_:entries:)`` returns it (its header is `let`s, its bytes are
/// written only there), so any thread may read it. `ManagedBuffer` can't be `Sendable`: values
/// hold it through ``Shared``.
final class TaskStorage: ManagedBuffer<TaskStorage.Fields, UInt8> {
    /// A storage, to hold in a `Sendable` value. `@unchecked Sendable`: no lock, as nothing
    /// writes a storage once made.
    struct Shared: @unchecked Sendable {
        let storage: TaskStorage
    }

    /// The fields, as ``make(_:entries:)`` takes them and the header keeps them.
    struct Fields {
        let name: String
        let location: SourceLocation
        /// Where the sources start among the entries, the outputs, and how many there are.
        let sourcesStart: Int32
        let generatesStart: Int32
        let entryCount: Int32
        let each: TaskDefinition.Each
        /// Worked out once: read for every job.
        let runsHere: Bool
        let hasPlanChecks: Bool
        /// `nil` when the patterns have no template (most tasks): they are `sources` as written.
        let renderedSources: [String]?
        let environment: [String: String]
        let directory: String
        /// go-task's settings, `nil` when they are the defaults (most tasks): a task copies one
        /// reference, not a dozen fields.
        let options: TaskOptionsBox?
        /// What few tasks of a large Taskfile say, `nil` when they say none of it.
        let rare: Rare?
    }

    /// `calls`, `desc:`, `resources:`, `batch:`, a kind other than `shell` where the task is,
    /// `with:`, `allow-outside-root:`, `depfile:` and `keep-depfile:`; the file the task was
    /// defined in when it isn't its key's; its lists when one of them was written in another
    /// file (they are packed only when all are in the key's).
    final class Rare: Sendable {
        let calls: [Located<String>]
        let summary: String?
        let resources: [Located<String>]
        let batchSize: Int?
        /// `nil`: `shell`, at the task's key.
        let kind: Located<String>?
        let pluginConfiguration: ConfigurationValue?
        let allowsOutsideRoot: Bool
        let depfile: Located<String>?
        let keepsDepfile: Bool
        /// `nil`: the key's file.
        let file: String?
        /// `nil`: packed.
        let unpackedEntries: [Located<String>]?

        init(
            calls: [Located<String>],
            summary: String?,
            resources: [Located<String>],
            batchSize: Int?,
            kind: Located<String>?,
            pluginConfiguration: ConfigurationValue?,
            allowsOutsideRoot: Bool,
            depfile: Located<String>?,
            keepsDepfile: Bool,
            file: String?,
            unpackedEntries: [Located<String>]?
        ) {
            self.calls = calls
            self.summary = summary
            self.resources = resources
            self.batchSize = batchSize
            self.kind = kind
            self.pluginConfiguration = pluginConfiguration
            self.allowsOutsideRoot = allowsOutsideRoot
            self.depfile = depfile
            self.keepsDepfile = keepsDepfile
            self.file = file
            self.unpackedEntries = unpackedEntries
        }
    }

    private static let entrySize = 12

    /// A storage holding `fields` and `entries` (`cmds:`, then `sources:`, then `generates:`):
    /// packed when `rare` holds no unpacked entries, none otherwise.
    static func make(_ fields: Fields, entries: [Located<String>]) -> TaskStorage {
        let packs = fields.rare?.unpackedEntries == nil
        var textLength = 0
        if packs { for entry in entries { textLength += entry.value.utf8.count } }
        let textStart = entries.count * entrySize
        let made = create(minimumCapacity: packs ? textStart + textLength : 0) { _ in fields }
        let storage = unsafeDowncast(made, to: TaskStorage.self)
        guard packs, !entries.isEmpty else { return storage }
        storage.withUnsafeMutablePointerToElements { elements in
            let buffer = UnsafeMutableRawBufferPointer(start: elements, count: textStart + textLength)
            var end = 0
            for (index, entry) in entries.enumerated() {
                var text = entry.value
                text.withUTF8 { utf8 in
                    if let base = utf8.baseAddress, !utf8.isEmpty {
                        buffer.baseAddress!.advanced(by: textStart + end).copyMemory(from: base, byteCount: utf8.count)
                    }
                    end += utf8.count
                }
                let at = index * entrySize
                buffer.storeBytes(of: UInt32(end), toByteOffset: at, as: UInt32.self)
                buffer.storeBytes(of: Int32(clamping: entry.location.line), toByteOffset: at + 4, as: Int32.self)
                buffer.storeBytes(of: Int32(clamping: entry.location.column), toByteOffset: at + 8, as: Int32.self)
            }
        }
        return storage
    }

    /// Whether `entries` can be packed for a task whose key is in `file`: each was written there,
    /// and their text fits the packed ends.
    static func canPack(_ entries: [Located<String>], in file: String) -> Bool {
        var length = 0
        for entry in entries {
            guard entry.location.file == file else { return false }
            length += entry.value.utf8.count
        }
        return length <= Int(UInt32.max)
    }

    /// The fields, read through the header's address: `header` is a stored `var` of the
    /// buffer, whose every read the runtime would check for exclusive access (callgrind, a
    /// 1k-task build: 4.2M more instructions than reading through the address).
    private func field<Value>(_ read: (borrowing Fields) -> Value) -> Value {
        withUnsafeMutablePointerToHeader { read($0.pointee) }
    }

    var name: String { field { $0.name } }
    var location: SourceLocation { field { $0.location } }
    var renderedSources: [String]? { field { $0.renderedSources } }
    var environment: [String: String] { field { $0.environment } }
    var directory: String { field { $0.directory } }
    var each: TaskDefinition.Each { field { $0.each } }
    var file: String { field { $0.rare?.file ?? $0.location.file } }
    var options: TaskOptionsBox? { field { $0.options } }
    var rare: Rare? { field { $0.rare } }
    var runsHere: Bool { field { $0.runsHere } }
    var hasPlanChecks: Bool { field { $0.hasPlanChecks } }
    var depfile: Located<String>? { field { $0.rare?.depfile } }
    /// Where the sources start among the entries, where the outputs start, and how many there are.
    private var bounds: (sources: Int, generates: Int, count: Int) {
        field { (Int($0.sourcesStart), Int($0.generatesStart), Int($0.entryCount)) }
    }

    var commandsInPlace: LocatedList { LocatedList(shared: Shared(storage: self), range: 0..<bounds.sources) }
    var sourcesInPlace: LocatedList {
        let bounds = bounds
        return LocatedList(shared: Shared(storage: self), range: bounds.sources..<bounds.generates)
    }
    var generatesInPlace: LocatedList {
        let bounds = bounds
        return LocatedList(shared: Shared(storage: self), range: bounds.generates..<bounds.count)
    }
    var commands: [Located<String>] { Array(commandsInPlace) }
    var sources: [Located<String>] { Array(sourcesInPlace) }
    var generates: [Located<String>] { Array(generatesInPlace) }

    /// The sources' text, as written (no place made for each).
    var sourceTexts: [String] {
        let bounds = bounds
        let range = bounds.sources..<bounds.generates
        if let unpacked = rare?.unpackedEntries { return unpacked[range].map(\.value) }
        guard !range.isEmpty else { return [] }
        let count = bounds.count
        return withUnsafeMutablePointerToElements { elements in
            range.map { Self.text(at: $0, count: count, elements) }
        }
    }

    /// The entry at `index` (of ``Fields/entryCount``).
    fileprivate func entry(at index: Int) -> Located<String> {
        if let unpacked = rare?.unpackedEntries { return unpacked[index] }
        let count = bounds.count
        let file = field { $0.location.file }
        return withUnsafeMutablePointerToElements { elements in
            let at = index * Self.entrySize
            let line = UnsafeRawPointer(elements).loadUnaligned(fromByteOffset: at + 4, as: Int32.self)
            let column = UnsafeRawPointer(elements).loadUnaligned(fromByteOffset: at + 8, as: Int32.self)
            return Located(
                value: Self.text(at: index, count: count, elements),
                location: SourceLocation(file: file, line: Int(line), column: Int(column))
            )
        }
    }

    /// The text of the packed entry at `index` of `count`, in `elements`.
    private static func text(at index: Int, count: Int, _ elements: UnsafeMutablePointer<UInt8>) -> String {
        let raw = UnsafeRawPointer(elements)
        let at = index * entrySize
        let start = index == 0 ? 0 : Int(raw.loadUnaligned(fromByteOffset: at - entrySize, as: UInt32.self))
        let end = Int(raw.loadUnaligned(fromByteOffset: at, as: UInt32.self))
        return String(
            decoding: UnsafeRawBufferPointer(start: raw + count * entrySize + start, count: end - start),
            as: UTF8.self
        )
    }
}

/// Some of a task's entries — its `cmds:`, its `sources:` or its `generates:` — read in order
/// without making an array: each entry is made as it is read. Positions count from 0.
///
/// Threading: a value type; safe to pass between threads.
struct LocatedList: RandomAccessCollection, Sendable {
    fileprivate let shared: TaskStorage.Shared
    fileprivate let range: Range<Int>

    var startIndex: Int { 0 }
    var endIndex: Int { range.count }

    subscript(position: Int) -> Located<String> {
        precondition(position >= 0 && position < range.count, "LocatedList: position out of range")
        return shared.storage.entry(at: range.lowerBound + position)
    }
}
