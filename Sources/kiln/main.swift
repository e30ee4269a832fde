// The `kiln` executable: a launcher small enough to start in a few milliseconds.
//
// A pre-commit hook with nothing to do — what a person waits for on every commit — and a
// `kiln run` with nothing to do are answered here (``QuickHook``, ``QuickRun``). Everything else
// is kiln's CLI, in `libKilnCLI.so` beside this file, loaded now: opening it costs what linking
// it would have, and only commands that need it pay.
import KilnHookPlan
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

// One malloc arena for the whole process. glibc gives a new thread, or one that finds the arena
// locked, an arena of its own (up to eight per core), and a long run's freed memory stays
// scattered over them: a 50k-file `each:` run peaked at 76 MB of RSS with them, 68 MB without (its
// wall time within this machine's noise). Threads still take small blocks from their own caches
// without the lock (tcache). It is set first, before anything starts a thread: the quick look below
// stats paths on helper threads (KilnPaths.parallelLoop), and when it was set after the look, the
// first helper's first allocation made an arena of its own (9 MB of a warm 10k-task run's peak of
// 43 MB). A
// MALLOC_ARENA_MAX in the environment is the user's choice and stays. (`mallopt` and M_ARENA_MAX,
// -8, are in <malloc.h>, which Glibc's module doesn't import; a nil handle is RTLD_DEFAULT.)
if getenv("MALLOC_ARENA_MAX") == nil, let mallopt = dlsym(nil, "mallopt") {
    _ = unsafeBitCast(mallopt, to: (@convention(c) (Int32, Int32) -> Int32).self)(-8, 1)
}

if let status = QuickHook.answer(CommandLine.arguments) { exit(status) }
let quickRun = QuickRun.answer(CommandLine.arguments)
if case .answered(let status) = quickRun { exit(status) }

/// Writes `text` to standard error and exits with status 70 (EX_SOFTWARE).
func fail(_ text: String) -> Never {
    let line = "kiln: " + text + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(70)
}

/// kiln's own executable, its links resolved.
func ownExecutable() -> String {
    var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard realpath("/proc/self/exe", &resolved) != nil else { fail("can't find its own executable (/proc/self/exe)") }
    return String(decoding: resolved.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

let executable = ownExecutable()
let library = String(executable[..<executable.lastIndex(of: "/")!]) + "/libKilnCLI.so"
guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
    let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
    fail(
        "can't load its command-line library \(library): \(reason). Build every product with `swift build` (`swift run kiln` builds only this launcher), and keep libKilnCLI.so beside kiln."
    )
}
guard let entry = dlsym(handle, "kiln_cli_main") else {
    fail("\(library) has no kiln_cli_main: it isn't kiln's CLI library")
}
// A changed path seen here: the full command's run has work, and may load the Taskfile model at
// once; it is told what the look found, so it doesn't look again.
if case .changeSeen(let handover) = quickRun, let changeSeen = dlsym(handle, "kiln_cli_look_handed_over") {
    let bytes = handover.encoded()
    bytes.withUnsafeBufferPointer { buffer in
        unsafeBitCast(changeSeen, to: (@convention(c) (UnsafePointer<UInt8>?, Int) -> Void).self)(
            buffer.baseAddress,
            buffer.count
        )
    }
}
exit(unsafeBitCast(entry, to: (@convention(c) () -> Int32).self)())
