import Foundation

// kiln-bench: Kiln's benchmarks, each comparing Kiln with its peers in the same run.
//
//   kiln-bench hash [--megabytes N]
//       content-hashing throughput (XXH3-128) beside md5sum and sha256sum
//   kiln-bench host --kiln PATH --ninja PATH --task PATH [--work DIR] [--quick]
//       [--only dry-run|critical-path|each|full] [--baseline KILN]
//       kiln vs ninja vs go-task on generated projects
//   kiln-bench incremental --kiln PATH --ninja PATH --task PATH [--work DIR] [--quick] [--only small|change]
//       [--baseline KILN]
//       no-op and one-changed-file runs: kiln vs ninja vs go-task; a small C project's no-op vs make
//   kiln-bench plugins --kiln PATH [--work DIR]
//       what loading every bundled plugin adds to kiln's start-up
//   kiln-bench git --kiln PATH --lefthook PATH [--files N] [--work DIR]
//       changed files vs git status; a pre-commit hook with nothing affected vs lefthook
//   kiln-bench remote --kiln PATH --ninja PATH --casd PATH --scripts DIR [--work DIR] [--quick] [--cache-only]
//       [--baseline PATH]
//       a second checkout's build from a warm remote cache (buildbox-casd) vs local and ninja;
//       remote execution on BuildGrid with 1 and 2 kiln workers (scripts/remote-up) vs local -j2
//   kiln-bench jobs [--quick] [--engines kiln,foundation,dispatch] [--repeat N]
//       [--shapes independent,chain,layered,priorities]
//       the KilnJobs engine vs Foundation's OperationQueue and Dispatch
let arguments = Array(CommandLine.arguments.dropFirst())

/// The value after `flag`, if given.
func value(_ flag: String) -> String? {
    arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}

