import KilnPaths

/// The paths of a snapshot being made, each once, found by path: the table, and an index of
/// its positions by open addressing (4 bytes a slot, at most half of them taken), not a
/// dictionary keyed by path (a 24-byte bucket a path, on top of the table).
///
/// An entry is 8 bytes: where its path and state are, and the low half of its path's hash. Most
/// paths stay in the ``RecordSpill`` the run recorded them in (an `each:` task over 100k files
/// held 8.8 MB of them, and 2.4 MB more for an entry with the path's string); a lookup reads a
/// path back only when the halves of the hashes match. The paths it holds are the starting
/// table's, those added whole (a listing's), and those seen again, held from the second sighting
/// on: comparing them is then a read of memory, not of the file.
///
/// Threading: a value type (its spill is read, never written, and only through it).
struct WatchedPathTable {
    private struct Entry {
        /// The low 32 bits of its path's hash (``ContentHash/tableHash(_:)``).
        var hash: UInt32
        /// Where the path and its state are: at or past 0, that index in ``spill``; below, `-1 -`
        /// its index in ``base`` followed by ``held``.
        var state: Int32

        init(path: String, state: Int32) {
            hash = UInt32(truncatingIfNeeded: ContentHash.tableHash(path))
            self.state = state
        }
    }
    private var entries = ChunkedArray<Entry>()
    /// The starting table's states (shared with the snapshot it came from, not copied).
    private let base: [WatchedPath]
    /// States held in memory besides ``base``.
    private var held: [WatchedPath] = []
    /// Where the states of spilled entries are.
    let spill: RecordSpill?
    /// Positions in ``entries`` by the hash of their path; -1 for an empty slot.
    private var slots: [Int32] = []

    /// A table that starts as `paths` (each path once), with index slots for `capacity` paths
    /// in all; the states of paths added by their index in `spill` are read from it.
    init(_ paths: [WatchedPath] = [], spill: RecordSpill? = nil, capacity: Int) {
        base = paths
        self.spill = spill
        for (index, path) in paths.enumerated() { entries.append(Entry(path: path.path, state: Int32(-1 - index))) }
        rehash(slotCount: Self.slotCount(for: max(capacity, paths.count)))
    }

    var count: Int { entries.count }

    /// How many states it holds in memory besides the starting table's.
    var heldCount: Int { held.count }

    /// Where `path` is in the table.
    func position(of path: String) -> Int32? {
        let mask = slots.count - 1
        let hash = UInt32(truncatingIfNeeded: ContentHash.tableHash(path))
        var slot = Int(hash) & mask
        while true {
            let position = slots[slot]
            if position < 0 { return nil }
            if entries[Int(position)].hash == hash, self.path(at: position) == path { return position }
            slot = (slot + 1) & mask
        }
    }

    /// Adds a path the table doesn't have, its state held; returns its position.
    mutating func append(_ path: WatchedPath) -> Int32 {
        held.append(path)
        return append(Entry(path: path.path, state: Int32(-base.count - held.count)))
    }

    /// Adds a path the table doesn't have, its state the one at `index` in the spill; returns its
    /// position.
    mutating func append(path: String, spilled index: Int) -> Int32 {
        precondition(spill != nil, "a spilled entry in a table without a spill")
        return append(Entry(path: path, state: Int32(index)))
    }

    private mutating func append(_ entry: Entry) -> Int32 {
        if (entries.count + 1) * 2 > slots.count { rehash(slotCount: slots.count * 2) }
        let position = Int32(entries.count)
        entries.append(entry)
        place(position)
        return position
    }

    /// The path at `position` with its state. Setting a new state (of the same path) holds it.
    subscript(position: Int32) -> WatchedPath {
        get {
            let entry = entries[Int(position)]
            if entry.state >= 0 { return spilled[Int(entry.state)] }
            return heldState(-1 - Int(entry.state))
        }
        set {
            precondition(newValue.path == path(at: position), "a table entry changes its state, not its path")
            hold(newValue, at: position)
        }
    }

    /// Holds `state` as the state of the entry at `position`: in place when it holds one already.
    private mutating func hold(_ state: WatchedPath, at position: Int32) {
        let entry = entries[Int(position)]
        let index = -1 - Int(entry.state)
        if entry.state < 0, index >= base.count {
            held[index - base.count] = state
        } else {
            held.append(state)
            entries[Int(position)].state = Int32(-base.count - held.count)
        }
    }

    /// Gives the entry at `position` the state at `index` in the spill (a sighting of the same
    /// path), instead of holding it in memory as setting it through the subscript does.
    mutating func setState(at position: Int32, spilled index: Int) {
        precondition(spill != nil, "a spilled entry in a table without a spill")
        entries[Int(position)].state = Int32(index)
    }

    /// The spill, which a spilled entry's table has.
    private var spilled: RecordSpill {
        guard let spill else { preconditionFailure("a spilled entry in a table without a spill") }
        return spill
    }

    /// The path at `position`, without its state.
    func path(at position: Int32) -> String {
        let entry = entries[Int(position)]
        if entry.state < 0 { return heldState(-1 - Int(entry.state)).path }
        return spilled.path(at: Int(entry.state))
    }

    /// How many UTF-8 bytes the path at `position` has.
    func pathByteCount(at position: Int32) -> Int {
        let entry = entries[Int(position)]
        if entry.state < 0 { return heldState(-1 - Int(entry.state)).path.utf8.count }
        return spilled.pathByteCount(at: Int(entry.state))
    }

    /// The state at `position`, to compare with another sighting: a spilled one is read once and
    /// held from then on.
    mutating func stateToCompare(at position: Int32) -> WatchedPath {
        let state = self[position]
        if entries[Int(position)].state >= 0 { hold(state, at: position) }
        return state
    }

    private func heldState(_ index: Int) -> WatchedPath {
        index < base.count ? base[index] : held[index - base.count]
    }

    /// Keeps only the entries whose `used` is true (in place: a second table would be the peak of
    /// a run over many files), and lets the index go. Returns each old position's new one (-1:
    /// dropped), or `nil` when every entry is kept.
    mutating func keep(_ used: [Bool]) -> [Int32]? {
        slots = []
        guard used.contains(false) else { return nil }
        var remap = [Int32](repeating: -1, count: entries.count)
        var kept = 0
        for position in 0..<entries.count where used[position] {
            remap[position] = Int32(kept)
            entries.swapAt(kept, position)
            kept += 1
        }
        entries.removeLast(entries.count - kept)
        return remap
    }

    private static func slotCount(for capacity: Int) -> Int {
        var count = 16
        while count < capacity * 2 { count *= 2 }
        return count
    }

    private mutating func rehash(slotCount: Int) {
        slots = [Int32](repeating: -1, count: slotCount)
        for position in 0..<entries.count { place(Int32(position)) }
    }

    private mutating func place(_ position: Int32) {
        let mask = slots.count - 1
        var slot = Int(entries[Int(position)].hash) & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = position
    }
}
