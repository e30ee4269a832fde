import Foundation

/// The peer tools Kiln's differential tests run beside it — go-task, ninja — as `scripts/test`
/// installs them from PyPI into `.build-peers/venv`. `KILN_PEERS_BIN` names another directory.
///
/// Threading: stateless; any thread.
public enum Peers {
    /// The directory holding the peers' executables.
    public static var binDirectory: String {
        if let named = ProcessInfo.processInfo.environment["KILN_PEERS_BIN"], !named.isEmpty { return named }
        // Tests/KilnTestSupport/Peers.swift → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build-peers/venv/bin").path
    }

    /// The path of the peer `name` (`task`, `ninja`), or a failure saying how to install it.
    public static func executable(_ name: String) throws -> String {
        let path = binDirectory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw PeerMissing(description: "\(path) is not installed: run scripts/test, which installs the peers from PyPI (go-task-bin, ninja) into .build-peers/venv")
        }
        return path
    }

    /// A peer the tests need is not installed.
    public struct PeerMissing: Error, CustomStringConvertible {
        public var description: String
    }
}
