import Foundation
import KilnHookPlan
import KilnPaths
import KilnTestSupport
import Testing

/// The saved hook plan: what it says is affected, and when it may be trusted.
@Suite("Hook plans")
struct HookPlanTests {
    /// A project directory with an aged Taskfile, and a plan watching it.
    func plan(in directory: TemporaryDirectory) throws -> HookPlan {
        let taskfile = try directory.write("Taskfile.yml", "version: '3'\n")
        try setModificationTime(taskfile, secondsAgo: 60)
        return HookPlan(
            taskfilePath: taskfile,
            root: directory.path,
            taskfiles: [taskfile, directory.path("lib/Taskfile.yml")],
            tasks: [
                HookPlan.Task(
                    directory: directory.path,
                    patterns: ["src/**/*.c", "docs/*.md", "web/**"],
                    discovered: []
                ),
                HookPlan.Task(directory: directory.path("lib"), patterns: ["*.h"], discovered: ["gen/config.h"]),
            ],
            watched: [HookPlan.Watched(path: taskfile), HookPlan.Watched(path: directory.path("missing.yml"))]
        )
    }

    @Test(
        "affected: a task's patterns relative to its directory, a depfile's file, a Taskfile; .kiln and outside files don't count"
    )
    func affects() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hook-plan")
        defer { directory.remove() }
        let plan = try plan(in: directory)
        let root = directory.path
        #expect(plan.affects([root + "/src/deep/a.c"]) == (true, 1))
        // As in go-task: ROOT/**/NAME enters hidden directories; a trailing ** (shell-style) doesn't.
        #expect(plan.affects([root + "/src/.hidden/a.c"]) == (true, 1))
        #expect(plan.affects([root + "/web/a/b.js"]) == (true, 1))
        #expect(plan.affects([root + "/web/.cache/b.js"]) == (false, 1))
        #expect(plan.affects([root + "/lib/x.h", root + "/README"]) == (true, 2))
        #expect(plan.affects([root + "/x.h"]) == (false, 1))  // lib's *.h is relative to lib
        #expect(plan.affects([root + "/lib/gen/config.h"]) == (true, 1))
        #expect(plan.affects([root + "/gen/config.h"]) == (false, 1))
        #expect(plan.affects([root + "/lib/Taskfile.yml"]) == (true, 1))
        #expect(plan.affects([root + "/.kiln/state.db", "/elsewhere/a.c", root + "/notes.txt"]) == (false, 1))
        #expect(plan.affects([]) == (false, 0))
    }

    @Test("saved and loaded back; refused once a watched file changes or appears, or the file is damaged")
    func storage() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hook-plan")
        defer { directory.remove() }
        let plan = try plan(in: directory)
        #expect(plan.save(hook: "pre-commit", madeAt: Date().timeIntervalSince1970.nanoseconds))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == plan)
        #expect(HookPlan.load(root: directory.path, hook: "commit-msg") == nil)

        let saved = try #require(
            FileManager.default.contents(atPath: HookPlan.path(root: directory.path, hook: "pre-commit"))
        )
        try saved.dropLast(3).write(to: URL(fileURLWithPath: HookPlan.path(root: directory.path, hook: "pre-commit")))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == nil, "a truncated plan")
        try saved.write(to: URL(fileURLWithPath: HookPlan.path(root: directory.path, hook: "pre-commit")))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == plan)

        _ = try directory.write("missing.yml", "now here\n")
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == nil, "an absent file appeared")
        try FileManager.default.removeItem(atPath: directory.path("missing.yml"))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == plan)
        try setModificationTime(directory.path("Taskfile.yml"), secondsAgo: 30)  // a touch: same bytes, new times
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == nil, "the Taskfile was touched")
    }

    @Test("not saved when a watched file changed too recently to tell a later change from it")
    func racy() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hook-plan")
        defer { directory.remove() }
        var plan = try plan(in: directory)
        let fresh = try directory.write("fresh.yml", "just written\n")
        plan.watched.append(HookPlan.Watched(path: fresh))
        // Read at the very moment it was written: racy whatever the machine's load.
        let written = try #require(plan.watched.last?.signature?.modified)
        #expect(!plan.save(hook: "pre-commit", madeAt: written))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == nil)
        try setModificationTime(fresh, secondsAgo: 5)
        plan.watched[plan.watched.count - 1] = HookPlan.Watched(path: fresh)
        #expect(plan.save(hook: "pre-commit", madeAt: Date().timeIntervalSince1970.nanoseconds))
    }
}

extension TimeInterval {
    /// Seconds since the epoch as nanoseconds.
    var nanoseconds: Int64 { Int64(self * 1_000_000_000) }
}

@Suite struct HookPlanChecksumTests {
    @Test("a plan with one byte changed is no plan")
    func damagedPlanIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "kiln-hook-plan")
        defer { directory.remove() }
        let taskfile = try directory.write("Taskfile.yml", "version: '3'\n")
        try setModificationTime(taskfile, secondsAgo: 60)
        let plan = HookPlan(
            taskfilePath: taskfile,
            root: directory.path,
            taskfiles: [taskfile],
            tasks: [HookPlan.Task(directory: directory.path, patterns: ["src/*.c"], discovered: [])],
            watched: [HookPlan.Watched(path: taskfile)]
        )
        #expect(plan.save(hook: "pre-commit", madeAt: FileSignature.now()))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") != nil)
        let path = HookPlan.path(root: directory.path, hook: "pre-commit")
        var bytes = try #require(FileManager.default.contents(atPath: path)).map { $0 }
        let star = try #require(bytes.firstIndex(of: UInt8(ascii: "*")))
        bytes[star] = UInt8(ascii: "?")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(HookPlan.load(root: directory.path, hook: "pre-commit") == nil)
    }
}
