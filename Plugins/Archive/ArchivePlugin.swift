import CKilnZlib
import KilnJobs
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// The `archive` task kind: packs files and directories into a `.tar.gz`.
///
/// ```yaml
/// package:
///   plugin: archive
///   sources: [build/calc, include/calc.h]
///   generates: [dist/calc.tar.gz]
///   with:
///     output: dist/calc.tar.gz      # required
///     files: [build/calc, include]  # required: files, directories (recursively) or globs
///     prefix: calc-1.0              # optional: a directory every entry goes under
///     level: 9                      # optional: gzip level 1–9 (default 6)
/// ```
///
/// Archives are reproducible: entries in path order, modification times, owners and the gzip
/// header's time zeroed, so the same files give the same bytes (and dependents of an unchanged
/// archive don't rerun). Jobs are disk-bound: by default they hold the `disk` queue of the device
/// the archive is written to.
///
/// Threading: a value type; safe from any thread.
struct ArchiveKind: TaskKind {
    struct Configuration: Sendable {
        var output: String
        var files: [String]
        var prefix: String
        var level: Int
    }

    let name = "archive"
    let version = "1"

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        try value.rejectUnknownKeys(["output", "files", "prefix", "level"], in: "the archive plugin's 'with'")
        guard let output = value["output"] else {
            throw TaskConfigurationError("the archive plugin needs 'output: PATH.tar.gz' in 'with'", at: value.location)
        }
        guard let files = value["files"] else {
            throw TaskConfigurationError("the archive plugin needs 'files: [PATH, …]' in 'with'", at: value.location)
        }
        let list = try files.requireStrings("'files'")
        if list.isEmpty {
            throw TaskConfigurationError("'files' is empty: name at least one file or directory", at: files.location)
        }
        var level = 6
        if let node = value["level"] {
            level = try node.requireInteger("'level'")
            guard (1...9).contains(level) else {
                throw TaskConfigurationError(
                    "'level' must be 1 (fastest) to 9 (smallest), not \(level)",
                    at: node.location
                )
            }
        }
        let prefix = try value["prefix"]?.requireString("'prefix'") ?? ""
        if prefix.hasPrefix("/") || prefix.split(separator: "/").contains("..") {
            throw TaskConfigurationError(
                "'prefix' must be a relative directory without '..'",
                at: value["prefix"]?.location
            )
        }
        return Configuration(output: try output.requireString("'output'"), files: list, prefix: prefix, level: level)
    }

    func summary(of configuration: Configuration, request: JobRequest) -> String {
        "archive \(configuration.files.map(request.display).joined(separator: " ")) → \(request.display(configuration.output))"
    }

    func resources(of configuration: Configuration, request: JobRequest) -> [String] { ["disk"] }

    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        var files: [String] = []
        for file in configuration.files { files.append(try request.render(file)) }
        return ArchiveJob(
            output: absolute(try request.render(configuration.output), in: request.directory),
            files: files,
            prefix: try request.render(configuration.prefix),
            level: configuration.level,
            directory: request.directory,
            context: context
        )
    }
}

/// Writes one archive (synchronous: it overrides `main`).
final class ArchiveJob: Job, @unchecked Sendable {
    private let output: String
    private let files: [String]
    private let prefix: String
    private let level: Int
    private let directory: String
    private let context: TaskContext

    init(output: String, files: [String], prefix: String, level: Int, directory: String, context: TaskContext) {
        self.output = output
        self.files = files
        self.prefix = prefix
        self.level = level
        self.directory = directory
        self.context = context
        super.init()
    }

