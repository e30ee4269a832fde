import KilnPaths
import Testing

@testable import KilnHookPlan

#if canImport(Glibc)
    import Glibc
#endif

/// What the launcher's quick run takes itself, and what it leaves to the full command.
@Suite("The quick run's command lines and requirements")
struct QuickRunArgumentsTests {
    @Test(
        "only `kiln` and `kiln run [-j N] TASK…` are the launcher's; another option, a variable or `--` is the full command's"
    )
    func commandLines() {
        #expect(QuickRun.targets(["kiln"]) == [])
        #expect(QuickRun.targets(["kiln", "run"]) == [])
        #expect(QuickRun.targets(["kiln", "run", "build", "test:unit"]) == ["build", "test:unit"])
        // `-j` only widens the cpu queue: a no-op is the same at any width.
        for line in [
            ["kiln", "run", "-j", "2", "build"], ["kiln", "run", "build", "-j8"],
            ["kiln", "run", "--jobs", "3", "build"],
            ["kiln", "run", "--jobs=16", "build"],
        ] {
            #expect(QuickRun.targets(line) == ["build"], "\(line)")
        }
        for line in [
            ["kiln", "build"], ["kiln", "list"], ["kiln", "run", "-j", "0"], ["kiln", "run", "-j"],
            ["kiln", "run", "-jx"],
            ["kiln", "run", "--jobs=-1"], ["kiln", "run", "-j", "99999999999"], ["kiln", "run", "--force"],
            ["kiln", "run", "build", "VERSION=2"], ["kiln", "run", "build", "--", "-v"], ["kiln", "run", ""],
            ["kiln", "--help"], ["kiln", "run", "-n"],
        ] {
            #expect(QuickRun.targets(line) == nil, "\(line)")
        }
    }

    @Test(
        "an environment variable holds while its value hashes the same; no variables on the command line; specials are the full command's"
    )
    func requirements() {
        setenv("KILN_QUICK_RUN_TEST", "one", 1)
        defer { unsetenv("KILN_QUICK_RUN_TEST") }
        let one = TaskfileCacheHeader.requirementHash("one")
        #expect(QuickRun.requirementHolds("env:KILN_QUICK_RUN_TEST", one))
        #expect(!QuickRun.requirementHolds("env:KILN_QUICK_RUN_TEST", TaskfileCacheHeader.requirementHash("two")))
        #expect(!QuickRun.requirementHolds("env:KILN_QUICK_RUN_TEST", nil))
        #expect(QuickRun.requirementHolds("env:KILN_QUICK_RUN_UNSET", nil))
        #expect(!QuickRun.requirementHolds("env:KILN_QUICK_RUN_UNSET", one))
        #expect(QuickRun.requirementHolds("cli:variables", TaskfileCacheHeader.requirementHash("")))
        #expect(!QuickRun.requirementHolds("cli:variables", TaskfileCacheHeader.requirementHash("A=1")))
        #expect(!QuickRun.requirementHolds("special:CLI_ARGS", TaskfileCacheHeader.requirementHash("")))
    }
}
