import Crypto
import Foundation
import KilnPluginAPI
import SwiftProtobuf

typealias ProtoDigest = Build_Bazel_Remote_Execution_V2_Digest

/// A blob to upload: its digest, and how to get its bytes when the server lacks it.
typealias Blob = (digest: ProtoDigest, contents: () throws -> Data)

/// **The recipe** that makes a job's REAPI messages: the Command, the input tree (one Directory
/// message per directory) and the Action, each with its digest. The cache looks results up by the
/// Action's digest, and `kiln explain --remote-keys` prints the same one: both call ``make(_:)``.
///
/// - **Command:** the spec's arguments; its environment, sorted by name; its output paths, sorted,
///   relative to the working directory (REAPI 2.1's `output_paths`); its working directory.
/// - **Input root:** the spec's input files under the root, each with its content's SHA-256 and its
///   executable bit, in directories whose entries are sorted by name (the protocol's canonical
///   form); the working directory is in the tree even when no input is.
/// - **Action:** the Command's digest and the input root's. No timeout, salt or platform yet.
///
/// Threading: stateless; any thread. Files are read on the calling thread.
enum ActionRecipe {
    /// A job's messages, encoded, and their digests.
    ///
    /// Threading: immutable; safe to share between threads.
    struct Made: Sendable {
        var actionBytes: Data
        var actionDigest: ProtoDigest
        var commandBytes: Data
        var commandDigest: ProtoDigest
        /// Every Directory message of the input tree with its digest, by the digest's hash (the
        /// root among them).
        var directories: [String: (digest: ProtoDigest, bytes: Data)]
        var inputRootDigest: ProtoDigest
        /// Each input file: its path under the root, digest and executable bit.
        var files: [(path: String, digest: ProtoDigest, isExecutable: Bool)]

        /// The Command and the Action, as blobs: what a stored result or an execution refers to.
        var messages: [String: Blob] {
            [
                commandDigest.hash: (commandDigest, { commandBytes }),
                actionDigest.hash: (actionDigest, { actionBytes }),
            ]
        }
    }

    /// Makes the messages of `spec`.
    static func make(_ spec: RemoteActionSpec) throws(RemoteFailure) -> Made {
        var command = Build_Bazel_Remote_Execution_V2_Command()
        command.arguments = spec.arguments
        command.environmentVariables = spec.environment.sorted { $0.key < $1.key }.map { name, value in
            var variable = Build_Bazel_Remote_Execution_V2_Command.EnvironmentVariable()
            variable.name = name
            variable.value = value
            return variable
        }
        command.outputPaths = Array(Set(spec.outputFiles)).sorted()
        command.workingDirectory = spec.workingDirectory
        let commandBytes = serialized(command)

        var files: [(path: String, digest: ProtoDigest, isExecutable: Bool)] = []
        for path in Set(spec.inputs).sorted() {
            let (digest, executable) = try fileDigest(spec.root + "/" + path)
            files.append((path, digest, executable))
        }
        let tree = InputTree(files: files, workingDirectory: spec.workingDirectory)

        var action = Build_Bazel_Remote_Execution_V2_Action()
        action.commandDigest = digest(of: commandBytes)
        action.inputRootDigest = tree.rootDigest
        let actionBytes = serialized(action)
        return Made(
            actionBytes: actionBytes,
            actionDigest: digest(of: actionBytes),
            commandBytes: commandBytes,
            commandDigest: action.commandDigest,
            directories: tree.directories,
            inputRootDigest: tree.rootDigest,
            files: files
        )
    }

    /// ``make(_:)`` as the host sees it.
    static func prepare(_ spec: RemoteActionSpec) throws(RemoteFailure) -> RemoteAction {
        let made = try make(spec)
        return RemoteAction(
            spec: spec,
            key: made.actionDigest.remote,
            commandKey: made.commandDigest.remote,
            inputRootKey: made.inputRootDigest.remote,
            details: made
        )
    }

    /// A message's bytes in the protocol's canonical form (fields in number order, which is what
    /// swift-protobuf writes; no unknown fields).
    static func serialized(_ message: some SwiftProtobuf.Message) -> Data {
        // Only a message with required fields unset fails, and REAPI's have none.
        (try? message.serializedBytes()) ?? Data()
    }

    /// The SHA-256 digest of `bytes`.
    static func digest(of bytes: Data) -> ProtoDigest {
        bytes.withUnsafeBytes { digest(of: $0) }
    }

