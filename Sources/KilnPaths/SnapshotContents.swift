/// What a snapshot file holds, as its encoder reads it: an ``UpToDateSnapshot``, or what a run
/// recorded, written without first being made into one (a run over 100k files would hold a
/// second table of paths, and an array a job, at its peak).
///
/// The one encoding of `.kiln/snapshot`: ``encoded()`` and ``write(root:)``, read back by
/// ``UpToDateSnapshot/decode(_:)``.
///
/// Threading: as the conforming type.
package protocol SnapshotContents {
    /// Identifies the Taskfile files and their contents.
    var taskfileIdentity: ContentHash { get }
    /// The targets the run was given (empty: `default`).
    var targets: [String] { get }
    /// Whether every job of the run is in the snapshot.
    var complete: Bool { get }
    /// Whether a task the run was given says `watch: true`.
    var watches: Bool { get }
    /// Whether a job is checked on every run (see ``UpToDateSnapshot/Job/checkedEveryRun``).
    var anyCheckedEveryRun: Bool { get }
    /// How many watched paths there are.
    var pathCount: Int { get }
    /// The watched path at `position` (`0..<pathCount`).
    func path(at position: Int) -> WatchedPath
    /// How many UTF-8 bytes the watched path at `position` has (its size is counted before it
    /// is written).
    func pathByteCount(at position: Int) -> Int
    /// Whether what the encoder read is what was recorded: `false` when reading it back failed
    /// (the snapshot is then not written: with none, the next run checks every job).
    var isIntact: Bool { get }
    /// How many jobs ``forEachJob(_:)`` visits (what the file says it holds: counted from the
    /// jobs, not taken from a count kept beside them).
    var visitedJobCount: Int { get }
    /// Calls `body` with each job, in order: its key (`name`, or `name` NUL `source` for an
    /// `each:` job, made only as it is written), whether it is checked on every run, and the positions of
    /// its paths.
    func forEachJob(
        _ body: (_ name: String, _ source: String?, _ checkedEveryRun: Bool, _ paths: ArraySlice<Int32>) -> Void
    )
    /// Calls `body` with each job as ``forEachJob(_:)`` visits it, but only the length in bytes
    /// of its stored key (`name`, or `name` NUL `source`) and its paths: what counting the size
    /// needs.
    func forEachJobSize(_ body: (_ keyByteCount: Int, _ paths: ArraySlice<Int32>) -> Void)
    /// How many signatures ``forEachPublished(_:)`` visits.
    var publishedCount: Int { get }
    /// Calls `body` with each published output signature and the job key (as in
    /// ``forEachJob(_:)``) or task name it is published under.
    func forEachPublished(_ body: (_ name: String, _ source: String?, _ signature: ContentHash) -> Void)
}

extension SnapshotContents {
    package func pathByteCount(at position: Int) -> Int { path(at: position).path.utf8.count }

    package func forEachJobSize(_ body: (_ keyByteCount: Int, _ paths: ArraySlice<Int32>) -> Void) {
        forEachJob { name, source, _, paths in
            body(name.utf8.count + (source.map { 1 + $0.utf8.count } ?? 0), paths)
        }
    }

    package var isIntact: Bool { true }

