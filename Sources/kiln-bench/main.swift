// kiln-bench: Kiln's benchmarks, each comparing Kiln with its peers in the same run.
//
//   kiln-bench jobs [--quick]   the KilnJobs engine vs Foundation's OperationQueue and Dispatch
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "jobs":
    JobsBenchmark(quick: arguments.contains("--quick")).run()
default:
    print("usage: kiln-bench jobs [--quick]")
    print("  jobs   KilnJobs vs Foundation OperationQueue vs DispatchQueue (µs per job, peak RSS)")
}
