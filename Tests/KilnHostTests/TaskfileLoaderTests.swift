import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// Valid Taskfiles: every key is read into the model.
@Suite struct TaskfileLoaderTests {
    @Test func everyTaskKeyIsReadIntoTheTaskDefinition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                vars:
                  CC: cc
                  OPT: -O2
                  CFLAGS: '{{.OPT}} -Wall'
                env:
                  MODE: release
                resources:
                  link: 1
                  pool: {width: 3}
                tasks:
                  compile:
                    desc: Compile every C file
                    each: sources
                    batch: 8
                    sources: ['src/*.c', 'gen/*.c']
                    generates: ['build/{{.source_stem}}.o']
                    resources: [cpu, pool]
                    cmds:
                      - mkdir -p build
                      - cmd: '{{.CC}} {{.CFLAGS}} -c {{.source}} -o {{.output}}'
                  link:
                    deps: [compile, {task: prepare}]
                    sources: build/*.o
                    generates: build/app
                    resources: link
                    dir: out
                    vars:
                      OUT: app
                    env:
                      MODE: debug
                      EXTRA: '{{.OUT}}'
                    cmds: ['{{.CC}} -o {{.OUT}} ../build/*.o']
                  prepare:
                    cmds: [mkdir -p out]
                  archive:
                    plugin: archive
                    with:
                      format: tgz
                      files: [a, b]
                    allow-outside-root: true
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        #expect(taskfile.path == file)
        #expect(taskfile.root == directory.path)
        #expect(taskfile.version == "3")
        #expect(taskfile.files == [file])
        #expect(
            taskfile.resources == [
                ResourceDefinition(name: "link", width: 1, location: at(file, 9, 3)),
                ResourceDefinition(name: "pool", width: 3, location: at(file, 10, 3)),
            ]
        )
        #expect(taskfile.tasks.map(\.name) == ["compile", "link", "prepare", "archive"])

        let compile = try #require(taskfile.task(named: "compile"))
        #expect(compile.location == at(file, 12, 3))
        #expect(compile.summary == "Compile every C file")
        #expect(compile.each == .sources)
        #expect(compile.batchSize == 8)
        #expect(compile.sources.map(\.value) == ["src/*.c", "gen/*.c"])
        #expect(compile.generates.map(\.value) == ["build/{{.source_stem}}.o"])
        #expect(compile.resources.map(\.value) == ["cpu", "pool"])
        #expect(
            compile.commands.map(\.value) == ["mkdir -p build", "{{.CC}} {{.CFLAGS}} -c {{.source}} -o {{.output}}"]
        )
        #expect(compile.commands.map(\.location) == [at(file, 20, 9), at(file, 21, 14)])
        #expect(compile.variables["CFLAGS"] == "-O2 -Wall")
        #expect(compile.environment == ["MODE": "release"])
        #expect(compile.directory == directory.path)
        #expect(compile.kind.value == "shell")
        #expect(compile.pluginConfiguration == nil)
        #expect(!compile.allowsOutsideRoot)

        let link = try #require(taskfile.task(named: "link"))
        #expect(link.dependencies.map(\.value) == ["compile", "prepare"])
        #expect(link.dependencies.map(\.location) == [at(file, 23, 12), at(file, 23, 28)])
        #expect(link.sources.map(\.value) == ["build/*.o"])
        #expect(link.generates.map(\.value) == ["build/app"])
        #expect(link.resources.map(\.value) == ["link"])
        #expect(link.directory == directory.path("out"))
        #expect(link.variables["OUT"] == "app")
        #expect(link.environment == ["MODE": "debug", "EXTRA": "app"])
        #expect(link.each == .none)

        let archive = try #require(taskfile.task(named: "archive"))
        #expect(archive.kind.value == "archive")
        #expect(archive.kind.location == at(file, 37, 13))
        #expect(archive.allowsOutsideRoot)
        let configuration = try #require(archive.pluginConfiguration)
        #expect(configuration["format"]?.string == "tgz")
        #expect(configuration["format"]?.location == at(file, 39, 15))
        #expect(configuration["files"]?.list?.compactMap(\.string) == ["a", "b"])
    }

    @Test func goTaskShortFormsAreCommands() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  one: echo one
                  two: [echo a, 'echo b']
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        let one = try #require(taskfile.task(named: "one"))
        #expect(one.commands.map(\.value) == ["echo one"])
        #expect(one.commands.map(\.location) == [at(file, 3, 8)])
        #expect(one.kind.value == "shell")
        let two = try #require(taskfile.task(named: "two"))
        #expect(two.commands.map(\.value) == ["echo a", "echo b"])
        #expect(two.configuration["cmds"]?.list?.compactMap(\.string) == ["echo a", "echo b"])
    }

    @Test func includesAddTheirTasksUnderTheirNamespace() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: lib
                  tools:
                    taskfile: tools/Tools.yml
                    dir: tools-work
                  extra:
                    taskfile: missing.yml
                    optional: true
                tasks:
                  setup: echo setup
                  all:
                    deps: ['lib:build', 'tools:check']
                    cmds: [echo all]
                """,
                "lib/Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    deps: [helper, ':setup']
                    cmds: ['echo {{.TASKFILE_DIR}}']
                  helper: echo helper
                """,
                "tools/Tools.yml": """
                version: '3'
                tasks:
                  check: pwd
                """,
            ]
        )
        #expect(
            taskfile.files == [
                directory.path("Taskfile.yml"), directory.path("lib/Taskfile.yml"), directory.path("tools/Tools.yml"),
            ]
        )
        #expect(taskfile.tasks.map(\.name) == ["setup", "all", "lib:build", "lib:helper", "tools:check"])
        let build = try #require(taskfile.task(named: "lib:build"))
        #expect(build.dependencies.map(\.value) == ["lib:helper", "setup"])
        #expect(build.file == directory.path("lib/Taskfile.yml"))
        #expect(build.location == at(directory.path("lib/Taskfile.yml"), 3, 3))
        #expect(build.directory == directory.path)
        #expect(build.variables["TASKFILE_DIR"] == .string(directory.path("lib")))
        #expect(build.variables["ROOT_DIR"] == .string(directory.path))
        #expect(build.templateVariables["TASK"] == "lib:build")
        #expect(taskfile.task(named: "tools:check")?.directory == directory.path("tools-work"))
        #expect(taskfile.task(named: "all")?.dependencies.map(\.value) == ["lib:build", "tools:check"])
    }

    @Test func anchorsAliasesAndMergeKeysAreResolved() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                vars:
                  FLAGS: &flags -O2
                tasks:
                  base: &base
                    desc: shared
                    resources: [cpu]
                    cmds: &commands [echo a, echo b]
                  derived:
                    <<: *base
                    desc: derived
                  copy: *base
                  reuse:
                    cmds: *commands
                    vars: {MORE: *flags}
                """
            ]
        )
        let derived = try #require(taskfile.task(named: "derived"))
        #expect(derived.summary == "derived")
        #expect(derived.resources.map(\.value) == ["cpu"])
        #expect(derived.commands.map(\.value) == ["echo a", "echo b"])
        let copy = try #require(taskfile.task(named: "copy"))
        #expect(copy.summary == "shared")
        #expect(copy.commands.map(\.value) == ["echo a", "echo b"])
        let reuse = try #require(taskfile.task(named: "reuse"))
        #expect(reuse.commands.map(\.value) == ["echo a", "echo b"])
        #expect(reuse.variables["MORE"] == "-O2")
    }

    @Test func mergedKeysYieldToTheMapsOwnKeysWrittenBeforeTheMerge() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  base: &base
                    desc: shared
                    cmds: [echo base]
                  derived:
                    desc: derived
                    <<: *base
                """
            ]
        )
        let derived = try #require(taskfile.task(named: "derived"))
        #expect(derived.summary == "derived")
        #expect(derived.commands.map(\.value) == ["echo base"])
    }

    @Test(
        "an anchor inside 'tasks:' used after them: a small Taskfile gets its value, a large one (read in two passes) is refused at the alias, never given an empty value"
    )
    func anchorInsideTasksUsedAfterThem() throws {
        let text = """
            version: '3'
            tasks:
              t:
                desc: &greeting hello
                cmds: ['echo {{.V}}']
            vars:
              V: *greeting

            """
        let small = try TemporaryDirectory()
        defer { small.remove() }
        let taskfile = try loadTaskfile(in: small, ["Taskfile.yml": text])
        #expect(taskfile.tasks.first { $0.name == "t" }?.variables["V"] == .string("hello"))

        let large = try TemporaryDirectory()
        defer { large.remove() }
        let padding = "#" + String(repeating: " pad", count: TaskfileLoader.onePassLimit / 4 + 1) + "\n"
        let errors = try loadErrors(in: large, ["Taskfile.yml": text + padding])
        #expect(errors.count == 1)
        #expect(errors.first?.location?.line == 7, "\(errors)")
        #expect(errors.first?.message.contains("unknown alias '*greeting'") == true, "\(errors)")
        #expect(errors.first?.message.contains("move the anchor before 'tasks:'") == true, "\(errors)")
    }
}
