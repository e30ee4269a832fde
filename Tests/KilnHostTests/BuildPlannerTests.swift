import KilnJobs
import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// A plugin-style kind whose configuration accepts `format: tgz` or `format: zip` only.
struct ArchiveTaskKind: TaskKind {
    let name = "archive"
    let version = "1"

    func configuration(from value: ConfigurationValue, task: TaskDescription) throws(TaskConfigurationError) -> String {
        try value.rejectUnknownKeys(["format"], in: "'with'")
        guard let format = value["format"] else {
            throw TaskConfigurationError("'format' is required", at: value.location)
        }
        let text = try format.requireString("'format'")
        guard ["tgz", "zip"].contains(text) else {
            throw TaskConfigurationError("unsupported format '\(text)'; use tgz or zip", at: format.location)
        }
        return text
    }

    func summary(of configuration: String, request: JobRequest) -> String { "archive as \(configuration)" }

    func makeJob(configuration: String, request: JobRequest, context: TaskContext) throws -> Job { BlockJob {} }
}

/// `BuildPlanner.plan(targets:)`: which tasks run, in which order, and the mistakes only the
/// planner can see (task kinds, their configurations, writes outside the root, target names).
@Suite struct BuildPlannerTests {
    // MARK: Selection and order

    @Test func aPlanHoldsExactlyTheTargetsAndTheirTransitiveDependenciesDependenciesFirst() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  c:
                    deps: [b]
                    cmds: [echo c]
                  unrelated: echo unrelated
                  b:
                    deps: [a]
                    cmds: [echo b]
                  d:
                    deps: [a]
                    cmds: [echo d]
                  a: echo a
                  e:
                    deps: [c, d]
                    cmds: [echo e]
                """
            ]
        )
        let planner = BuildPlanner(taskfile: taskfile, registry: try makeRegistry())
        let single = try planner.plan(targets: ["c"]).tasks.map(\.definition.name)
        #expect(single == ["a", "b", "c"])
        let two = try planner.plan(targets: ["c", "d"]).tasks.map(\.definition.name)
        #expect(Set(two) == ["a", "b", "c", "d"])
        #expect(two.count == 4)
        try expectDependenciesFirst(planner.plan(targets: ["e"]))
        #expect(Set(try planner.plan(targets: ["e"]).tasks.map(\.definition.name)) == ["a", "b", "c", "d", "e"])
    }

    @Test func withoutTargetsThePlanIsTheDefaultTaskAndItsDependencies() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo build
                  other: echo other
                  default:
                    deps: [build]
                """
            ]
        )
        let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry()).plan(targets: [])
        #expect(plan.targets == ["default"])
        #expect(plan.tasks.map(\.definition.name) == ["build", "default"])
    }

    @Test func includedTasksResolveDependenciesInTheirNamespaceAndColonNamesInTheMainFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: lib.yml
                tasks:
                  helper: echo main helper
                  setup: echo setup
                  all:
                    deps: ['lib:build']
                    cmds: [echo all]
                  other:
                    deps: ['lib:fallback']
                """,
                "lib.yml": """
                version: '3'
                tasks:
                  build:
                    deps: [helper, ':helper', ':setup']
                    cmds: [echo build]
                  helper: echo lib helper
                  unused: echo unused
                  fallback:
                    deps: [setup]
                """,
            ]
        )
        let planner = BuildPlanner(taskfile: taskfile, registry: try makeRegistry())
        let build = try #require(taskfile.task(named: "lib:build"))
        #expect(build.dependencies.map(\.value) == ["lib:helper", "helper", "setup"])
        let plan = try planner.plan(targets: ["all"])
        #expect(Set(plan.tasks.map(\.definition.name)) == ["lib:helper", "helper", "setup", "lib:build", "all"])
        try expectDependenciesFirst(plan)
        // A name the file's namespace lacks is not looked up in the main file (go-task's rule).
        let error = #expect(throws: TaskfileErrors.self) { try planner.plan(targets: ["other"]) }
        #expect(
            error?.errors.map(\.message) == [
                "unknown task 'setup' in the deps of 'lib:fallback' ('lib:setup', as go-task reads it there); did you mean ':setup' ('setup')?"
            ]
        )
    }

    /// Every task of `plan` comes after the tasks it depends on.
    @Test func aPlanOfPartOfACachedTaskfileDecodesOnlyTheTasksItKeepsAndItsTargets() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let names = (0..<50).map { "t\($0)" }
        var text = "version: '3'\ntasks:\n"
        for name in names { text += "  \(name): {sources: [src/\(name)], cmds: ['echo \(name)']}\n" }
        text += "  default: {deps: [\(names.joined(separator: ", "))]}\n"
        _ = try loadTaskfile(in: directory, ["Taskfile.yml": text])  // writes the cache
        let taskfile = try TaskfileLoader().load(path: directory.path("Taskfile.yml"))
        // Its plugins are found from the kinds the outline lists.
        let registry = try Project(taskfile: taskfile, runner: sharedMonitor).registry
        #expect(taskfile.tasks.decodedCount == 0)
        var offered: [String] = []
        let (plan, part) = try BuildPlanner(taskfile: taskfile, registry: registry).plan(targets: []) {
            outline,
            order,
            dependencyPositions,
            _ in
            offered = order.map { outline.names[$0] }
            #expect(dependencyPositions.last?.count == 50)
            let kept = order.map { ["t7", "default"].contains(outline.names[$0]) }
            let left = order.indices.filter { !kept[$0] }
            return ChangedPart(
                kept: kept,
                unchanged: left.map { outline.names[order[$0]] },
                snapshotJobs: left,
                unchangedGroups: []
            )
        }
        #expect(offered == names + ["default"])
        #expect(part?.unchanged.count == 49)
        #expect(plan.tasks.map(\.definition.name) == ["t7", "default"])
        // The target (its checks read the definition) and the one task kept: not the other 49.
        #expect(taskfile.tasks.decodedCount == 2)
    }

    private func expectDependenciesFirst(_ plan: BuildPlan, sourceLocation: Testing.SourceLocation = #_sourceLocation)
        throws
    {
        let position = Dictionary(uniqueKeysWithValues: plan.tasks.enumerated().map { ($1.definition.name, $0) })
        for (index, task) in plan.tasks.enumerated() {
            for dependency in task.definition.dependencies {
                let dependencyPosition = try #require(position[dependency.value], sourceLocation: sourceLocation)
                #expect(
                    dependencyPosition < index,
                    "\(dependency.value) must come before \(task.definition.name)",
                    sourceLocation: sourceLocation
                )
            }
        }
    }

    // MARK: Mistakes only the planner sees

    @Test func aTaskKindNoPluginProvidesIsReportedAtThePluginKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  pack:
                    plugin: archiver
                    with: {format: tgz}
                """
            ]
        )
        let errors = try planErrors(taskfile, targets: ["pack"], kinds: [ArchiveTaskKind()])
        let error = try #require(errors.only)
        #expect(error.code == .unknownTaskKind)
        #expect(error.location == at(directory.path("Taskfile.yml"), 4, 13))
        #expect(
            error.message.contains(
                "task kind 'archiver', which no plugin provides (no libkiln-archiver.so on the plugin path: see --plugin-path); known kinds: archive, shell"
            )
        )
    }

    @Test func aConfigurationItsKindRejectsIsReportedAtTheValueTheKindNamed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  pack:
                    plugin: archive
                    with:
                      format: rar
                """
            ]
        )
        let errors = try planErrors(taskfile, targets: ["pack"], kinds: [ArchiveTaskKind()])
        let error = try #require(errors.only)
        #expect(error.code == .configurationRejected)
        #expect(error.location == at(directory.path("Taskfile.yml"), 6, 15))
        #expect(error.message.contains("task 'pack': unsupported format 'rar'; use tgz or zip (task kind 'archive')"))
    }

    @Test func writesAndDirectoriesOutsideTheRootAreRefusedUnlessTheTaskAllowsThem() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  up:
                    generates: ['../x']
                    cmds: [echo]
                  absolute:
                    generates: [/elsewhere/out]
                    cmds: [echo]
                  away:
                    dir: ..
                    cmds: [echo]
                  sibling:
                    generates: ['../\(Self.lastComponent(directory.path))-sibling/out']
                    cmds: [echo]
                  allowed:
                    generates: ['../x', /elsewhere/other]
                    dir: ..
                    allow-outside-root: true
                    cmds: [echo]
                  inside:
                    generates: ['build/../out', '\(directory.path)/dist/app']
                    dir: sub/..
                    cmds: [echo]
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        let errors = try planErrors(taskfile, targets: taskfile.tasks.map(\.name))
        #expect(errors.map(\.code) == Array(repeating: .outsideRoot, count: 4))
        #expect(errors.map(\.location) == [at(file, 4, 17), at(file, 7, 17), at(file, 9, 3), at(file, 13, 17)])
        #expect(errors.first?.message.contains("add 'allow-outside-root: true'") == true)
    }

    @Test func plannerMistakesAreReportedSortedByPosition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  app:
                    deps: [lib]
                    generates: ['../app']
                    cmds: [echo]
                  lib:
                    generates: ['../lib']
                    cmds: [echo]
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        let errors = try planErrors(taskfile, targets: ["app"])
        #expect(errors.map(\.location) == [at(file, 5, 17), at(file, 8, 17)])
    }

    @Test func anUnknownTargetIsReportedWithTheClosestTaskName() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo build
                  test: echo test
                """
            ]
        )
        let errors = try planErrors(taskfile, targets: ["buld"])
        let error = try #require(errors.only)
        #expect(error.code == .unknownTask)
        #expect(error.message.contains("no task named 'buld'"))
        #expect(error.message.contains("did you mean 'build'?"))
    }

    @Test func noTargetAndNoDefaultTaskIsAnErrorNamingTheTasks() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo build
                  test: echo test
                """
            ]
        )
        let errors = try planErrors(taskfile, targets: [])
        let error = try #require(errors.only)
        #expect(error.code == .unknownTask)
        #expect(error.message.contains("no 'default' task"))
        #expect(error.message.contains("build, test"))
    }

    private static func lastComponent(_ path: String) -> String {
        String(path.split(separator: "/").last ?? "")
    }
}
