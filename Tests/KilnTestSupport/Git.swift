import Foundation

/// The options that give the tests' commits an author (`git -c …`), whatever the machine's
/// configuration: ``runGit(_:in:environment:)`` passes them, and so must a test that runs git
/// another way.
///
/// Threading: immutable; any thread.
public let gitIdentityOptions = ["-c", "user.email=kiln@example.invalid", "-c", "user.name=Kiln Tests"]

/// Runs the git CLI, as the tests use it to make real repositories: with a test identity, standard
/// input from /dev/null, and standard output and error together.
///
/// - Returns: The exit status and the output.
///
/// Threading: any thread.
@discardableResult
public func runGit(_ arguments: [String], in directory: String, environment: [String: String] = [:]) throws -> (
    status: Int32, output: String
) {
    try runProgram(
        "/usr/bin/git",
        gitIdentityOptions + arguments,
        in: directory,
        environment: environment
    )
}

/// Runs `executable` with `arguments` in `directory`, the test's environment plus `environment`,
/// standard input from /dev/null, and waits for it.
///
/// - Returns: The exit status, and standard output and error together.
///
/// Threading: any thread.
@discardableResult
public func runProgram(
    _ executable: String,
    _ arguments: [String],
    in directory: String,
    environment: [String: String] = [:]
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, output)
}

/// A git command that failed.
public struct GitCommandFailure: Error, CustomStringConvertible {
    /// The command and what it printed.
    public var description: String
    /// A failure described by `description`.
    public init(_ description: String) { self.description = description }
}

/// Runs git and throws unless it succeeds.
///
/// Threading: any thread.
@discardableResult
public func requireGit(_ arguments: [String], in directory: String) throws -> String {
    let (status, output) = try runGit(arguments, in: directory)
    guard status == 0 else {
        throw GitCommandFailure("git \(arguments.joined(separator: " ")) exited with \(status): \(output)")
    }
    return output
}
