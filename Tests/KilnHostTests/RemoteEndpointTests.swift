import Foundation
import KilnHost
import KilnPluginAPI
import Testing

@Suite("Remote endpoints and the remote recipe's command lines")
struct RemoteEndpointTests {
    @Test("grpc://HOST:PORT is read; every other form is refused")
    func urls() {
        let plain = RemoteEndpoint(url: "grpc://cache.example.com:50051", instance: "main")
        #expect(plain?.host == "cache.example.com")
        #expect(plain?.port == 50051)
        #expect(plain?.instance == "main")
        #expect(plain?.queueName == "net:cache.example.com:50051")
        #expect(plain?.description == "grpc://cache.example.com:50051 (instance main)")
        #expect(plain?.url == "grpc://cache.example.com:50051")
        #expect(RemoteEndpoint(url: "grpc://127.0.0.1:8980/")?.port == 8980)
        let six = RemoteEndpoint(url: "grpc://[::1]:9000")
        #expect(six?.host == "::1")
        #expect(six?.description == "grpc://[::1]:9000")
        #expect(six?.url == "grpc://[::1]:9000")
        for refused in [
            "grpcs://cache:443", "http://cache:80", "grpc://cache", "grpc://:80", "grpc://cache:0",
            "grpc://cache:70000",
            "grpc://cache:port", "unix:///tmp/socket", "grpc://[::1]", "grpc://a/b:80", "",
        ] {
            #expect(RemoteEndpoint(url: refused) == nil, "\(refused)")
        }
    }

    @Test("several commands become one /bin/sh -e script that runs each as kiln does, stopping at the first failure")
    func scriptsRunLikeTheSteps() throws {
        // The recipe's script, run for real: an ignored failure goes on, a failed `if:` skips its
        // command, a failure stops the rest and is the script's exit status.
        let arguments = RemoteRecipe.arguments(ofCommands: [
            (command: "echo one", ignoresError: false, condition: nil),
            (command: "exit 4", ignoresError: true, condition: nil),
            (command: "echo 'it''s' skipped", ignoresError: false, condition: "test -e /nonexistent"),
            (command: "[[ 1 == 1 ]] && echo bash", ignoresError: false, condition: "true"),
            (command: "exit 3", ignoresError: false, condition: nil),
            (command: "echo never", ignoresError: false, condition: nil),
        ])
        #expect(arguments.prefix(3) == ["/bin/sh", "-e", "-c"])
        let (status, output) = try runCommandLine(arguments)
        #expect(status == 3)
        #expect(output == "one\nbash\n")
        // One plain command is exactly the command line kiln starts for it.
        #expect(
            RemoteRecipe.arguments(ofCommands: [("cc -c a.c", false, nil)]) == ["/bin/sh", "-e", "-c", "cc -c a.c"]
        )
    }
}

/// Runs `arguments` (the program first); its exit status and standard output.
private func runCommandLine(_ arguments: [String]) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: arguments[0])
    process.arguments = Array(arguments.dropFirst())
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
