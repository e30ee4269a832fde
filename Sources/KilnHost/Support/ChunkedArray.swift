/// An array kept in chunks of 4,096 elements, for tables that grow with a run (one entry a job):
/// appending never copies what is there — an array grown by doubling holds two copies while it
/// grows — and a reader that goes through it once can let each chunk go as it passes it.
///
/// Threading: a value type.
struct ChunkedArray<Element> {
    static var chunkSize: Int { 4096 }
    private var chunks: [[Element]] = []
    /// How many elements were appended (released ones included).
    private(set) var count = 0
    /// How many chunks, from the first, were released.
    private var released = 0

    mutating func append(_ element: Element) {
        if count % Self.chunkSize == 0 {
            chunks.append([])
            chunks[chunks.count - 1].reserveCapacity(Self.chunkSize)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    /// The element at `position`; reading a released one traps.
    subscript(position: Int) -> Element {
        get { chunks[position / Self.chunkSize][position % Self.chunkSize] }
        set { chunks[position / Self.chunkSize][position % Self.chunkSize] = newValue }
    }

    mutating func swapAt(_ first: Int, _ second: Int) {
        guard first != second else { return }
        let kept = self[first]
        self[first] = self[second]
        self[second] = kept
    }

    /// Removes the last `removed` elements.
    mutating func removeLast(_ removed: Int) {
        precondition(removed >= 0 && removed <= count, "can't remove more elements than there are")
        count -= removed
        let chunkCount = (count + Self.chunkSize - 1) / Self.chunkSize
        chunks.removeLast(chunks.count - chunkCount)
        if let last = chunks.indices.last {
            chunks[last].removeLast(chunks[last].count - (count - last * Self.chunkSize))
        }
    }

    /// Frees the chunks that hold only elements before `position` (a reader going in order is
    /// past them).
    mutating func release(before position: Int) {
        while released < min(position / Self.chunkSize, chunks.count) {
            chunks[released] = []
            released += 1
        }
    }
}
