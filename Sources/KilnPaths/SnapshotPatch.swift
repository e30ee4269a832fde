extension UpToDateSnapshot.Scan {
    /// A scan of `snapshot` that found `changedPaths` changed paths, which `dirtyJobs` watch.
    package init(snapshot: UpToDateSnapshot, dirtyJobs: Set<String>, changedPaths: Int) {
        self.init(snapshot: snapshot, dirtyJobs: dirtyJobs, changedPaths: changedPaths, handedOver: false)
    }
}

extension UpToDateSnapshot {
    /// Where a snapshot file's fixed-width fields are, noted as a scan decodes it (when it
    /// records; the launcher's look doesn't).
    ///
    /// Threading: a value type.
    struct Layout {
        /// Whether to keep the file open and note where the fields are.
        let recording: Bool
        var file: OpenFile?
        var identityAt = 0
        var flagsAt = 0
        /// Where each path's fields (``WatchedPath/fieldsSize`` bytes) are, by position.
        var pathFieldsAt: [UInt32] = []
        /// Where the published signatures' count is.
        var publishedAt = 0
    }

    /// The snapshot file a scan decoded, kept open (a run removes its path as it starts), and
    /// where its fixed-width fields are: what a ``Patch`` is written over.
    ///
    /// Threading: immutable; any thread.
    package final class Base: Sendable {
        let file: OpenFile
        /// The file's length without its checksum.
        let count: Int
        let identityAt: Int
        /// Where `complete` is; `watches` follows it.
        let flagsAt: Int
        let pathFieldsAt: [UInt32]
        let publishedAt: Int

        /// The base of a scan that recorded `layout` over a file of `count` bytes; `nil` when it
        /// kept no file open.
        init?(_ layout: Layout, count: Int) {
            guard let file = layout.file else { return nil }
            self.file = file
            self.count = count
            identityAt = layout.identityAt
            flagsAt = layout.flagsAt
            pathFieldsAt = layout.pathFieldsAt
            publishedAt = layout.publishedAt
        }
    }

    /// The project's snapshot, whole, and its file kept open as the base of a ``Patch``; `nil`
    /// when there is none (or it is damaged, or another format's).
    package static func readWithBase(root: String) -> (snapshot: UpToDateSnapshot, base: Base)? {
        guard let (bytes, file) = Files.openSealed(path(root: root), magic: magic) else { return nil }
        var layout = Layout(recording: true)
        layout.file = file
        guard let (head, tail) = decodeHead(bytes, layout: &layout) else { return nil }
        var snapshot = head
        guard decodeTail(bytes, from: tail, into: &snapshot, layout: &layout),
            let base = Base(layout, count: bytes.count)
        else { return nil }
        return (snapshot, base)
    }

