import KilnPaths
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// The Taskfile cache (`.kiln/taskfile.cache`): a cached load is the same model as a fresh one,
/// and any change to a file the load read is seen.
@Suite struct TaskfileCacheTests {
    static let files = [
        "Taskfile.yml": """
        version: '3'
        vars:
          CC: cc
          CFLAGS: '-O2 {{.CC}}'
          TOKEN: {value: t0ken, secret: true}
        env:
          MODE: release
        resources:
          link: 1
          pool: {width: 3}
        includes:
          lib: lib
          extra:
            taskfile: missing.yml
            optional: true
        tasks:
          compile:
            desc: Compile
            each: sources
            batch: 8
            sources: ['src/*.c']
            generates: ['build/{{.source_stem}}.o']
            resources: [cpu, pool]
            cmds:
              - mkdir -p build
              - cmd: '{{.CC}} {{.CFLAGS}} -c {{.source}} -o {{.output}}'
                timeout: 5m
          link:
            aliases: [ln]
            deps: [compile, {task: 'lib:prepare'}]
            dir: out
            vars: {OUT: app}
            env: {MODE: debug}
            resources: link
            cmds: ['{{.CC}} -o {{.OUT}} ../build/*.o']
          archive:
            plugin: archive
            with:
              format: tgz
              files: [a, {b: c}]
            allow-outside-root: true
        """,
        "lib/Taskfile.yml": """
        version: '3'
        tasks:
          prepare: mkdir -p out
        """,
    ]

    /// ``files`` loaded without the cache, then from the cache (written by a load in between).
    private func freshAndCached(in directory: TemporaryDirectory) throws -> (fresh: Taskfile, cached: Taskfile) {
        for (path, text) in Self.files { try directory.write(path, text) }
        let path = directory.path("Taskfile.yml")
        let fresh = try TaskfileLoader(usesCache: false).load(path: path)
        _ = try TaskfileLoader(usesCache: true).load(path: path)  // writes the cache
        #expect(directory.exists(".kiln/taskfile.cache"))
        return (fresh, try TaskfileLoader(usesCache: true).load(path: path))
    }

