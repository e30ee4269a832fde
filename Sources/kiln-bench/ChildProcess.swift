import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One run of a peer tool: wall time, its own peak RSS (from `wait4`), and its exit status.
struct ChildRun {
    var seconds: Double
    var peakMegabytes: Double
    var status: Int32
    var output: String
}

/// Runs `arguments` in `directory`, output captured (or discarded), and measures it: wall time
/// here, peak RSS through GNU time (a small parent: a child spawned straight from this process
/// would inherit this process's RSS high-water mark at exec), killed after `timeout` seconds.
func runChild(
    _ arguments: [String],
    in directory: String,
    captureOutput: Bool = false,
    environment: [String: String] = [:],
    timeout: Int = 600
) -> ChildRun {
    let rssPath = NSTemporaryDirectory() + "kiln-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).rss"
    defer { unlink(rssPath) }
    var fileActions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fileActions)
    defer { posix_spawn_file_actions_destroy(&fileActions) }
    let outputPath = NSTemporaryDirectory() + "kiln-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
    posix_spawn_file_actions_addopen(
        &fileActions,
        1,
        captureOutput ? outputPath : "/dev/null",
        O_WRONLY | O_CREAT | O_TRUNC,
        0o644
    )
    posix_spawn_file_actions_adddup2(&fileActions, 1, 2)
    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { _, new in new }
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    // `cd` through a shell that then `exec`s the tool: the measured process is the tool itself.
    let shellArguments =
        [
            "/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", directory,
            "/usr/bin/time", "-f", "%M", "-o", rssPath, "timeout", "-s", "KILL", "\(timeout)",
        ] + arguments
    let argv = shellArguments.map { strdup($0) } + [nil]
    defer {
        for pointer in envp { free(pointer) }
        for pointer in argv { free(pointer) }
    }
    let start = DispatchTime.now().uptimeNanoseconds
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/bin/sh", &fileActions, nil, argv, envp)
    guard spawned == 0 else {
        return ChildRun(
            seconds: 0,
            peakMegabytes: 0,
            status: -1,
            output: "spawn failed: \(String(cString: strerror(spawned)))"
        )
    }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    var output = ""
    if captureOutput {
        output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        unlink(outputPath)
    }
    var exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    // GNU time reports a killed child as "Command terminated by signal N" before the number.
    let report = (try? String(contentsOfFile: rssPath, encoding: .utf8)) ?? ""
    if report.contains("terminated by signal") { exitStatus = 137 }
    let kilobytes = report.split(separator: "\n").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
    return ChildRun(seconds: seconds, peakMegabytes: kilobytes / 1024, status: exitStatus, output: output)
}

/// Wall-clock seconds of a short command spawned directly — no shell, `time` or `timeout` in
/// front of it, whose own start-up would swamp a 20 ms measurement — with its output discarded.
func timeDirect(_ arguments: [String], in directory: String, environment: [String: String] = [:]) -> Double {
    var fileActions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fileActions)
    defer { posix_spawn_file_actions_destroy(&fileActions) }
    posix_spawn_file_actions_addopen(&fileActions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&fileActions, 2, "/dev/null", O_WRONLY, 0)
    var env = ProcessInfo.processInfo.environment
    env.merge(environment) { _, new in new }
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    let argv = arguments.map { strdup($0) } + [nil]
    defer {
        for pointer in envp { free(pointer) }
        for pointer in argv { free(pointer) }
    }
    // The child starts in `directory`: kiln-bench runs one command at a time, so it moves there.
    let previous = FileManager.default.currentDirectoryPath
    _ = FileManager.default.changeCurrentDirectoryPath(directory)
    defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
    let start = DispatchTime.now().uptimeNanoseconds
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], &fileActions, nil, argv, envp) == 0 else { return .nan }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}