    override func main() throws {
        var entries: [Entry] = []
        for pattern in files {
            let matches = Walk.expand(pattern, in: directory)
            if matches.isEmpty { throw TaskFailure("'\(pattern)' matches no file in \(directory)") }
            for match in matches { try Walk.collect(match, base: directory, into: &entries) }
        }
        entries.sort { $0.name < $1.name }
        var seen = Set<String>()
        entries = entries.filter { seen.insert($0.name).inserted }

        try TaskFiles.createParentDirectories(of: output)
        let temporary = output + ".\(getpid()).tmp"
        guard let file = gzopen(temporary, "wb\(level)") else {
            throw TaskFailure("can't create \(temporary): \(TaskFiles.lastError)")
        }
        var closed = false
        defer {
            if !closed { gzclose(file) }
            unlink(temporary)
        }
        for entry in entries {
            if isCancelled { throw TaskFailure("stopped") }
            let name = prefix.isEmpty ? entry.name : prefix + "/" + entry.name
            try write(header: try TarHeader.make(name: name, entry: entry), to: file)
            if entry.kind == .file { try copy(entry.path, size: entry.size, to: file) }
        }
        try write(bytes: [UInt8](repeating: 0, count: 1024), to: file)  // two empty blocks end the archive
        closed = true
        let status = gzclose(file)
        guard status == Z_OK else { throw TaskFailure("can't finish \(output): zlib error \(status)") }
        guard rename(temporary, output) == 0 else {
            throw TaskFailure("can't move the archive to \(output): \(TaskFiles.lastError)")
        }
        let shown = TaskFiles.shown(output, relativeTo: context.projectRoot)
        context.log("archived \(entries.count) entr\(entries.count == 1 ? "y" : "ies") into \(shown)")
    }

    private func write(header: [UInt8], to file: gzFile) throws {
        try write(bytes: header, to: file)
    }

    private func write(bytes: [UInt8], to file: gzFile) throws {
        let status = bytes.withUnsafeBytes { kiln_gz_write_all(file, $0.baseAddress, UInt($0.count)) }
        if status != 0 { throw TaskFailure("can't write \(output): zlib error \(status)") }
    }

    private func copy(_ path: String, size: Int, to file: gzFile) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw TaskFailure("can't read \(path): \(TaskFiles.lastError)") }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var copied = 0
        while copied < size {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, min($0.count, size - copied)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw TaskFailure("\(path) changed while it was archived (it shrank)") }
            try write(bytes: Array(buffer[0..<count]), to: file)
            copied += count
        }
        let padding = (512 - size % 512) % 512
        if padding > 0 { try write(bytes: [UInt8](repeating: 0, count: padding), to: file) }
    }
}

/// A file or directory to archive.
struct Entry {
    enum Kind { case file, directory, symlink }
    var name: String
    var path: String
    var kind: Kind
    var mode: UInt32
    var size: Int
    var linkTarget: String = ""
}

/// Expanding patterns and walking directories.
enum Walk {
    /// `pattern` (relative to `base`, possibly with `*`, `?`, `[…]` in its last component) → paths.
    static func expand(_ pattern: String, in base: String) -> [String] {
        let full = absolute(pattern, in: base)
        let last = full.split(separator: "/").last.map(String.init) ?? full
        guard last.contains(where: { "*?[".contains($0) }) else {
            var info = stat()
            return lstat(full, &info) == 0 ? [full] : []
        }
        let parent = String(full.dropLast(last.count + 1))
        guard let handle = opendir(parent.isEmpty ? "/" : parent) else { return [] }
        defer { closedir(handle) }
        var result: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != "..", fnmatch(last, name, FNM_PERIOD) == 0 { result.append(parent + "/" + name) }
        }
        return result.sorted()
    }

    /// Adds `path` — and, for a directory, everything under it — to `entries`, named relative to `base`.
    static func collect(_ path: String, base: String, into entries: inout [Entry]) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw TaskFailure("can't read \(path): \(TaskFiles.lastError)") }
        let name = relative(path, to: base)
        guard !name.hasPrefix("../"), name != ".." else {
            throw TaskFailure("\(path) is outside the task's directory \(base); archive entries must be inside it")
        }
        let mode = UInt32(info.st_mode & 0o7777)
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            entries.append(Entry(name: name, path: path, kind: .file, mode: mode, size: Int(info.st_size)))
        case S_IFLNK:
            var buffer = [CChar](repeating: 0, count: 4096)
            let count = readlink(path, &buffer, buffer.count - 1)
            let target =
                count > 0 ? String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            entries.append(Entry(name: name, path: path, kind: .symlink, mode: mode, size: 0, linkTarget: target))
        case S_IFDIR:
            if name != "." { entries.append(Entry(name: name, path: path, kind: .directory, mode: mode, size: 0)) }
            guard let handle = opendir(path) else { throw TaskFailure("can't list \(path): \(TaskFiles.lastError)") }
            var children: [String] = []
            while let entry = readdir(handle) {
                let child = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if child != ".", child != ".." { children.append(child) }
            }
            closedir(handle)
            for child in children.sorted() { try collect(path + "/" + child, base: base, into: &entries) }
        default:
            throw TaskFailure("\(path) is not a file, directory or symbolic link")
        }
    }
}