    /// The next snapshot written as the one a scan read with a few fixed-width fields changed:
    /// after a run that checked a few jobs and found their paths and keys the same (one changed
    /// source file among 10k tasks), the new snapshot differs from the old only in those
    /// paths' statuses and hashes, the signatures those jobs published, and two flags. The file
    /// is copied through a buffer, those bytes replaced, instead of encoded again (32M
    /// instructions at 10k tasks, and the table of every path the encoding needs first, 11M).
    ///
    /// A patch describes the same snapshot the encoder would write from the same run, but for
    /// the order of its jobs and signatures, which no reader depends on: the jobs stay in the
    /// old file's order, and every job index the file holds is one of its own.
    ///
    /// Threading: a value type.
    package struct Patch: Sendable {
        package var taskfileIdentity: ContentHash
        package var complete: Bool
        package var watches: Bool
        /// New records of paths the old file has, by position (the same path: only its fields
        /// are written).
        package var paths: [(position: Int, entry: WatchedPath)]
        /// New signatures of names (stored keys) the old file publishes.
        package var published: [(name: String, signature: ContentHash)]

        package init(
            taskfileIdentity: ContentHash,
            complete: Bool,
            watches: Bool,
            paths: [(position: Int, entry: WatchedPath)],
            published: [(name: String, signature: ContentHash)]
        ) {
            self.taskfileIdentity = taskfileIdentity
            self.complete = complete
            self.watches = watches
            self.paths = paths
            self.published = published
        }

        /// What ``write(root:over:)`` did.
        package enum Outcome: Equatable {
            /// The snapshot is in place.
            case written
            /// Nothing was written: the base can't take the patch (a name it doesn't publish,
            /// or its file couldn't be read). The caller encodes the snapshot instead.
            case notApplicable
            /// Writing failed, which is said on standard error; encoding would fail the same way.
            case failed
        }

        /// Writes the project's snapshot: `base`'s file with this patch's fields, sealed anew,
        /// atomically.
        package func write(root: String, over base: Base) -> Outcome {
            guard var edits = edits(over: base) else { return .notApplicable }
            edits.sort { $0.offset < $1.offset }
            // Two records of one path, say: the patch's maker has a bug, and the encoder decides.
            guard !zip(edits, edits.dropFirst()).contains(where: { $0.offset + $0.bytes.count > $1.offset }) else {
                return .notApplicable
            }
            guard let file = SealedFileWriter(path: UpToDateSnapshot.path(root: root), count: base.count) else {
                return .failed
            }
            var writer = file.makeBuffer()
            var chunk = [UInt8](repeating: 0, count: file.bufferSize)
            var next = 0
            var start = 0
            while start < base.count {
                let length = min(chunk.count, base.count - start)
                let read = chunk.withUnsafeMutableBytes {
                    base.file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<length]), at: start)
                }
                // The old file is kiln's own, open since the scan read it whole: a short read is
                // a failing disk. The encoder doesn't need it.
                guard read else { return .notApplicable }
                // The edits that reach into this chunk: one may run on into the next.
                var index = next
                while index < edits.count, edits[index].offset < start + length {
                    let edit = edits[index]
                    let from = max(edit.offset, start)
                    let to = min(edit.offset + edit.bytes.count, start + length)
                    for offset in from..<to { chunk[offset - start] = edit.bytes[offset - edit.offset] }
                    if edit.offset + edit.bytes.count <= start + length { next = index + 1 }
                    index += 1
                }
                writer.bytes.append(contentsOf: chunk[..<length])
                file.drain(&writer)
                start += length
            }
            return file.finish(&writer) ? .written : .failed
        }

        /// The bytes to write and where; `nil` when the base doesn't have a path position or a
        /// published name the patch changes.
        private func edits(over base: Base) -> [(offset: Int, bytes: [UInt8])]? {
            var edits: [(offset: Int, bytes: [UInt8])] = []
            var writer = BinaryWriter()
            writer.write(taskfileIdentity.high)
            writer.write(taskfileIdentity.low)
            edits.append((base.identityAt, writer.bytes))
            writer = BinaryWriter()
            writer.write(complete)
            writer.write(watches)
            edits.append((base.flagsAt, writer.bytes))
            for (position, entry) in paths {
                guard base.pathFieldsAt.indices.contains(position) else { return nil }
                writer = BinaryWriter()
                writer.writeFields(of: entry)
                edits.append((Int(base.pathFieldsAt[position]), writer.bytes))
            }
            guard !published.isEmpty else { return edits }
            guard let offsets = Self.signatureOffsets(of: published.map(\.name), in: base) else { return nil }
            for ((_, signature), offset) in zip(published, offsets) {
                writer = BinaryWriter()
                writer.write(signature.high)
                writer.write(signature.low)
                edits.append((offset, writer.bytes))
            }
            return edits
        }

        /// Where the signature of each of `names` is in the base's file, in order; `nil` when
        /// one isn't there. The signatures are read a window at a time, comparing each name in
        /// the file with the few sought (a patch is for runs that changed few).
        private static func signatureOffsets(of names: [String], in base: Base) -> [Int]? {
            let sought = names.map { Array($0.utf8) }
            var found = [Int?](repeating: nil, count: names.count)
            var window = Window(base: base, start: base.publishedAt)
            guard let count = window.readInteger(), count >= 0 else { return nil }
            for _ in 0..<count {
                guard let length = window.readInteger(), length >= 0,
                    let name = window.bytes(count: length + 16)
                else { return nil }
                for (index, candidate) in sought.enumerated()
                where found[index] == nil && candidate.count == length && candidate.elementsEqual(name.prefix(length)) {
                    found[index] = window.offset - 16
                }
            }
            guard window.offset == base.count else { return nil }
            var offsets: [Int] = []
            for offset in found {
                guard let offset else { return nil }
                offsets.append(offset)
            }
            return offsets
        }
    }

    /// Reads the base's file forward from an offset, a buffer's worth at a time.
    ///
    /// Threading: a value type.
    private struct Window {
        let base: Base
        private var buffer: [UInt8] = []
        /// Where the buffer starts in the file.
        private var bufferAt: Int
        /// Where the next read starts in the file.
        private(set) var offset: Int

        init(base: Base, start: Int) {
            self.base = base
            bufferAt = start
            offset = start
        }

        /// Makes the buffer hold `count` bytes from ``offset``; whether the file has them.
        private mutating func hold(_ count: Int) -> Bool {
            guard offset + count > bufferAt + buffer.count else { return true }
            guard offset + count <= base.count else { return false }
            let length = min(max(count, 64 * 1024), base.count - offset)
            buffer = [UInt8](repeating: 0, count: length)
            bufferAt = offset
            return buffer.withUnsafeMutableBytes { base.file.read(into: $0, at: offset) }
        }

        /// The next `count` bytes, viewed in the buffer.
        mutating func bytes(count: Int) -> ArraySlice<UInt8>? {
            guard hold(count) else { return nil }
            defer { offset += count }
            return buffer[(offset - bufferAt)..<(offset - bufferAt + count)]
        }

        /// The next integer, as ``BinaryReader/readInteger()`` reads it.
        mutating func readInteger() -> Int? {
            // An integer takes at most 10 bytes, fewer at the end of the file.
            guard hold(min(10, base.count - offset)) else { return nil }
            var reader = BinaryReader(bytes: buffer)
            reader.offset = offset - bufferAt
            guard let value = reader.readInteger() else { return nil }
            offset = bufferAt + reader.offset
            return value
        }
    }
}
