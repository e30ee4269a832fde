import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// The shell kind's configuration of a task's `cmds`: what each command says, read from the
/// Taskfile, and kept small, since a run holds every task's.
@Suite struct ShellConfigurationTests {
    /// The command of a Taskfile whose one task runs `echo one`, as the shell kind reads it.
    private func oneCommand() throws -> ShellTaskKind.Configuration.Command {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = """
            version: '3'
            tasks:
              build:
                cmds: [echo one]
            """
        let loaded = try loadTaskfile(in: directory, ["Taskfile.yml": taskfile])
        let definition = try #require(loaded.task(named: "build"))
        let description = TaskDescription(
            name: definition.name,
            location: definition.location,
            variables: definition.variables
        )
        let commands = try ShellTaskKind(runner: sharedMonitor)
            .configuration(from: definition.configuration, task: description).commands
        return try #require(commands.first)
    }

    @Test("a plain command has go-task's defaults for every setting")
    func plainCommand() throws {
        let command = try oneCommand()
        #expect(command.text == "echo one")
        #expect(command.location.line == 4)
        #expect(!command.ignoresError && !command.isDeferred)
        #expect(command.platforms == nil && command.loop == nil && command.condition == nil)
        #expect(command.itemName == "ITEM" && command.prefix.isEmpty)
        #expect(command.timeout == nil && command.deferredCall == nil)
    }

    @Test("each setting a command's map holds is read, and only for that command")
    func settingsAreRead() throws {
        let place = at("Taskfile.yml", 5, 9)
        func scalar(_ text: String) -> ConfigurationValue { ConfigurationValue(.scalar(text), at: place) }
        func map(_ entries: [(String, ConfigurationValue)]) -> ConfigurationValue {
            ConfigurationValue(.map(entries.map { (key: $0.0, keyLocation: place, value: $0.1) }), at: place)
        }
        let list = { (items: [ConfigurationValue]) in ConfigurationValue(.list(items), at: place) }
        let value = map([
            (
                "cmds",
                list([
                    map([
                        ("cmd", scalar("exit 1")), ("ignore_error", scalar("true")),
                        ("platforms", list([scalar("linux"), scalar("darwin")])),
                    ]),
                    map([
                        ("cmd", scalar("echo {{.X}}")), ("for", list([scalar("a"), scalar("b")])), ("as", scalar("X")),
                    ]),
                    map([("cmd", scalar("echo late")), ("defer", scalar("true")), ("defer_call", scalar("2"))]),
                    map([("cmd", scalar("sleep 1")), ("timeout", scalar("2s")), ("prefix", scalar("set -u; "))]),
                    map([("cmd", scalar("echo maybe")), ("if", scalar("test -e here"))]),
                    map([("cmd", scalar("echo mapped"))]),
                    scalar("echo plain"),
                ])
            )
        ])
        let description = TaskDescription(name: "build", location: place, variables: [:])
        let read = try ShellTaskKind(runner: sharedMonitor).configuration(from: value, task: description).commands
        try #require(read.count == 7)
        #expect(
            read.map(\.text) == [
                "exit 1", "echo {{.X}}", "echo late", "sleep 1", "echo maybe", "echo mapped", "echo plain",
            ]
        )
        #expect(read[0].ignoresError && read[0].platforms == ["linux", "darwin"])
        #expect(read[1].loop?.list?.count == 2 && read[1].itemName == "X")
        #expect(read[2].isDeferred && read[2].deferredCall == 2)
        #expect(read[3].timeout?.seconds == 2 && read[3].prefix == "set -u; ")
        #expect(read[4].condition == "test -e here")
        // Nothing leaked from the commands before them.
        for plain in read[5...] {
            #expect(!plain.ignoresError && plain.platforms == nil && plain.loop == nil && plain.itemName == "ITEM")
            #expect(!plain.isDeferred && plain.deferredCall == nil && plain.timeout == nil && plain.prefix.isEmpty)
            #expect(plain.condition == nil)
        }
    }

    @Test("a change to a copy's setting leaves the original as it was")
    func copiesAreIndependent() throws {
        let original = try oneCommand()
        var copy = original
        copy.ignoresError = true
        copy.prefix = "set -e; "
        #expect(copy.ignoresError && copy.prefix == "set -e; ")
        #expect(!original.ignoresError && original.prefix.isEmpty)
        // Set back to the defaults, it is the same as the original again.
        copy.ignoresError = false
        copy.prefix = ""
        #expect(!copy.ignoresError && copy.prefix.isEmpty)
    }

    @Test("a command is its text, its place and one reference: a run holds every task's")
    func commandIsSmall() {
        // Text 16 bytes, location 24, the settings' box 8. With the settings inline, it was 200:
        // 2.3 MB for a 10k-task Taskfile's commands, held for the whole run.
        #expect(MemoryLayout<ShellTaskKind.Configuration.Command>.stride <= 48)
    }

    @Test("the kind is one reference: every task's prepared configuration holds a copy")
    func kindIsSmall() {
        // The runner's existential and the version inline made it 56 bytes, 10k times over.
        #expect(MemoryLayout<ShellTaskKind>.size == MemoryLayout<AnyObject>.size)
        #expect(ShellTaskKind(runner: sharedMonitor).version == "2")
    }
}