/// ustar headers (POSIX.1-1988), with long names split into prefix and name.
enum TarHeader {
    static func make(name: String, entry: Entry) throws -> [UInt8] {
        var block = [UInt8](repeating: 0, count: 512)
        let fullName = entry.kind == .directory ? name + "/" : name
        let bytes = Array(fullName.utf8)
        var namePart = bytes
        var prefixPart: [UInt8] = []
        if bytes.count > 100 {
            // Split at a '/' so the name is ≤ 100 bytes and the prefix ≤ 155.
            guard
                let split = bytes.indices.reversed().first(where: {
                    bytes[$0] == UInt8(ascii: "/") && bytes.count - $0 - 1 <= 100 && $0 <= 155
                })
            else {
                throw TaskFailure(
                    "the path \(fullName) is too long for a tar archive (ustar allows 255 bytes, split at a '/')"
                )
            }
            prefixPart = Array(bytes[..<split])
            namePart = Array(bytes[(split + 1)...])
        }
        func put(_ field: [UInt8], at offset: Int) {
            for (index, byte) in field.enumerated() { block[offset + index] = byte }
        }
        func octal(_ value: Int, width: Int) -> [UInt8] {
            let digits = String(value, radix: 8)
            return Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8) + [0]
        }
        put(namePart, at: 0)
        put(octal(Int(entry.mode), width: 8), at: 100)
        put(octal(0, width: 8), at: 108)  // uid
        put(octal(0, width: 8), at: 116)  // gid
        put(octal(entry.kind == .file ? entry.size : 0, width: 12), at: 124)
        put(octal(0, width: 12), at: 136)  // mtime: zero, so archives are reproducible
        put(Array("        ".utf8), at: 148)  // checksum placeholder
        block[156] =
            switch entry.kind {
            case .file: UInt8(ascii: "0")
            case .symlink: UInt8(ascii: "2")
            case .directory: UInt8(ascii: "5")
            }
        if entry.kind == .symlink {
            let target = Array(entry.linkTarget.utf8)
            guard target.count <= 100 else {
                throw TaskFailure("the link target of \(fullName) is longer than 100 bytes")
            }
            put(target, at: 157)
        }
        put(Array("ustar".utf8) + [0], at: 257)
        put(Array("00".utf8), at: 263)
        put(prefixPart, at: 345)
        let checksum = block.reduce(0) { $0 + Int($1) }
        put(octal(checksum, width: 7) + [UInt8(ascii: " ")], at: 148)
        return block
    }
}

func absolute(_ path: String, in directory: String) -> String {
    path.hasPrefix("/") ? path : directory + "/" + path
}

func relative(_ path: String, to base: String) -> String {
    if path == base { return "." }
    if path.hasPrefix(base + "/") { return String(path.dropFirst(base.count + 1)) }
    return "../" + path
}

/// The plugin's one C entry point.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "archive", version: "1.0.0")
        plugin.register(ArchiveKind())
    }
}
