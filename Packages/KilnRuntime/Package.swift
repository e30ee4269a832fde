// swift-tools-version: 6.1
//
// The Kiln runtime: the libraries that the `kiln` host and every task plugin
// must share as *one* copy in the process. They live in their own package
// because SwiftPM links a target of the same package statically into each
// product that uses it; a dynamic library product of another package is linked
// dynamically, so the host and each plugin `.so` resolve the same `Job` class.
import PackageDescription

// No module here imports the string processing library (Swift's Regex) by default, as in the
// host (the root's Package.swift): loaded, it and the RegexParser it needs are 1 MB of a process's
// memory. The templates' regular expressions are Go's, matched by KilnTemplate/GoRegexp.swift.
// Nor Swift's concurrency runtime, which loads libdispatch: 0.9 MB more, and the engine runs on
// threads of its own. The suspending waits are in KilnJobsAsync, which only its importers load.
let withoutStringProcessing = ["-Xfrontend", "-disable-implicit-string-processing-module-import"]
let withoutConcurrency = ["-Xfrontend", "-disable-implicit-concurrency-module-import"]

let package = Package(
    name: "KilnRuntime",
    products: [
        .library(name: "KilnJobs", type: .dynamic, targets: ["KilnJobs"]),
        // The plugin API and the template language its requests render with: one library, so the
        // host and every plugin share one copy of each.
        .library(name: "KilnPluginAPI", type: .dynamic, targets: ["KilnPluginAPI", "KilnTemplate"]),
        // `await job.waitUntilFinished()` and `await queue.waitUntilAllJobsAreFinished()`: linked
        // into its importer, so only a program that awaits jobs loads Swift's concurrency runtime.
        .library(name: "KilnJobsAsync", targets: ["KilnJobsAsync"]),
    ],
    targets: [
        .target(name: "CKilnSystem"),
        // The plugin ABI: a C header whose #define a plugin reads when it is compiled.
        .target(name: "CKilnPluginABI"),
        .target(
            name: "KilnJobs",
            dependencies: ["CKilnSystem"],
            swiftSettings: [
                .swiftLanguageMode(.v6),
                .unsafeFlags(withoutStringProcessing + withoutConcurrency),
                // Every shared field is guarded by a lock (the scheduler's or the job's), so the
                // runtime's dynamic exclusivity checks only cost time (a TLS lookup per access).
                .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
            ]
        ),
        .target(
            name: "KilnJobsAsync",
            dependencies: ["KilnJobs"],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(withoutStringProcessing)]
        ),
        // Go's text/template, with go-task's and sprig's functions: the language of Taskfiles.
        .target(
            name: "KilnTemplate",
            swiftSettings: [
                .swiftLanguageMode(.v6),
                .unsafeFlags(["-Xfrontend", "-function-sections"] + withoutStringProcessing + withoutConcurrency),
            ]
        ),
        .target(
            name: "KilnPluginAPI",
            dependencies: ["KilnJobs", "CKilnPluginABI", "KilnTemplate"],
            swiftSettings: [
                .swiftLanguageMode(.v6),
                .unsafeFlags(["-Xfrontend", "-function-sections"] + withoutStringProcessing + withoutConcurrency),
            ],
            // What a run executes of this library and KilnTemplate, side by side (the root's
            // linker/README.md; scripts/hot-sections writes the list). The flag reaches only this
            // library's link, not its clients'.
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--section-ordering-file=\(Context.packageDirectory)/linker/hot-sections.txt",
                ])
            ]
        ),
    ]
)
