// swift-tools-version: 6.1
//
// The Kiln runtime: the libraries that the `kiln` host and every task plugin
// must share as *one* copy in the process. They live in their own package
// because SwiftPM links a target of the same package statically into each
// product that uses it; a dynamic library product of another package is linked
// dynamically, so the host and each plugin `.so` resolve the same `Job` class.
import PackageDescription

let package = Package(
    name: "KilnRuntime",
    products: [
        .library(name: "KilnJobs", type: .dynamic, targets: ["KilnJobs"]),
        .library(name: "KilnPluginAPI", type: .dynamic, targets: ["KilnPluginAPI"]),
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
                // Every shared field is guarded by a lock (the scheduler's or the job's), so the
                // runtime's dynamic exclusivity checks only cost time (a TLS lookup per access).
                .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
            ]
        ),
        .target(
            name: "KilnPluginAPI",
            dependencies: ["KilnJobs", "CKilnPluginABI"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
