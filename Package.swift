// swift-tools-version: 6.1
//
// Kiln: a build-task orchestrator on an NSOperation-style job engine.
//
// The engine (KilnJobs) lives in the local package Packages/KilnRuntime as a *dynamic* library
// product, so the `kiln` host and every task plugin share one copy of it in the process.
import PackageDescription

let swiftSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]

// What a run loads. No module of the host, its launcher, the runtime or kiln's own plugins imports
// the string processing library (Swift's Regex) by default, nor Dispatch's Swift overlay, which
// needs it: loaded, it and the RegexParser it needs are 1 MB of a process's memory, and no run
// uses them (the templates' regular expressions are Go's, KilnTemplate/GoRegexp.swift). Nor Swift's
// concurrency runtime, which loads libdispatch, 0.9 MB more: a run's threads are kiln's own
// (KilnPaths/Threads.swift, the engine's scheduler). Only the REAPI client (libKilnRemote.so),
// opened when a remote is configured, uses them. LoadedLibrariesTests and QuickRunTests hold this.
let withoutStringProcessing = ["-Xfrontend", "-disable-implicit-string-processing-module-import"]
let withoutConcurrency = ["-Xfrontend", "-disable-implicit-concurrency-module-import"]
let runSwiftSettings: [SwiftSetting] =
    swiftSettings + [.unsafeFlags(withoutStringProcessing + withoutConcurrency)]

// What a run executes, packed together (linker/README.md). The kernel maps a library's code in
// blocks of 64 KB or more around each page a process runs, so code spread thin over a library
// counts whole in every run's memory. Each function of the modules in libKilnCLI.so gets a
// section of its own, and the linker puts those a run executes side by side
// (linker/hot-sections.txt, from scripts/hot-sections).
let packedSwiftSettings: [SwiftSetting] =
    runSwiftSettings + [.unsafeFlags(["-Xfrontend", "-function-sections"])]

