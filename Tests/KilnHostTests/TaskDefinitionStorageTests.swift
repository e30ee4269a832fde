import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// A task keeps what few tasks say in a second object, made only when it says some of it: each
/// such field reads back as given, and a task that says none reads go-task's defaults.
@Suite struct TaskDefinitionStorageTests {
    private static let place = at("/p/Taskfile.yml", 3, 3)

    private func task(
        calls: [Located<String>] = [],
        summary: String? = nil,
        resources: [Located<String>] = [],
        batchSize: Int? = nil,
        kind: Located<String> = Located(value: "shell", location: place),
        pluginConfiguration: ConfigurationValue? = nil,
        allowsOutsideRoot: Bool = false,
        depfile: Located<String>? = nil,
        keepsDepfile: Bool = false,
        commands: [Located<String>] = [Located(value: "cp a b", location: at("/p/Taskfile.yml", 4, 12))],
        sources: [Located<String>] = [Located(value: "a", location: place)],
        generates: [Located<String>] = [Located(value: "b", location: place)],
        file: String = "/p/Taskfile.yml"
    ) -> TaskDefinition {
        TaskDefinition(
            name: "build",
            location: Self.place,
            summary: summary,
            dependencies: [],
            calls: calls,
            commands: commands,
            sources: sources,
            generates: generates,
            variables: [:],
            environment: [:],
            directory: "/p",
            resources: resources,
            each: .none,
            batchSize: batchSize,
            kind: kind,
            pluginConfiguration: pluginConfiguration,
            allowsOutsideRoot: allowsOutsideRoot,
            depfile: depfile,
            keepsDepfile: keepsDepfile,
            file: file
        )
    }

    @Test("cmds, sources and generates, kept in one array, each read back as given, for every mix of lengths 0-3")
    func threeListsReadBack() {
        func items(_ prefix: String, _ count: Int) -> [Located<String>] {
            (0..<count).map { Located(value: "\(prefix)\($0)", location: at("/p/Taskfile.yml", 10 + $0, 7)) }
        }
        for commandCount in 0...3 {
            for sourceCount in 0...3 {
                for outputCount in 0...3 {
                    let commands = items("cmd ", commandCount)
                    let sources = items("src/", sourceCount)
                    let generates = items("out/", outputCount)
                    let definition = TaskDefinition(
                        name: "build",
                        location: Self.place,
                        summary: nil,
                        dependencies: [],
                        commands: commands,
                        sources: sources,
                        generates: generates,
                        variables: [:],
                        environment: [:],
                        directory: "/p",
                        resources: [],
                        each: .none,
                        batchSize: nil,
                        kind: Located(value: "shell", location: Self.place),
                        pluginConfiguration: nil,
                        allowsOutsideRoot: false,
                        depfile: nil,
                        keepsDepfile: false,
                        file: "/p/Taskfile.yml"
                    )
                    let lengths = "\(commandCount) \(sourceCount) \(outputCount)"
                    #expect(definition.commands == commands, "\(lengths)")
                    #expect(definition.sources == sources, "\(lengths)")
                    #expect(definition.generates == generates, "\(lengths)")
                    #expect(definition.renderedSources == sources.map(\.value), "\(lengths)")
                    #expect(definition.commandsInPlace.elementsEqual(commands), "\(lengths)")
                    #expect(definition.sourcesInPlace.elementsEqual(sources), "\(lengths)")
                    #expect(definition.generatesInPlace.elementsEqual(generates), "\(lengths)")
                }
            }
        }
    }

    @Test("entries read back as given whatever their text — empty, multi-byte, long — and their place")
    func packedEntriesReadBack() {
        let long = String(repeating: "cc -c src/módulo-🔥.c ", count: 4_000)
        let texts = ["", "é", "cp ünïcødé 🔥 b", long, "x", "a\u{0}b", String(repeating: "z", count: 15)]
        let places = [(1, 1), (2, 7), (Int(Int32.max), Int(Int32.max)), (70_000, 300), (5, 0)]
        let entries = texts.enumerated().map { index, text in
            let place = places[index % places.count]
            return Located(value: text, location: at("/p/Taskfile.yml", place.0, place.1))
        }
        for split in [(0, 0), (2, 5), (7, 7), (1, 3)] {
            let commands = Array(entries[..<split.0])
            let sources = Array(entries[split.0..<split.1])
            let generates = Array(entries[split.1...])
            let definition = task(commands: commands, sources: sources, generates: generates)
            #expect(!definition.hasRareFields, "\(split)")
            #expect(definition.commands == commands && definition.sources == sources, "\(split)")
            #expect(definition.generates == generates, "\(split)")
            #expect(definition.generatesInPlace.elementsEqual(generates), "\(split)")
            #expect(definition.commandsInPlace.count == commands.count, "\(split)")
            #expect(definition.sourcesInPlace.map(\.value) == sources.map(\.value), "\(split)")
        }
    }

