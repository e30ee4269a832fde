/// The header of the Taskfile cache (`.kiln/taskfile.cache`): which Taskfile the cached model is
/// of, every file its load read with the hash of its contents, and what else the load read (an
/// environment variable, the command line's variables), as a hash of each value.
///
/// The host writes the cache and reads the model after it; this part is here, below the host, so
/// the `kiln` launcher can tell whether the Taskfile changed without loading kiln's CLI — with the
/// same check as the host, not a copy of it.
///
/// Threading: stateless; safe from any thread.
package enum TaskfileCacheHeader {
    package static let magic = Array("KILNTFC\u{2}".utf8)
    /// Bump when the encoding or the meaning of the host's `Taskfile` model changes.
    package static let formatVersion = 32

    /// Stands for a file that doesn't exist (or can't be read).
    package static let absent = ContentHash(high: 0, low: 0)

    /// The content hash of a file, or ``absent``.
    package static func fingerprint(_ path: String) -> ContentHash {
        (try? FileContent.hash(path)) ?? absent
    }

    /// The hash a requirement records for a value (`nil`: there was none).
    package static func requirementHash(_ value: String?) -> UInt64? {
        value.map { FileChecksum.of(Array($0.utf8)[...]) }
    }

    /// Reads the header: magic, format, path, the fingerprint of every file the load read, each
    /// checked against the file now (`absent`: it must not exist), and each recorded requirement,
    /// which `holds` checks (its key — `env:HOME`, `cli:variables`, `special:CLI_ARGS` — and the
    /// hash of its value then). Returns the files when all match, `nil` otherwise.
    package static func read(
        _ reader: inout BinaryReader,
        taskfilePath: String,
        holds: (_ key: String, _ valueHash: UInt64?) -> Bool
    ) -> [String]? {
        guard reader.readBytes(count: magic.count) == magic, reader.readInteger() == formatVersion,
            reader.readString() == taskfilePath
        else { return nil }
        guard let fileCount = reader.readInteger(), fileCount < 100_000 else { return nil }
        var files: [String] = []
        for _ in 0..<fileCount {
            guard let file = reader.readString(), let high = reader.readUInt64(), let low = reader.readUInt64() else {
                return nil
            }
            if fingerprint(file) != ContentHash(high: high, low: low) { return nil }
            files.append(file)
        }
        guard let requirementCount = reader.readInteger(), requirementCount < 100_000 else { return nil }
        for _ in 0..<requirementCount {
            guard let key = reader.readString(), let present = reader.readBool() else { return nil }
            var hash: UInt64?
            if present {
                guard let value = reader.readUInt64() else { return nil }
                hash = value
            }
            guard holds(key, hash) else { return nil }
        }
        return files
    }

    /// A hash of the valid cache's header, or `nil` when there is no valid cache for
    /// `taskfilePath` (absolute). Equal identities mean the same Taskfiles with the same
    /// contents, loaded in the same context; the up-to-date snapshot is keyed on it.
    package static func identity(
        taskfilePath: String,
        root: String,
        holds: (_ key: String, _ valueHash: UInt64?) -> Bool
    ) -> ContentHash? {
        // The header alone: the model after it is checked (its checksum over the whole file) by
        // the load that needs it. When the header doesn't hold in the first bytes — it may go on
        // past them, or not match — the file is read and checked whole, as before.
        let path = KilnDirectory(root: root).taskfileCache
        if let (prefix, whole) = Files.readPrefix(path, count: headerReadSize), !whole {
            var reader = BinaryReader(bytes: prefix)
            if read(&reader, taskfilePath: taskfilePath, holds: holds) != nil {
                return ContentHash.of(prefix[0..<reader.offset])
            }
        }
        guard let bytes = Files.readSealed(path, magic: magic) else { return nil }
        var reader = BinaryReader(bytes: bytes)
        guard read(&reader, taskfilePath: taskfilePath, holds: holds) != nil else { return nil }
        return ContentHash.of(bytes[0..<reader.offset])
    }

    /// How much of the cache ``identity(taskfilePath:root:holds:)`` reads first: a header names
    /// each file a load read (a path and a hash, ~80 bytes) and each requirement.
    package static let headerReadSize = 64 * 1024
}