    /// The snapshot's bytes, sealed (what ``write(root:)`` writes).
    package func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        // Its exact size: grown by doubling, the buffer would need up to twice the snapshot's.
        writer.reserve(encodedSize + FileChecksum.size)
        encode(into: &writer, drainingAt: .max) { _ in }
        FileChecksum.seal(&writer.bytes)
        return writer.bytes
    }

    /// Writes the snapshot of a project atomically, as it is encoded: the file (14 MB for an
    /// `each:` task over 100k files) is never whole in memory. Best effort: returns whether it
    /// worked (a failure is said on standard error).
    @discardableResult
    package func write(root: String) -> Bool {
        guard let file = SealedFileWriter(path: UpToDateSnapshot.path(root: root), count: encodedSize) else {
            return false
        }
        var writer = file.makeBuffer()
        encode(into: &writer, drainingAt: file.bufferSize) { file.drain(&$0) }
        guard isIntact else {
            Files.noteUnwritten(
                UpToDateSnapshot.path(root: root),
                reason: "what the run recorded couldn't be read back from its file in .kiln"
            )
            return false
        }
        return file.finish(&writer)
    }

    /// How many bytes ``encode(into:drain:)`` writes.
    private var encodedSize: Int {
        func size(_ value: Int) -> Int { BinaryWriter.size(of: value) }
        func size(_ value: String) -> Int { BinaryWriter.size(of: value) }
        // A string of `count` bytes: its length, then its bytes.
        func size(bytes count: Int) -> Int { size(count) + count }
        var total =
            UpToDateSnapshot.magic.count + size(UpToDateSnapshot.formatVersion) + 16 + size(targets.count)
            + targets.reduce(0) { $0 + size($1) } + 1 + 1 + size(visitedJobCount) + 1 + size(pathCount)
        for position in 0..<pathCount { total += size(bytes: pathByteCount(at: position)) + 1 + 8 * 8 }
        total += size(visitedJobCount)
        forEachJobSize { keyByteCount, paths in
            total += size(bytes: keyByteCount) + 1 + size(paths.count) + paths.reduce(0) { $0 + size(Int($1)) }
        }
        total += size(publishedCount)
        forEachPublished { name, source, _ in total += BinaryWriter.size(ofKey: name, source: source) + 16 }
        return total
    }

    /// Encodes the snapshot (without its seal), calling `drain` between entries once the buffer
    /// holds `drainingAt` bytes: a writer to a file empties it there. (Asked only then: a call
    /// per entry cost a fifth of the encoding.)
    private func encode(
        into writer: inout BinaryWriter,
        drainingAt threshold: Int,
        drain: (inout BinaryWriter) -> Void
    ) {
        writer.append(UpToDateSnapshot.magic)
        writer.write(UpToDateSnapshot.formatVersion)
        writer.write(taskfileIdentity.high)
        writer.write(taskfileIdentity.low)
        writer.write(targets.count)
        for target in targets { writer.write(target) }
        writer.write(complete)
        writer.write(watches)
        writer.write(visitedJobCount)
        writer.write(anyCheckedEveryRun)
        writer.write(pathCount)
        for position in 0..<pathCount {
            writer.write(path(at: position))
            if writer.bytes.count >= threshold { drain(&writer) }
        }
        writer.write(visitedJobCount)
        forEachJob { name, source, checkedEveryRun, paths in
            writer.write(key: name, source: source)
            writer.write(checkedEveryRun)
            writer.write(paths.count)
            for index in paths { writer.write(Int(index)) }
            if writer.bytes.count >= threshold { drain(&writer) }
        }
        writer.write(publishedCount)
        forEachPublished { name, source, signature in
            writer.write(key: name, source: source)
            writer.write(signature.high)
            writer.write(signature.low)
            if writer.bytes.count >= threshold { drain(&writer) }
        }
    }
}

extension UpToDateSnapshot: SnapshotContents {
    package var pathCount: Int { paths.count }

    package func path(at position: Int) -> WatchedPath { paths[position] }

    package var visitedJobCount: Int { jobs.count }

    package func forEachJob(
        _ body: (_ name: String, _ source: String?, _ checkedEveryRun: Bool, _ paths: ArraySlice<Int32>) -> Void
    ) {
        for job in jobs { body(job.key, nil, job.checkedEveryRun, job.paths[...]) }
    }

    package var publishedCount: Int { published.count }

    package func forEachPublished(_ body: (_ name: String, _ source: String?, _ signature: ContentHash) -> Void) {
        for (key, signature) in published { body(key, nil, signature) }
    }
}
