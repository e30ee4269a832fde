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

    @Test func aCachedLoadIsTheSameModelAsAFreshLoad() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for (path, text) in Self.files { try directory.write(path, text) }
        let path = directory.path("Taskfile.yml")
        let fresh = try TaskfileLoader(usesCache: false).load(path: path)
        _ = try TaskfileLoader(usesCache: true).load(path: path)  // writes the cache
        #expect(directory.exists(".kiln/taskfile.cache"))
        let cached = try TaskfileLoader(usesCache: true).load(path: path)
        #expect(snapshot(cached) == snapshot(fresh))
        #expect(cached.secrets.values == ["t0ken"])
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