let package = Package(
    name: "Kiln",
    products: [
        .executable(name: "kiln", targets: ["kiln"]),
        // kiln's CLI, which the `kiln` launcher loads from beside itself (libKilnCLI.so).
        .library(name: "KilnCLI", type: .dynamic, targets: ["KilnCLI"]),
        .executable(name: "kiln-bench", targets: ["kiln-bench"]),
        .library(name: "KilnHost", targets: ["KilnHost"]),
        // Task plugins: loaded by kiln at run time from beside its executable (libkiln-NAME.so).
        .library(name: "kiln-archive", type: .dynamic, targets: ["KilnArchivePlugin"]),
        .library(name: "kiln-compress", type: .dynamic, targets: ["KilnCompressPlugin"]),
        .library(name: "kiln-http", type: .dynamic, targets: ["KilnHTTPPlugin"]),
        // The REAPI client (remote cache and execution), which kiln opens only when a remote is
        // configured (libKilnRemote.so): a run without one never loads gRPC, NIO or BoringSSL.
        .library(name: "KilnRemote", type: .dynamic, targets: ["KilnRemote"]),
        // Plugins the tests load: built against another ABI, claiming a taken kind, misbehaving.
        .library(name: "kilntest-oldabi", type: .dynamic, targets: ["KilnTestPluginOldABI"]),
        .library(name: "kilntest-duplicate", type: .dynamic, targets: ["KilnTestPluginDuplicate"]),
        .library(name: "kilntest-behaviours", type: .dynamic, targets: ["KilnTestPluginBehaviours"]),
    ],
    dependencies: [
        .package(path: "Packages/KilnRuntime"),
        .package(url: "https://github.com/grpc/grpc-swift-2.git", exact: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", exact: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf.git", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-protobuf.git", exact: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // The remote cache's unary calls go over NIOHTTP2 directly (UnaryConnection).
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        .target(
            name: "KilnHost",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                "CKilnHost",
                "KilnPaths",
                "CYAML",
                "CXXHash",
                "CSQLite",
            ],
            swiftSettings: packedSwiftSettings
        ),
        // Its C functions get sections of their own too, for the same ordering.
        .target(name: "CKilnHost", cSettings: [.unsafeFlags(["-ffunction-sections"])]),
        // What the host and the launcher share: Taskfile discovery, `sources:` matching, content
        // hashes, the Taskfile cache's header, the up-to-date snapshot, the run lock.
        .target(name: "KilnPaths", dependencies: ["CXXHash"], swiftSettings: packedSwiftSettings),
        // libgit2, opened with dlopen on first use (Sources/CGit2/include/CGit2.h); its header from libgit2-dev.
        .target(name: "CGit2"),
        // Git's on-disk formats read directly (index, objects, packs, references): no libgit2,
        // so a hook with nothing to do never starts it.
        .target(name: "KilnGitFormat", dependencies: ["CKilnZlib", "KilnPaths"], swiftSettings: packedSwiftSettings),
        // libgit2 for the changed files of a repository (kiln affected, run --affected).
        .target(
            name: "KilnGit",
            dependencies: ["CGit2", "KilnGitFormat", "KilnHost"],
            swiftSettings: packedSwiftSettings
        ),
        .target(
            // zlib, for the archive and compress plugins and git's objects.
            name: "CKilnZlib",
            path: "Plugins/CKilnZlib",
            linkerSettings: [.linkedLibrary("z")]
        ),
        // A plugin depends on the runtime's dynamic products only — never on KilnHost — so the
        // process holds one KilnJobs, and a plugin's job is a `Job` to the host.
        .target(
            name: "KilnArchivePlugin",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                "CKilnZlib",
            ],
            path: "Plugins/Archive",
            swiftSettings: runSwiftSettings
        ),
        .target(
            name: "KilnTestPluginOldABI",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
            ],
            path: "Tests/Plugins/OldABI",
            swiftSettings: runSwiftSettings + [.unsafeFlags(["-Xcc", "-DKILN_PLUGIN_ABI_VERSION=999"])]
        ),
        .target(
            name: "KilnTestPluginDuplicate",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
            ],
            path: "Tests/Plugins/Duplicate",
            swiftSettings: runSwiftSettings
        ),
        .target(
            name: "KilnTestPluginBehaviours",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
            ],
            path: "Tests/Plugins/Behaviours",
            swiftSettings: runSwiftSettings
        ),
        // libcurl is opened with dlopen on the first transfer (see CKilnCurl.h), not linked.
        .target(name: "CKilnCurl", path: "Plugins/CKilnCurl"),
        .target(
            name: "KilnHTTPPlugin",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                "CKilnCurl",
            ],
            path: "Plugins/HTTP",
            swiftSettings: runSwiftSettings
        ),
        .target(
            name: "KilnCompressPlugin",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                "CKilnZlib",
            ],
            path: "Plugins/Compress",
            swiftSettings: runSwiftSettings
        ),
        // The REAPI client: the generated messages and services (scripts/generate-protos), the action
        // recipe (SHA-256 from swift-crypto), the cache and the executor. It shares only the runtime's
        // dynamic libraries with the CLI; the CLI reaches it through KilnPluginAPI's RemoteClient.
        .target(
            name: "KilnRemote",
            dependencies: [
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // What a hook or a run with nothing to do needs, and no more: the saved hook plan, git's
        // formats, the up-to-date snapshot (in KilnPaths).
        .target(
            name: "KilnHookPlan",
            dependencies: ["KilnGitFormat", "KilnPaths"],
            swiftSettings: packedSwiftSettings
        ),
        // kiln's command-line grammar: commands' specs, the parser, the help text. No Foundation: a
        // run never loads it.
        .target(name: "KilnCommandLine", swiftSettings: packedSwiftSettings),
        .target(
            name: "KilnCLI",
            dependencies: [
                "KilnHost",
                "KilnGit",
                "KilnGitFormat",
                "KilnHookPlan",
                "KilnPaths",
                "KilnCommandLine",
            ],
            swiftSettings: packedSwiftSettings,
            // The listed sections side by side; and the CLI's Swift symbols stay inside it (the
            // launcher looks up only its C entry points, and a table of 4,000 exported names is
            // pages every run reads).
            linkerSettings: [
                .unsafeFlags([
                    "-Xlinker", "--section-ordering-file=\(Context.packageDirectory)/linker/hot-sections.txt",
                    "-Xlinker", "--version-script=\(Context.packageDirectory)/linker/libKilnCLI.exports",
                ])
            ]
        ),
        // The launcher: answers a hook or a run with nothing to do itself, loads libKilnCLI.so otherwise.
        .executableTarget(
            name: "kiln",
            dependencies: ["KilnHookPlan", "KilnPaths"],
            swiftSettings: runSwiftSettings
        ),
        .executableTarget(
            name: "kiln-bench",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"), "KilnHost", "KilnPaths", "KilnGitFormat",
            ],
            path: "Sources/kiln-bench",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "KilnTestSupport",
            dependencies: [.product(name: "KilnJobs", package: "KilnRuntime")],
            path: "Tests/KilnTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnTemplateTests",
            dependencies: [.product(name: "KilnPluginAPI", package: "KilnRuntime"), "KilnTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnHostTests",
            dependencies: [
                "KilnHost",
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnPluginAPI", package: "KilnRuntime"),
                "KilnTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // End to end: runs the `kiln` executable that `swift build --build-tests` puts beside the
        // test bundle (a test target can't depend on an executable target's product by path).
        .testTarget(
            name: "KilnCLITests",
            dependencies: ["KilnTestSupport"],
            swiftSettings: swiftSettings
        ),
        // The REAPI client's parts, alone: the joined reads, digests, and the lean unary calls
        // against buildbox-casd and misbehaving sockets (the rest is tested through kiln against
        // real servers, in KilnCLITests).
        .testTarget(
            name: "KilnRemoteTests",
            dependencies: ["KilnRemote", "KilnTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnGitTests",
            dependencies: ["KilnGit", "KilnGitFormat", "KilnTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnCommandLineTests",
            dependencies: ["KilnCommandLine"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnHookPlanTests",
            dependencies: ["KilnHookPlan", "KilnTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KilnJobsTests",
            dependencies: [
                .product(name: "KilnJobs", package: "KilnRuntime"),
                .product(name: "KilnJobsAsync", package: "KilnRuntime"),
                "KilnTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
