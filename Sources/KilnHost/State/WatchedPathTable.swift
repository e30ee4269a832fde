import KilnPaths

/// The paths of a snapshot being made, each once, found by path: the table, and an index of
/// its positions by open addressing (4 bytes a slot, at most half of them taken), not a
/// dictionary keyed by path (a 24-byte bucket a path, on top of the table). The table grows in
/// chunks, as the recorded paths it is made from are let go.
///
/// Threading: a value type.
struct WatchedPathTable {
    private var paths = ChunkedArray<WatchedPath>()
    /// Positions in ``paths`` by the hash of their path; -1 for an empty slot.
    private var slots: [Int32] = []

    /// A table that starts as `paths` (each path once), with index slots for `capacity` paths
    /// in all.
    init(_ paths: [WatchedPath] = [], capacity: Int) {
        for path in paths { self.paths.append(path) }
        rehash(slotCount: Self.slotCount(for: max(capacity, paths.count)))
    }

    var count: Int { paths.count }

    /// Where `path` is in the table.
    func position(of path: String) -> Int32? {
        let mask = slots.count - 1
        var slot = path.hashValue & mask
        while true {
            let position = slots[slot]
            if position < 0 { return nil }
            if paths[Int(position)].path == path { return position }
            slot = (slot + 1) & mask
        }
    }

    /// Adds a path the table doesn't have; returns its position.
    mutating func append(_ entry: WatchedPath) -> Int32 {
        if (paths.count + 1) * 2 > slots.count { rehash(slotCount: slots.count * 2) }
        let position = Int32(paths.count)
        paths.append(entry)
        place(position)
        return position
    }

    /// The entry at `position`; a new one must be of the same path.
    subscript(position: Int32) -> WatchedPath {
        get { paths[Int(position)] }
        set {
            precondition(newValue.path == paths[Int(position)].path, "a table entry changes its state, not its path")
            paths[Int(position)] = newValue
        }
    }

    /// The paths, the index let go.
    consuming func takePaths() -> ChunkedArray<WatchedPath> { paths }

    private static func slotCount(for capacity: Int) -> Int {
        var count = 16
        while count < capacity * 2 { count *= 2 }
        return count
    }

    private mutating func rehash(slotCount: Int) {
        slots = [Int32](repeating: -1, count: slotCount)
        for position in 0..<paths.count { place(Int32(position)) }
    }

    private mutating func place(_ position: Int32) {
        let mask = slots.count - 1
        var slot = paths[Int(position)].path.hashValue & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = position
    }
}
