// swift-tools-version: 6.1
// A task plugin outside Kiln's tree: `swift build` here makes .build/debug/libkiln-greet.so.
import PackageDescription

let package = Package(
    name: "greet-plugin",
    products: [.library(name: "kiln-greet", type: .dynamic, targets: ["Greet"])],
    // Depend on the runtime package, never on Kiln itself: the plugin then shares the host's
    // one copy of KilnJobs and KilnPluginAPI.
    dependencies: [.package(path: "../../Packages/KilnRuntime")],
    targets: [
        .target(
            name: "Greet",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
            ]
        )
    ]
)