    /// The SHA-256 digest of `bytes`.
    static func digest(of bytes: [UInt8]) -> ProtoDigest {
        bytes.withUnsafeBytes { digest(of: $0) }
    }

    /// The SHA-256 digest of `bytes`, hashed in place (`SHA256.hash(data:)` walks a `Data`'s
    /// regions through generic code: ~10K instructions for a 100-byte message, a fifth of that here).
    static func digest(of bytes: UnsafeRawBufferPointer) -> ProtoDigest {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        var digest = ProtoDigest()
        digest.hash = hasher.finalize().hexadecimal
        digest.sizeBytes = Int64(bytes.count)
        return digest
    }

    /// The SHA-256 digest of the file at `path`, read in 1 MiB pieces, and whether it is executable.
    static func fileDigest(_ path: String) throws(RemoteFailure) -> (ProtoDigest, Bool) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw RemoteFailure("can't read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw RemoteFailure("\(path) is not a regular file; only files can be inputs of a remote action")
        }
        var hasher = SHA256()
        // Big enough for most files in one read; never more than 1 MiB.
        let capacity = Int(min(max(Int64(status.st_size), 1), 1 << 20))
        var buffer = [UInt8](unsafeUninitializedCapacity: capacity) { _, count in count = capacity }
        var size: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw RemoteFailure("can't read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            size += Int64(count)
        }
        var digest = ProtoDigest()
        digest.hash = hasher.finalize().hexadecimal
        digest.sizeBytes = size
        return (digest, status.st_mode & S_IXUSR != 0)
    }
}

/// An input tree: the files under the root, as Directory messages.
///
/// Threading: a value type.
struct InputTree {
    /// Every Directory message, encoded, with its digest, by the digest's hash.
    private(set) var directories: [String: (digest: ProtoDigest, bytes: Data)] = [:]
    private(set) var rootDigest = ProtoDigest()

    private final class Node {
        var files: [String: (ProtoDigest, Bool)] = [:]
        var children: [String: Node] = [:]
    }

    init(files: [(path: String, digest: ProtoDigest, isExecutable: Bool)], workingDirectory: String) {
        let root = Node()
        func node(at components: some Collection<Substring>) -> Node {
            var current = root
            for name in components {
                let next = current.children[String(name)] ?? Node()
                current.children[String(name)] = next
                current = next
            }
            return current
        }
        for file in files {
            let components = file.path.split(separator: "/")
            node(at: components.dropLast()).files[String(components.last!)] = (file.digest, file.isExecutable)
        }
        _ = node(at: workingDirectory.split(separator: "/"))
        rootDigest = encode(root)
    }

    private mutating func encode(_ node: Node) -> ProtoDigest {
        var directory = Build_Bazel_Remote_Execution_V2_Directory()
        directory.files = node.files.sorted { $0.key < $1.key }.map { name, file in
            var entry = Build_Bazel_Remote_Execution_V2_FileNode()
            entry.name = name
            entry.digest = file.0
            entry.isExecutable = file.1
            return entry
        }
        directory.directories = node.children.sorted { $0.key < $1.key }.map { name, child in
            var entry = Build_Bazel_Remote_Execution_V2_DirectoryNode()
            entry.name = name
            entry.digest = encode(child)
            return entry
        }
        let bytes = ActionRecipe.serialized(directory)
        let digest = ActionRecipe.digest(of: bytes)
        directories[digest.hash] = (digest, bytes)
        return digest
    }
}

/// `bytes` in lower-case hexadecimal.
func hexadecimal(_ bytes: UnsafeRawBufferPointer) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { text in
        @inline(__always) func digit(_ value: UInt8) -> UInt8 { value < 10 ? 48 + value : 87 + value }
        for (index, byte) in bytes.enumerated() {
            text[2 * index] = digit(byte >> 4)
            text[2 * index + 1] = digit(byte & 15)
        }
        return bytes.count * 2
    }
}

extension SHA256Digest {
    /// Lower-case hexadecimal, from the digest's bytes in place.
    var hexadecimal: String { withUnsafeBytes(KilnRemote.hexadecimal) }
}

extension ProtoDigest {
    /// As the host sees it.
    var remote: RemoteDigest { RemoteDigest(hash: hash, size: sizeBytes) }
}
