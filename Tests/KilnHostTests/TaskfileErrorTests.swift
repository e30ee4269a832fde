import KilnPluginAPI
import KilnTestSupport
import Testing

@testable import KilnHost

/// Invalid Taskfiles: every class of mistake, with its exact file, line and column.
@Suite struct TaskfileErrorTests {
    @Test func malformedYAMLIsASyntaxErrorAtTheOffendingToken() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    cmds: echo a: b
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .syntax)
        #expect(error.location == at(directory.path("Taskfile.yml"), 4, 17))
        #expect(error.message.contains("mapping values are not allowed"))
    }

    @Test func aDuplicateTaskNameIsASyntaxErrorAtTheSecondKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo one
                  test: echo two
                  build: echo three
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .syntax)
        #expect(error.location == at(directory.path("Taskfile.yml"), 5, 3))
        #expect(error.message.contains("duplicate key 'build'"))
    }

    @Test func aDuplicateKeyInsideATaskIsASyntaxErrorAtTheSecondKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    cmds: [echo one]
                    desc: first
                    desc: second
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .syntax)
        #expect(error.location == at(directory.path("Taskfile.yml"), 6, 5))
        #expect(error.message.contains("duplicate key 'desc'"))
    }

    @Test func anUnknownKeyIsReportedWithTheClosestKnownKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                varz: {A: b}
                tasks:
                  build:
                    cnds: echo one
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        #expect(errors.map(\.code) == [.unknownKey, .unknownKey])
        #expect(errors.map(\.location) == [at(file, 2, 1), at(file, 5, 5)])
        #expect(errors.first?.message.contains("did you mean 'vars'?") == true)
        #expect(errors.last?.message.contains("unknown key 'cnds' in task 'build'; did you mean 'cmds'?") == true)
    }

    @Test func aValueOfTheWrongTypeIsReportedAtTheValue() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    deps: {compile: yes}
                    cmds: [echo]
                  compile:
                    desc: [not, a, string]
                    cmds: echo
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        #expect(errors.map(\.code) == [.wrongType, .wrongType])
        #expect(errors.map(\.location) == [at(file, 4, 11), at(file, 7, 11)])
        #expect(errors.first?.message.contains("'deps' must be a list, not a map") == true)
        #expect(errors.last?.message.contains("'desc' must be a string, not a list") == true)
    }

    /// A Taskfile with one value of the right type that isn't allowed, and where it is.
    struct InvalidValueCase: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var line: Int
        var column: Int
        var message: String
        var testDescription: String { name }
    }

    static let invalidValueCases: [InvalidValueCase] = [
        InvalidValueCase(
            name: "batch: 0",
            text: """
                version: '3'
                tasks:
                  compile:
                    each: sources
                    sources: ['*.c']
                    batch: 0
                    cmds: ['cc -c {{.source}}']
                """,
            line: 6,
            column: 12,
            message: "'batch' must be a positive integer, not '0'"
        ),
        InvalidValueCase(
            name: "width: 0",
            text: """
                version: '3'
                resources:
                  link: {width: 0}
                tasks:
                  build: echo
                """,
            line: 3,
            column: 17,
            message: "the width of resource 'link' must be a positive integer, not '0'"
        ),
        InvalidValueCase(
            name: "each: files",
            text: """
                version: '3'
                tasks:
                  compile:
                    each: files
                    sources: ['*.c']
                    cmds: [cc -c x.c]
                """,
            line: 4,
            column: 11,
            message: "'each' must be 'sources', not 'files'"
        ),
        InvalidValueCase(
            name: "a source starting with !",
            text: """
                version: '3'
                tasks:
                  lint:
                    sources: ['src/*.c', '!src/gen.c']
                    cmds: [lint]
                """,
            line: 4,
            column: 26,
            message:
                "'!src/gen.c' in 'sources' is a file name starting with '!', not an exclusion; to exclude files write '- exclude: src/gen.c'"
        ),
        InvalidValueCase(
            name: "an environment variable in generates",
            text: """
                version: '3'
                tasks:
                  build:
                    generates: ['$OUT/app']
                    cmds: [make]
                """,
            line: 4,
            column: 17,
            message: "go-task expands '$VARIABLE' and '~' here and kiln does not"
        ),
        InvalidValueCase(
            name: "timeout: 0s on a command",
            text: """
                version: '3'
                tasks:
                  build:
                    cmds:
                      - cmd: make
                        timeout: 0s
                """,
            line: 6,
            column: 18,
            message: "'timeout' must be greater than zero"
        ),
        InvalidValueCase(
            name: "timeout: -5m beside defer",
            text: """
                version: '3'
                tasks:
                  build:
                    cmds:
                      - defer: make clean
                        timeout: -5m
                """,
            line: 6,
            column: 18,
            message: "'timeout' must be greater than zero"
        ),
        InvalidValueCase(
            name: "timeout: in words on a call",
            text: """
                version: '3'
                tasks:
                  build:
                    cmds:
                      - task: other
                        timeout: five minutes
                  other: make
                """,
            line: 6,
            column: 18,
            message: "'timeout' must be a duration as Go writes one (500ms, 30s, 5m, 1h30m), not 'five minutes'"
        ),
        InvalidValueCase(
            name: "timeout: without a unit on a dependency",
            text: """
                version: '3'
                tasks:
                  build:
                    deps:
                      - task: other
                        timeout: 30
                  other: make
                """,
            line: 6,
            column: 18,
            message: "not '30'"
        ),
    ]

    @Test(arguments: invalidValueCases)
    func aValueOutsideItsAllowedRangeIsAnInvalidValueAtTheValue(_ example: InvalidValueCase) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(in: directory, ["Taskfile.yml": example.text])
        let error = try #require(errors.only)
        #expect(error.code == .invalidValue)
        #expect(error.location == at(directory.path("Taskfile.yml"), example.line, example.column))
        #expect(error.message.contains(example.message))
    }

    @Test func aTaskDefinedAgainThroughAnIncludeIsADuplicateWithANoteAtTheFirst() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: lib.yml
                tasks:
                  'lib:build': echo main
                """,
                "lib.yml": """
                version: '3'
                tasks:
                  build: echo lib
                """,
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .duplicateTask)
        #expect(error.location == at(directory.path("lib.yml"), 3, 3))
        #expect(error.message.contains("task 'lib:build' is defined twice"))
        #expect(error.notes.map(\.location) == [at(directory.path("Taskfile.yml"), 5, 3)])
    }

    @Test func anUnknownDependencyIsReportedWithTheClosestTaskName() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo build
                  test:
                    deps: [buld]
                    cmds: [echo test]
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .unknownTask)
        #expect(error.location == at(directory.path("Taskfile.yml"), 5, 12))
        #expect(error.message.contains("unknown task 'buld' in the deps of 'test'; did you mean 'build'?"))
    }

    @Test func aDependencyWithTwoLettersSwappedIsSuggestedTheIntendedTask() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build: echo build
                  test:
                    deps: [biuld]
                    cmds: [echo test]
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .unknownTask)
        #expect(error.message.contains("did you mean 'build'?"))
    }

    @Test func aDependencyCycleIsReportedOnceListingTheCycleWithANoteAtEachDependency() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  a:
                    deps: [b]
                    cmds: [echo a]
                  b:
                    deps: [c]
                    cmds: [echo b]
                  c:
                    deps: [a]
                    cmds: [echo c]
                  d:
                    deps: [a]
                    cmds: [echo d]
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        let error = try #require(errors.only)
        #expect(error.code == .dependencyCycle)
        #expect(error.location == at(file, 3, 3))
        #expect(error.message.contains("a → b → c → a"))
        #expect(error.notes.map(\.location) == [at(file, 4, 12), at(file, 7, 12), at(file, 10, 12)])
        #expect(
            error.notes.map(\.message) == [
                "'b' is a dependency here", "'c' is a dependency here", "'a' is a dependency here",
            ]
        )
    }

    @Test func anUndefinedVariableIsReportedAtTheReferenceInsideTheCommand() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadOrPlanErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                vars:
                  NAME: kiln
                tasks:
                  build:
                    cmds:
                      - echo {{.NAME}} {{.NAMEE}}
                      - 'echo {{.MISSING}}'
                      - "echo {{.MISSING}}"
                      - cmd: echo {{.OTHER}}
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        #expect(errors.map(\.code) == Array(repeating: .undefinedVariable, count: 4))
        #expect(errors.map(\.location) == [at(file, 7, 24), at(file, 8, 15), at(file, 9, 15), at(file, 10, 19)])
        #expect(errors.first?.message.contains("undefined variable 'NAMEE'; did you mean 'NAME'?") == true)
        #expect(
            errors.dropFirst().first?.message.contains("undefined variable 'MISSING'; define it under 'vars:'") == true
        )
    }

    @Test func theColumnOfAnUndefinedVariableCountsCharactersNotBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadOrPlanErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    cmds:
                      - echo → {{.MISSING}}
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .undefinedVariable)
        // `      - echo → ` is 15 characters (17 bytes): the reference starts at column 16.
        #expect(error.location == at(directory.path("Taskfile.yml"), 5, 16))
    }

    @Test func theColumnOfAnUndefinedVariableInADoubleQuotedScalarCountsEscapesAsWritten() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadOrPlanErrors(
            in: directory,
            [
                "Taskfile.yml": #"""
                version: '3'
                tasks:
                  build:
                    cmds:
                      - "echo \"{{.MISSING}}\""
                """#
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .undefinedVariable)
        // `      - "echo \"` is 16 characters: the reference starts at column 17.
        #expect(error.location == at(directory.path("Taskfile.yml"), 5, 17))
    }

    @Test func aDirThatCantBeRenderedIsOneErrorWhenPlannedEvenWithTaskVariablesAndDotenv() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadOrPlanErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    vars: {A: a}
                    dotenv: [.env]
                    dir: '{{.NOT_SET_ANYWHERE}}'
                    cmds: [echo]
                """
            ]
        )
        #expect(errors.count == 1, "\(errors)")
        // As the planner says it of a command, at the action.
        #expect(
            errors.first?.message.hasPrefix("undefined variable 'NOT_SET_ANYWHERE'; define it under 'vars:'") == true,
            "\(errors)"
        )
        #expect(errors.first?.location == at(directory.path("Taskfile.yml"), 6, 11), "\(errors)")
    }

    @Test func anUndefinedVariableInACalledInstanceNamesTheTaskTheCommandLineKnows() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  main:
                    cmds: [{task: b, vars: {X: '1'}}]
                  b:
                    cmds: ['echo {{.X | default ""}} {{.NOT_GIVEN}}']
                """
            ]
        )
        let errors = try planErrors(taskfile, targets: ["main"])
        #expect(errors.count == 1, "\(errors)")
        // Not `kiln run b (X=1) NOT_GIVEN=…`: an instance can't be run by name.
        #expect(errors.first?.message.contains("(kiln run b NOT_GIVEN=…)") == true, "\(errors)")
    }

    @Test func aTaskThatDoesNotRunHereIsNotChecked() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // go-task skips it whole on this machine: nothing of it is rendered.
        let taskfile = try loadTaskfile(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    deps: [mac, windows]
                  mac:
                    platforms: [darwin]
                    dir: 'examples/{{.DIR}}'
                    cmds: ['echo {{.DIR}}', {task: missing}]
                  windows:
                    if: '{{eq OS "windows"}}'
                    requires: {vars: [DIR]}
                    cmds: ['echo {{.DIR}}']
                """
            ]
        )
        let plan = try BuildPlanner(taskfile: taskfile, registry: try makeRegistry()).plan(targets: ["build"])
        #expect(plan.tasks.map(\.definition.name) == ["mac", "windows", "build"])
        #expect(plan.tasks.filter(\.definition.runsHere).map(\.definition.name) == ["build"])
    }

    @Test func perSourceVariablesOutsideAnEachTaskAreUndefinedWithAHint() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadOrPlanErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                tasks:
                  build:
                    cmds: ['cc -c {{.source}}']
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .undefinedVariable)
        #expect(error.location == at(directory.path("Taskfile.yml"), 4, 19))
        #expect(error.message.contains("undefined variable 'source'; it exists only in tasks with 'each: sources'"))
    }

    @Test func aClaimOfAResourceNoOneDefinedIsReportedAtTheClaim() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                resources:
                  link: 1
                tasks:
                  build:
                    resources: [cpu, gpu, net, link, disk, 'net:example.com']
                    cmds: [echo]
                """
            ]
        )
        let file = directory.path("Taskfile.yml")
        #expect(errors.map(\.code) == [.undefinedResource, .undefinedResource])
        #expect(errors.map(\.location) == [at(file, 6, 22), at(file, 6, 27)])
        #expect(errors.first?.message.contains("claims resource 'gpu', which no one defined") == true)
        #expect(errors.last?.message.contains("write net:HOST") == true)
    }

    @Test func filesThatIncludeEachOtherAreAnIncludeCycleAtTheClosingInclude() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  a: a.yml
                tasks:
                  main: echo
                """,
                "a.yml": """
                version: '3'
                includes:
                  back: Taskfile.yml
                tasks:
                  one: echo
                """,
            ]
        )
        let main = directory.path("Taskfile.yml"), included = directory.path("a.yml")
        let error = try #require(errors.only)
        #expect(error.code == .includeCycle)
        #expect(error.location == at(included, 3, 9))
        #expect(error.message.contains("\(main) → \(included) → \(main)"))
    }

    @Test func anIncludeThatCannotBeReadIsReportedAtTheInclude() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: missing/Lib.yml
                tasks:
                  main: echo
                """
            ]
        )
        let error = try #require(errors.only)
        #expect(error.code == .unreadableFile)
        #expect(error.location == at(directory.path("Taskfile.yml"), 3, 8))
        #expect(error.message.contains(directory.path("missing/Lib.yml")))
    }

    @Test func everyMistakeIsReportedTogetherSortedByPosition() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = try loadErrors(
            in: directory,
            [
                "Taskfile.yml": """
                version: '3'
                includes:
                  lib: lib.yml
                tasks:
                  build:
                    deps: [nope]
                    resources: [gpu]
                    cmds: ['echo {{upper}}']
                  test:
                    depz: [build]
                    cmds: [echo]
                """,
                "lib.yml": """
                version: '3'
                tasks:
                  one:
                    batch: 0
                    cmds: [echo]
                """,
            ]
        )
        let main = directory.path("Taskfile.yml"), included = directory.path("lib.yml")
        #expect(
            errors.map(\.code) == [.unknownTask, .undefinedResource, .invalidTemplate, .unknownKey, .invalidValue]
        )
        #expect(
            errors.map(\.location) == [
                at(main, 6, 12), at(main, 7, 17), at(main, 8, 20), at(main, 10, 5), at(included, 4, 12),
            ]
        )
    }
}

extension Array {
    /// The single element, or `nil` when there are none or several.
    var only: Element? { count == 1 ? first : nil }
}