    @Test func aCachedLoadIsTheSameModelAsAFreshLoad() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (fresh, cached) = try freshAndCached(in: directory)
        #expect(snapshot(cached) == snapshot(fresh))
        #expect(cached.secrets.values == ["t0ken"])
    }

    @Test func aCachedTaskIsDecodedOnlyWhenReadAndTheSavedOutlineIsTheOneItsDefinitionsMake() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (fresh, cached) = try freshAndCached(in: directory)
        #expect(cached.tasks.decodedCount == 0)
        #expect(cached.tasks.outline == TaskOutline(Array(fresh.tasks)))
        #expect(cached.tasks.outline.names == ["compile", "link", "archive", "lib:prepare"])
        #expect(cached.aliases == ["ln": "link"])
        #expect(cached.task(named: "ln")?.name == "link")
        #expect(cached.tasks[1].name == "link")
        #expect(cached.tasks.decodedCount == 1)
        #expect(cached.tasks.holdsRecords)
        #expect(snapshot(cached) == snapshot(fresh))
        #expect(cached.tasks.decodedCount == cached.tasks.count)
        // Every definition decoded: the file's bytes are let go of.
        #expect(!cached.tasks.holdsRecords)
    }

    @Test(
        "generated Taskfiles read back from the cache task by task: the same definitions, and the outline the definitions make"
    )
    func generatedTaskfilesReadBackFromTheCache() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-cache-fuzz")
        defer { directory.remove() }
        var compared = 0
        for index in stride(from: 0, to: TaskfileFuzzTests.count, by: 8) {
            var random = SeededGenerator(seed: 0xF00D + UInt64(index))
            let folder = "\(index)"
            for (name, text) in TaskfileFuzzer.files(using: &random) { try directory.write("\(folder)/\(name)", text) }
            let path = directory.path("\(folder)/Taskfile.yml")
            guard let fresh = try? TaskfileLoader(usesCache: false).load(path: path),
                (try? TaskfileLoader(usesCache: true).load(path: path)) != nil,
                directory.exists("\(folder)/.kiln/taskfile.cache")
            else { continue }
            let cached = try TaskfileLoader(usesCache: true).load(path: path)
            #expect(cached.tasks.decodedCount == 0, "case \(index)")
            #expect(cached.tasks.outline == TaskOutline(Array(fresh.tasks)), "case \(index)")
            #expect(
                TaskfileFuzzTests.canonical(Array(cached.tasks)) == TaskfileFuzzTests.canonical(Array(fresh.tasks)),
                "case \(index)"
            )
            compared += 1
        }
        #expect(compared >= 20, "too few generated Taskfiles load to compare: \(compared)")
    }

    @Test func aChangedIncludedFileIsReadAgainAndCheckedAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for (path, text) in Self.files { try directory.write(path, text) }
        let path = directory.path("Taskfile.yml")
        _ = try TaskfileLoader().load(path: path)
        try directory.write(
            "lib/Taskfile.yml",
            """
            version: '3'
            varz: {}
            tasks:
              prepare:
                cmds: [mkdir -p out]
            """
        )
        do {
            let taskfile = try TaskfileLoader().load(path: path)
            Issue.record("the changed include was not read: \(taskfile.tasks.map(\.name))")
        } catch {
            #expect(error.errors.map(\.code) == [.unknownKey])
            #expect(error.errors.first?.location?.file == directory.path("lib/Taskfile.yml"))
        }
    }

    @Test func anOptionalIncludeThatAppearsIsRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for (path, text) in Self.files { try directory.write(path, text) }
        let path = directory.path("Taskfile.yml")
        #expect(try TaskfileLoader().load(path: path).task(named: "extra:new") == nil)
        try directory.write(
            "missing.yml",
            """
            version: '3'
            tasks:
              new: echo new
            """
        )
        #expect(try TaskfileLoader().load(path: path).task(named: "extra:new") != nil)
    }

    /// The identity the up-to-date snapshot is keyed on is the hash of the header alone, read
    /// from the file's first bytes: the same as hashing the header of the whole file, read and
    /// checked, as before; a damaged model after the header doesn't change it (the load that
    /// needs the model checks it, and loads the Taskfile afresh); a damaged header does.
    @Test func theIdentityIsTheHeadersHashReadFromTheFirstBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // 3,000 tasks: a cache well past the first read's 64 KiB.
        var text = "version: '3'\ntasks:\n"
        for index in 0..<3000 { text += "  t\(index): {cmds: ['echo \(index)'], sources: [src/\(index).txt]}\n" }
        let path = try directory.write("Taskfile.yml", text)
        let root = directory.path("")
        _ = try TaskfileLoader().load(path: path)
        let cache = directory.path(".kiln/taskfile.cache")
        #expect(try Files.readBytes(cache).count > 2 * TaskfileCacheHeader.headerReadSize)
        let context = TaskfileContext.process
        let identity = TaskfileCache.identity(taskfilePath: path, root: root, context: context)
        #expect(identity != nil)
        #expect(identity == wholeFileIdentity(cache, taskfilePath: path, context: context))

        // A byte of the model changed: the same identity, and the model isn't trusted.
        var bytes = try Files.readBytes(cache)
        bytes[bytes.count - 100] ^= 0xFF
        #expect(Files.writeAtomically(cache, bytes: bytes))
        #expect(TaskfileCache.identity(taskfilePath: path, root: root, context: context) == identity)
        #expect(TaskfileCache.load(taskfilePath: path, root: root, context: context) == nil)
        // A byte of the header (the Taskfile's path) changed: no identity.
        bytes[TaskfileCacheHeader.magic.count + 2] ^= 0x01
        #expect(Files.writeAtomically(cache, bytes: bytes))
        #expect(TaskfileCache.identity(taskfilePath: path, root: root, context: context) == nil)
    }

    /// A header that goes on past the first read (it names 400 included files, each a long
    /// path: ~100 KB) is read whole, and gives the same identity.
    @Test func aHeaderLongerThanTheFirstReadIsReadWhole() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var text = "version: '3'\nincludes:\n"
        let long = String(repeating: "d", count: 200)
        for index in 0..<400 {
            text += "  i\(index): ./\(long)\(index)/Taskfile.yml\n"
            try directory.write("\(long)\(index)/Taskfile.yml", "version: '3'\ntasks:\n  t: echo \(index)\n")
        }
        text += "tasks:\n  default: echo top\n"
        let path = try directory.write("Taskfile.yml", text)
        _ = try TaskfileLoader().load(path: path)
        let cache = directory.path(".kiln/taskfile.cache")
        let context = TaskfileContext.process
        var reader = BinaryReader(bytes: Files.readSealed(cache, magic: TaskfileCacheHeader.magic)!)
        #expect(TaskfileCacheHeader.read(&reader, taskfilePath: path, holds: context.holds)?.count == 401)
        #expect(reader.offset > TaskfileCacheHeader.headerReadSize)
        let identity = TaskfileCache.identity(taskfilePath: path, root: directory.path(""), context: context)
        #expect(identity != nil)
        #expect(identity == wholeFileIdentity(cache, taskfilePath: path, context: context))
    }

    /// The identity as it was reached before the header was read alone: the whole file read,
    /// its checksum checked, the header hashed.
    private func wholeFileIdentity(_ cache: String, taskfilePath: String, context: TaskfileContext) -> ContentHash? {
        guard let bytes = Files.readSealed(cache, magic: TaskfileCacheHeader.magic) else { return nil }
        var reader = BinaryReader(bytes: bytes)
        guard TaskfileCacheHeader.read(&reader, taskfilePath: taskfilePath, holds: context.holds) != nil else {
            return nil
        }
        return ContentHash.of(bytes[0..<reader.offset])
    }

    /// Every public field of the model, as text.
    private func snapshot(_ taskfile: Taskfile) -> [String] {
        var lines = [
            "path \(taskfile.path)", "root \(taskfile.root)", "version \(taskfile.version)",
            "files \(taskfile.files)", "secrets \(taskfile.secrets.values)",
        ]
        lines += taskfile.resources.map { "resource \($0.name) \($0.width) \($0.location)" }
        for task in taskfile.tasks {
            lines += [
                "task \(task.name) at \(task.location) in \(task.file)",
                "  desc \(task.summary ?? "-")",
                "  deps \(task.dependencies.map(located))",
                "  cmds \(task.commands.map(located))",
                "  sources \(task.sources.map(located))",
                "  generates \(task.generates.map(located))",
                "  vars \(task.variables.sorted { $0.key < $1.key })",
                "  env \(task.environment.sorted { $0.key < $1.key })",
                "  dir \(task.directory)",
                "  resources \(task.resources.map(located))",
                "  each \(task.each) batch \(task.batchSize.map(String.init) ?? "-")",
                "  kind \(located(task.kind))",
                "  with \(task.pluginConfiguration.map(describe) ?? "-")",
                "  outside \(task.allowsOutsideRoot)",
                "  configuration \(describe(task.configuration))",
            ]
        }
        return lines
    }

    private func located(_ value: Located<String>) -> String { "\(value.value)@\(value.location)" }

    private func describe(_ value: ConfigurationValue) -> String {
        switch value.kind {
        case .scalar(let text): return "\(text)@\(value.location)"
        case .null: return "null@\(value.location)"
        case .list(let items): return "[\(items.map(describe).joined(separator: ", "))]@\(value.location)"
        case .map(let entries):
            let inner = entries.map { "\($0.key)@\($0.keyLocation): \(describe($0.value))" }
            return "{\(inner.joined(separator: ", "))}@\(value.location)"
        }
    }
}