    @Test("entries written in another file than the task's key, and a file apart from the key's, read back")
    func entriesFromAnotherFile() {
        let here = Located(value: "cp a b", location: at("/p/Taskfile.yml", 4, 12))
        let included = Located(value: "src/*.c", location: at("/p/lib/Taskfile.yml", 8, 5))
        let mixed = task(commands: [here], sources: [included], generates: [here])
        #expect(mixed.hasRareFields)
        #expect(mixed.commands == [here] && mixed.sources == [included] && mixed.generates == [here])
        #expect(mixed.sourcesInPlace.elementsEqual([included]) && mixed.file == "/p/Taskfile.yml")
        let apart = task(commands: [here], file: "/p/./Taskfile.yml")
        #expect(apart.hasRareFields && apart.file == "/p/./Taskfile.yml" && apart.commands == [here])
        #expect(!task(commands: [here]).hasRareFields && task(commands: [here]).file == "/p/Taskfile.yml")
    }

    @Test("a task that says none of the rare fields has no second object and reads the defaults")
    func plainTask() {
        let plain = task()
        #expect(!plain.hasRareFields)
        #expect(plain.calls.isEmpty && plain.summary == nil && plain.resources.isEmpty && plain.batchSize == nil)
        #expect(plain.kind == Located(value: "shell", location: Self.place))
        #expect(plain.pluginConfiguration == nil && !plain.allowsOutsideRoot)
        #expect(plain.depfile == nil && plain.locatedDepfile == nil && !plain.keepsDepfile)
        #expect(plain.commands.map(\.value) == ["cp a b"] && plain.directory == "/p")
    }

    @Test("each rare field, given alone, reads back as given and leaves the others as defaults")
    func eachRareField() {
        let elsewhere = at("/p/Taskfile.yml", 9, 11)
        let called = [Located(value: "gen", location: elsewhere)]
        let claims = [Located(value: "link", location: elsewhere)]
        let made = Located(value: "build/a.d", location: elsewhere)
        let with = ConfigurationValue(.scalar("tgz"), at: elsewhere)
        let tasks: [(TaskDefinition, String)] = [
            (task(calls: called), "calls"),
            (task(summary: "Builds"), "summary"),
            (task(resources: claims), "resources"),
            (task(batchSize: 8), "batch"),
            (task(kind: Located(value: "archive", location: elsewhere)), "kind"),
            // `plugin: shell` written out: its place is kept.
            (task(kind: Located(value: "shell", location: elsewhere)), "kind written"),
            (task(pluginConfiguration: with), "with"),
            (task(allowsOutsideRoot: true), "outside"),
            (task(depfile: made), "depfile"),
            (task(keepsDepfile: true), "keep"),
        ]
        for (definition, field) in tasks {
            #expect(definition.hasRareFields, "\(field)")
            #expect(definition.calls == (field == "calls" ? called : []), "\(field)")
            #expect(definition.summary == (field == "summary" ? "Builds" : nil), "\(field)")
            #expect(definition.resources == (field == "resources" ? claims : []), "\(field)")
            #expect(definition.batchSize == (field == "batch" ? 8 : nil), "\(field)")
            let kind =
                field == "kind"
                ? Located(value: "archive", location: elsewhere)
                : Located(value: "shell", location: field == "kind written" ? elsewhere : Self.place)
            #expect(definition.kind == kind, "\(field)")
            #expect(definition.pluginConfiguration?.string == (field == "with" ? "tgz" : nil), "\(field)")
            #expect(definition.allowsOutsideRoot == (field == "outside"), "\(field)")
            #expect(definition.locatedDepfile == (field == "depfile" ? made : nil), "\(field)")
            #expect(definition.keepsDepfile == (field == "keep"), "\(field)")
        }
    }

    @Test("a loaded Taskfile's plain tasks share no second object; the others read what they say")
    func loaded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: ./lib
                tasks:
                  plain:
                    sources: [a]
                    generates: [b]
                    cmds: [cp a b]
                  described:
                    desc: Copies
                    cmds: [cp a c]
                """,
                "lib/Taskfile.yml": """
                version: '3'
                tasks:
                  copy:
                    sources: ['*.c']
                    generates: [out.o]
                    cmds: [cc -c *.c -o out.o]
                """,
            ]
        )
        let plain = try #require(taskfile.task(named: "plain"))
        let described = try #require(taskfile.task(named: "described"))
        #expect(!plain.hasRareFields && plain.kind.value == "shell" && plain.kind.location == plain.location)
        #expect(described.hasRareFields && described.summary == "Copies")
        // A task of an included file: its lists are written in its file, and packed.
        let included = try #require(taskfile.task(named: "lib:copy"))
        #expect(!included.hasRareFields && included.file.hasSuffix("lib/Taskfile.yml"))
        #expect(included.commands.map(\.value) == ["cc -c *.c -o out.o"] && included.sources.map(\.value) == ["*.c"])
        #expect(included.commands.allSatisfy { $0.location.file == included.location.file && $0.location.line == 6 })
    }
}
