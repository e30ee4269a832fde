import CKilnZlib
import KilnJobs
import KilnPluginAPI

#if canImport(Glibc)
    import Glibc
#endif

/// The `compress` task kind: gzip-compresses files at the highest level, the way a web project
/// precompresses its static assets (`app.js` → `app.js.gz`, served with `gzip_static`) or a C
/// project ships compressed data. CPU-bound: its jobs hold `cpu` by default. Usually an
/// `each: sources` task, so files compress in parallel, one job each:
///
/// ```yaml
/// assets:
///   plugin: compress
///   each: sources
///   sources: ['web/*.js', 'web/*.css']
///   generates: ['dist/{{.source}}.gz']
///   with:
///     level: 9                       # optional, 1–9 (default 9)
///     keep-smaller-only: false       # optional: skip files gzip wouldn't shrink (no output written)
/// ```
///
/// Each input is written to the output at the same position in `generates` (or, without one,
/// beside the input with `.gz` added). Outputs are reproducible: no name or time in the gzip header.
///
/// Threading: a value type; safe from any thread.
struct CompressKind: TaskKind {
    struct Configuration: Sendable {
        var level: Int
        var keepSmallerOnly: Bool
    }

    let name = "compress"
    let version = "1"

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError)
        -> Configuration
    {
        try value.rejectUnknownKeys(["level", "keep-smaller-only"], in: "the compress plugin's 'with'")
        var level = 9
        if let node = value["level"] {
            level = try node.requireInteger("'level'")
            guard (1...9).contains(level) else {
                throw TaskConfigurationError(
                    "'level' must be 1 (fastest) to 9 (smallest), not \(level)",
                    at: node.location
                )
            }
        }
        return Configuration(
            level: level,
            keepSmallerOnly: try value["keep-smaller-only"]?.requireBool("'keep-smaller-only'") ?? false
        )
    }

    func summary(of configuration: Configuration, request: JobRequest) -> String {
        "gzip -\(configuration.level) " + request.inputs.joined(separator: " ")
    }

    func makeJob(configuration: Configuration, request: JobRequest, context: TaskContext) throws -> Job {
        guard !request.inputs.isEmpty else { throw TaskFailure("the compress task has no sources to compress") }
        if !request.outputs.isEmpty, request.outputs.count != request.inputs.count {
            throw TaskFailure(
                "the compress task has \(request.inputs.count) input(s) but \(request.outputs.count) output(s) in 'generates'; give one output per input, or none (then FILE.gz)"
            )
        }
        let pairs = request.inputs.enumerated().map { index, input in
            (
                input: path(input, in: request.directory),
                output: path(request.outputs.isEmpty ? input + ".gz" : request.outputs[index], in: request.directory)
            )
        }
        return CompressJob(pairs: pairs, configuration: configuration, context: context)
    }

    private func path(_ path: String, in directory: String) -> String {
        path.hasPrefix("/") ? path : directory + "/" + path
    }
}

/// Compresses its files one after another (synchronous).
final class CompressJob: Job, @unchecked Sendable {
    private let pairs: [(input: String, output: String)]
    private let configuration: CompressKind.Configuration
    private let context: TaskContext

    init(pairs: [(input: String, output: String)], configuration: CompressKind.Configuration, context: TaskContext) {
        self.pairs = pairs
        self.configuration = configuration
        self.context = context
        super.init()
    }

    override func main() throws {
        for (input, output) in pairs {
            if isCancelled { throw TaskFailure("stopped") }
            try compress(input, to: output)
        }
    }

    private func compress(_ input: String, to output: String) throws {
        let source = open(input, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw TaskFailure("can't read \(input): \(TaskFiles.lastError)") }
        defer { close(source) }
        try TaskFiles.createParentDirectories(of: output)
        let temporary = output + ".\(getpid()).tmp"
        // zlib writes no file name and a zero time in the header: the same input gives the same bytes.
        guard let file = gzopen(temporary, "wb\(configuration.level)") else {
            throw TaskFailure("can't create \(temporary): \(TaskFiles.lastError)")
        }
        var closed = false
        defer {
            if !closed { gzclose(file) }
            unlink(temporary)
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 17)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw TaskFailure("can't read \(input): \(TaskFiles.lastError)") }
            if count == 0 { break }
            total += count
            let status = buffer.withUnsafeBytes { kiln_gz_write_all(file, $0.baseAddress, UInt(count)) }
            if status != 0 { throw TaskFailure("can't write \(output): zlib error \(status)") }
        }
        closed = true
        let status = gzclose(file)
        guard status == Z_OK else { throw TaskFailure("can't finish \(output): zlib error \(status)") }
        var info = stat()
        let compressed = stat(temporary, &info) == 0 ? Int(info.st_size) : 0
        if configuration.keepSmallerOnly, compressed >= total {
            context.log("\(shown(input)): not smaller compressed (\(total) → \(compressed) bytes), skipped")
            return
        }
        guard rename(temporary, output) == 0 else {
            throw TaskFailure("can't move the result to \(output): \(TaskFiles.lastError)")
        }
        context.log("\(shown(input)) → \(shown(output)): \(total) → \(compressed) bytes")
    }

    private func shown(_ path: String) -> String { TaskFiles.shown(path, relativeTo: context.projectRoot) }
}

/// The plugin's one C entry point.
@_cdecl("kiln_plugin_entry")
public func kilnPluginEntry(_ entry: UnsafeMutablePointer<KilnPluginEntry>) {
    entry.pointee.abi_version = kiln_plugin_abi_version()
    entry.pointee.register_kinds = { registrar in
        let plugin = PluginRegistrar.borrow(registrar)
        plugin.declare(name: "compress", version: "1.0.0")
        plugin.register(CompressKind())
    }
}
