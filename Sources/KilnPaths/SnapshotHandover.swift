extension UpToDateSnapshot {
    /// What the launcher's look at the snapshot found when a path had changed: which paths
    /// changed, and the fresh records of those it re-read and found the same. The full command,
    /// in the same process, uses it instead of looking at every path again (a `stat` each:
    /// twice 20,000 of them made up half of a one-file change's work in a 10k-task project).
    ///
    /// It holds only for the snapshot it was made against, named by the hash of its bytes: a run
    /// that came between the launcher and the full command replaced the snapshot, and the full
    /// command then looks for itself. The files may change after the look, as they may after any
    /// scan: what a job reads is what it records.
    ///
    /// The launcher and `libKilnCLI.so` each have their own copy of this module, so it crosses
    /// as bytes (``encoded()``, ``decode(_:)``).
    ///
    /// Threading: a value type.
    package struct Handover: Sendable, Equatable {
        /// The hash of the snapshot's bytes that were looked at.
        package var snapshot: ContentHash
        /// The positions, in ``UpToDateSnapshot/paths``, of the paths that changed.
        package var changed: [Int]
        /// The positions of the paths whose content was read and is the same, with their records
        /// taken then.
        package var refreshed: [(position: Int, entry: WatchedPath)]

        package init(snapshot: ContentHash, changed: [Int], refreshed: [(Int, WatchedPath)]) {
            self.snapshot = snapshot
            self.changed = changed
            self.refreshed = refreshed.map { (position: $0.0, entry: $0.1) }
        }

        package static func == (left: Handover, right: Handover) -> Bool {
            left.snapshot == right.snapshot && left.changed == right.changed
                && left.refreshed.elementsEqual(right.refreshed) { $0.position == $1.position && $0.entry == $1.entry }
        }

        private static let magic: [UInt8] = Array("KILNLOOK".utf8)
        private static let formatVersion = 1

        /// The bytes that cross from the launcher to the full command.
        package func encoded() -> [UInt8] {
            var writer = BinaryWriter()
            writer.append(Self.magic)
            writer.write(Self.formatVersion)
            writer.write(snapshot.high)
            writer.write(snapshot.low)
            writer.write(changed.count)
            for position in changed { writer.write(position) }
            writer.write(refreshed.count)
            for (position, entry) in refreshed {
                writer.write(position)
                writer.write(entry)
            }
            return writer.bytes
        }

        /// Decodes ``encoded()``; `nil` for anything else.
        package static func decode(_ bytes: [UInt8]) -> Handover? {
            var reader = BinaryReader(bytes: bytes)
            guard reader.readBytes(count: magic.count) == magic, reader.readInteger() == formatVersion,
                let high = reader.readUInt64(), let low = reader.readUInt64(),
                let changedCount = reader.readInteger(), changedCount >= 0, changedCount <= bytes.count
            else { return nil }
            var changed: [Int] = []
            changed.reserveCapacity(changedCount)
            for _ in 0..<changedCount {
                guard let position = reader.readInteger() else { return nil }
                changed.append(position)
            }
            guard let refreshedCount = reader.readInteger(), refreshedCount >= 0, refreshedCount <= bytes.count else {
                return nil
            }
            var refreshed: [(Int, WatchedPath)] = []
            refreshed.reserveCapacity(refreshedCount)
            for _ in 0..<refreshedCount {
                guard let position = reader.readInteger(), let entry = reader.readWatchedPath() else { return nil }
                refreshed.append((position, entry))
            }
            guard reader.offset == bytes.count else { return nil }
            return Handover(snapshot: ContentHash(high: high, low: low), changed: changed, refreshed: refreshed)
        }

        /// What the scan of the snapshot `bytes`, whose paths are `paths`, finds: the launcher's
        /// look, or `nil` when it was made against other bytes (or names a path the snapshot
        /// doesn't have).
        ///
        /// The launcher has no git index. With one (`tracked`), a file hashed through git that
        /// it found changed by its status alone is asked again, as the scan would: the index may
        /// vouch for the same blob (a file touched, or checked out again).
        package func look(
            at paths: [WatchedPath],
            of bytes: [UInt8],
            root: String,
            tracked: (any TrackedContent)?
        ) -> (changed: [Int], refreshed: [(Int, WatchedPath)])? {
            guard ContentHash.of(bytes) == snapshot,
                changed.allSatisfy({ paths.indices.contains($0) }),
                refreshed.allSatisfy({ paths.indices.contains($0.position) && paths[$0.position].path == $0.entry.path }
                )
            else { return nil }
            var stillChanged: [Int] = []
            var fresh = refreshed.map { ($0.position, $0.entry) }
            for position in changed {
                if tracked != nil, paths[position].kind == .trackedFile,
                    case .sameContent(let entry) = paths[position].compare(root: root, tracked: tracked)
                {
                    fresh.append((position, entry))
                } else {
                    stillChanged.append(position)
                }
            }
            return (stillChanged, fresh)
        }
    }
}
