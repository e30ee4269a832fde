import Foundation
import KilnTestSupport
import Testing

/// Nothing outside the project is written or removed unless a task says
/// `allow-outside-root: true`: paths are checked lexically and again with every symbolic link
/// resolved — for `dir:`, `generates:`, `depfile:` and what `kiln clean` removes.
@Suite struct ProjectBoundaryTests {
    /// A project in `project/` beside a directory `outside/` holding `important.conf`.
    struct Layout {
        let scratch: TemporaryDirectory
        var project: String { scratch.path("project") }
        var outside: String { scratch.path("outside") }
        var important: String { scratch.path("outside/important.conf") }

        init() throws {
            scratch = try TemporaryDirectory(prefix: "kiln-boundary")
            try scratch.write("outside/important.conf", "keep me\n")
            try scratch.makeDirectory("project")
        }

        func taskfile(_ text: String) throws {
            try scratch.write("project/Taskfile.yml", text)
        }

        func link(_ name: String, to target: String) throws {
            try FileManager.default.createSymbolicLink(
                atPath: scratch.path("project/" + name),
                withDestinationPath: target
            )
        }
    }

    /// Each case: a Taskfile that reaches outside, and the message's telling part. Every one is
    /// refused before anything runs (exit 2, located), and `important.conf` survives.
    static let escapes: [(name: String, links: [(String, String)], taskfile: String, message: String)] = [
        (
            "a depfile in the parent directory", [],
            "version: '3'\ntasks:\n  c:\n    depfile: '../outside/important.conf'\n    cmds: ['true']\n",
            "would read and remove the depfile ../outside/important.conf, outside the project root"
        ),
        (
            "a depfile through a linked directory", [("conf", "../outside")],
            "version: '3'\ntasks:\n  c:\n    depfile: 'conf/important.conf'\n    cmds: ['true']\n",
            "outside the project root through a symbolic link"
        ),
        (
            "dir through a link", [("elsewhere", "../outside")],
            "version: '3'\ntasks:\n  c:\n    dir: elsewhere\n    cmds: ['rm -f important.conf']\n",
            "runs in"
        ),
        (
            "an output that is a link to a file outside", [("result.txt", "../outside/important.conf")],
            "version: '3'\ntasks:\n  c:\n    generates: [result.txt]\n    cmds: ['echo overwritten > result.txt']\n",
            "would write result.txt, outside the project root through a symbolic link"
        ),
        (
            "an output under a linked directory", [("out", "../outside")],
            "version: '3'\ntasks:\n  c:\n    generates: ['out/important.conf']\n    cmds: ['echo overwritten > out/important.conf']\n",
            "through a symbolic link"
        ),
    ]

    @Test(
        "a path that leaves the root, lexically or through a link, is refused before anything runs",
        arguments: 0..<escapes.count
    )
    func escapesAreRefused(index: Int) async throws {
        let example = Self.escapes[index]
        let layout = try Layout()
        defer { layout.scratch.remove() }
        try layout.taskfile(example.taskfile)
        for (name, target) in example.links { try layout.link(name, to: target) }
        let result = try await KilnProcess.run(["run", "c"], in: layout.project)
        #expect(result.status == 2, "\(example.name): \(result)")
        #expect(result.standardError.contains(layout.project + "/Taskfile.yml:"), "\(example.name): \(result)")
        #expect(result.standardError.contains(example.message), "\(example.name): \(result)")
        #expect(layout.scratch.read("outside/important.conf") == "keep me\n", "\(example.name)")
    }

    @Test(
        "a link planted after runs that remembered the check is still refused: the memo of the check doesn't vouch",
        arguments: 1..<escapes.count
    )
    func linkPlantedAfterTheCheckWasRemembered(index: Int) async throws {
        let example = Self.escapes[index]
        let layout = try Layout()
        defer { layout.scratch.remove() }
        try layout.taskfile(example.taskfile)
        // Runs without the link: the check passes and is remembered (.kiln/boundary), and once
        // the directories are older than the racy window the memo vouches for the next plan.
        for _ in 0..<2 {
            _ = try await KilnProcess.run(["run", "c"], in: layout.project)
            usleep(120_000)
        }
        #expect(layout.scratch.exists("project/.kiln/boundary"), "\(example.name)")
        for (name, target) in example.links {
            try? FileManager.default.removeItem(atPath: layout.scratch.path("project/" + name))
            try layout.link(name, to: target)
        }
        let result = try await KilnProcess.run(["run", "c"], in: layout.project)
        #expect(result.status == 2, "\(example.name): \(result)")
        #expect(result.standardError.contains(example.message), "\(example.name): \(result)")
        #expect(layout.scratch.read("outside/important.conf") == "keep me\n", "\(example.name)")
    }

    @Test("a depfile whose directory became a link outward while the command ran is not removed")
    func depfileThroughALinkMadeDuringTheRun() async throws {
        let layout = try Layout()
        defer { layout.scratch.remove() }
        // At planning `deps/` doesn't exist (inside, then); the command makes it a link outside.
        try layout.taskfile(
            """
            version: '3'
            tasks:
              c:
                depfile: 'deps/made.d'
                cmds: ['ln -s ../outside deps', 'printf "x: a.h\\n" > deps/made.d']
            """
        )
        let result = try await KilnProcess.run(["run", "c"], in: layout.project)
        #expect(result.status == 0, "\(result)")
        #expect(layout.scratch.exists("outside/made.d"), "kiln removed a file outside the project")
    }

    @Test("allow-outside-root lets a task use a depfile outside, and kiln reads it")
    func allowedOutside() async throws {
        let layout = try Layout()
        defer { layout.scratch.remove() }
        try layout.taskfile(
            """
            version: '3'
            tasks:
              c:
                allow-outside-root: true
                depfile: '../outside/dep.d'
                cmds: ['printf "x: a.h\\n" > ../outside/dep.d']
            """
        )
        let result = try await KilnProcess.run(["run", "c"], in: layout.project)
        #expect(result.status == 0, "\(result)")
        #expect(!layout.scratch.exists("outside/dep.d"))
    }

    @Test("kiln clean never follows a link out of the root, even where a glob led through one")
    func cleanStaysInside() async throws {
        let layout = try Layout()
        defer { layout.scratch.remove() }
        try layout.scratch.write("project/out/mine.o", "")
        try layout.scratch.write("outside/theirs.o", "")
        try layout.link("out/linked", to: "../../outside")
        try layout.taskfile(
            """
            version: '3'
            tasks:
              c:
                generates: ['out/**/*.o']
                cmds: ['true']
            """
        )
        let result = try await KilnProcess.run(["clean"], in: layout.project)
        #expect(result.status == 0, "\(result)")
        #expect(!layout.scratch.exists("project/out/mine.o"), "\(result)")
        #expect(layout.scratch.exists("outside/theirs.o"), "\(result)")
        #expect(layout.scratch.read("outside/important.conf") == "keep me\n")
    }
}