/// `--kiln`, `--ninja` and `--task`, or the usage line and exit status 2.
func peers(usage: String) -> (kiln: String, ninja: String, task: String) {
    guard let kiln = value("--kiln"), let ninja = value("--ninja"), let task = value("--task") else {
        print("usage: kiln-bench \(usage) --kiln PATH --ninja PATH --task PATH [--work DIR] [--quick]")
        exit(2)
    }
    return (kiln, ninja, task)
}
switch arguments.first {
case "jobs":
    var benchmark = JobsBenchmark(quick: arguments.contains("--quick"))
    if let index = arguments.firstIndex(of: "--engines"), index + 1 < arguments.count {
        let names = arguments[index + 1].split(separator: ",").map(String.init)
        let engines = names.compactMap(JobsBenchmark.Engine.named)
        guard engines.count == names.count else {
            print("kiln-bench: unknown engine in '\(arguments[index + 1])'; use kiln, foundation, dispatch")
            exit(2)
        }
        benchmark.engines = engines
    }
    if let index = arguments.firstIndex(of: "--repeat"), index + 1 < arguments.count {
        guard let repeats = Int(arguments[index + 1]), repeats > 0 else {
            print("kiln-bench: --repeat takes a positive number")
            exit(2)
        }
        benchmark.repeats = repeats
    }
    if let index = arguments.firstIndex(of: "--shapes"), index + 1 < arguments.count {
        benchmark.shapes = Set(arguments[index + 1].split(separator: ",").map(String.init))
    }
    benchmark.run()
case "hash":
    let sizeIndex = arguments.firstIndex(of: "--megabytes")
    let megabytes = sizeIndex.flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 1024
    do {
        try HashBenchmark(megabytes: megabytes, directory: NSTemporaryDirectory()).run()
    } catch {
        print("kiln-bench hash: \(error)")
        exit(1)
    }
case "incremental":
    let (kiln, ninja, task) = peers(usage: "incremental")
    let benchmark = IncrementalBenchmark(
        kiln: kiln,
        ninja: ninja,
        task: task,
        quick: arguments.contains("--quick"),
        workDirectory: value("--work") ?? "/tmp/kiln-bench-host",
        baseline: value("--baseline")
    )
    do {
        if value("--only") == "change" {
            try benchmark.printPairedChange()
        } else {
            if value("--only") != "small" { try benchmark.run() }
            try SmallProjectBenchmark(kiln: kiln, ninja: ninja, workDirectory: benchmark.workDirectory).run()
        }
    } catch {
        print("kiln-bench incremental: \(error)")
        exit(1)
    }
case "plugins":
    guard let kiln = value("--kiln") else {
        print("usage: kiln-bench plugins --kiln PATH [--work DIR]")
        exit(2)
    }
    do {
        try PluginBenchmark(kiln: kiln, workDirectory: value("--work") ?? "/tmp/kiln-bench-host").run()
    } catch {
        print("kiln-bench plugins: \(error)")
        exit(1)
    }
case "git":
    guard let kiln = value("--kiln"), let lefthook = value("--lefthook") else {
        print("usage: kiln-bench git --kiln PATH --lefthook PATH [--files N] [--work DIR]")
        exit(2)
    }
    do {
        try GitBenchmark(
            kiln: kiln,
            lefthook: lefthook,
            files: value("--files").flatMap { Int($0) } ?? 100_000,
            workDirectory: value("--work") ?? "/tmp/kiln-bench-host"
        ).run()
    } catch {
        print("kiln-bench git: \(error)")
        exit(1)
    }
case "remote":
    guard let kiln = value("--kiln"), let ninja = value("--ninja"), let casd = value("--casd"),
        let scripts = value("--scripts")
    else {
        print(
            "usage: kiln-bench remote --kiln PATH --ninja PATH --casd PATH --scripts DIR [--work DIR] [--quick] [--cache-only] [--baseline PATH]"
        )
        exit(2)
    }
    do {
        try RemoteBenchmark(
            kiln: kiln,
            baseline: value("--baseline"),
            ninja: ninja,
            casd: casd,
            scripts: scripts,
            quick: arguments.contains("--quick"),
            cacheOnly: arguments.contains("--cache-only"),
            // tmpfs when there is one: on this project's VMs, ext4 takes ~1 ms to create a file
            // once thousands were just deleted (each repetition deletes the last one's outputs),
            // which would swamp what the tools themselves do, both of them.
            workDirectory: value("--work")
                ?? (FileManager.default.fileExists(atPath: "/dev/shm")
                    ? "/dev/shm/kiln-bench-remote" : "/tmp/kiln-bench-remote")
        ).run()
    } catch {
        print("kiln-bench remote: \(error)")
        exit(1)
    }
case "host":
    let (kiln, ninja, task) = peers(usage: "host")
    let benchmark = HostBenchmark(
        kiln: kiln,
        ninja: ninja,
        task: task,
        quick: arguments.contains("--quick"),
        workDirectory: value("--work") ?? "/tmp/kiln-bench-host",
        baseline: value("--baseline")
    )
    do {
        let criticalPath = CriticalPathBenchmark(
            kiln: kiln,
            ninja: ninja,
            quick: arguments.contains("--quick"),
            workDirectory: value("--work") ?? "/tmp/kiln-bench-host"
        )
        switch value("--only") {
        case "dry-run": try benchmark.runDryRunsOnly()
        case "critical-path": try criticalPath.run()
        case "each": try benchmark.printEach()
        case "full": try benchmark.runFullInTurns()
        default:
            try benchmark.run()
            try criticalPath.run()
        }
    } catch {
        print("kiln-bench host: \(error)")
        exit(1)
    }
default:
    print("usage: kiln-bench hash [--megabytes N]")
    print("  hash   content hashing throughput, beside md5sum and sha256sum")
    print(
        "usage: kiln-bench host --kiln PATH --ninja PATH --task PATH [--work DIR] [--quick] [--only dry-run|critical-path|each|full] [--baseline KILN]"
    )
    print("  host   kiln vs ninja vs go-task on generated projects (wall time, peak RSS, ratios)")
    print(
        "usage: kiln-bench incremental --kiln PATH --ninja PATH --task PATH [--work DIR] [--quick] [--only small|change] [--baseline KILN]"
    )
    print("  incremental  no-op and one-changed-file runs vs ninja and go-task (time, jobs ran, state size)")
    print("usage: kiln-bench plugins --kiln PATH [--work DIR]")
    print("  plugins      start-up time added by loading every bundled plugin")
    print("usage: kiln-bench git --kiln PATH --lefthook PATH [--files N] [--work DIR]")
    print("  git          changed files vs git status; pre-commit with nothing affected vs lefthook")
    print("usage: kiln-bench jobs [--quick] [--engines kiln,foundation,dispatch] [--repeat N]")
    print("  jobs   KilnJobs vs Foundation OperationQueue vs DispatchQueue (µs per job, peak RSS)")
    exit(2)
}
