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
        keepsDepfile: Bool = false
    ) -> TaskDefinition {
        TaskDefinition(
            name: "build",
            location: Self.place,
            summary: summary,
            dependencies: [],
            calls: calls,
            commands: [Located(value: "cp a b", location: at("/p/Taskfile.yml", 4, 12))],
            sources: [Located(value: "a", location: Self.place)],
            generates: [Located(value: "b", location: Self.place)],
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
            file: "/p/Taskfile.yml"
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
                tasks:
                  plain:
                    sources: [a]
                    generates: [b]
                    cmds: [cp a b]
                  described:
                    desc: Copies
                    cmds: [cp a c]
                """
            ]
        )
        let plain = try #require(taskfile.task(named: "plain"))
        let described = try #require(taskfile.task(named: "described"))
        #expect(!plain.hasRareFields && plain.kind.value == "shell" && plain.kind.location == plain.location)
        #expect(described.hasRareFields && described.summary == "Copies")
    }
}
