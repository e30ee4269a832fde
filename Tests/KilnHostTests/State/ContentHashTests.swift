import Foundation
import KilnHost
import KilnPaths
import KilnTestSupport
import Testing

@Suite("Content hashes")
struct ContentHashTests {
    @Test("a file's hash is XXH3-128 of its bytes, whether it is read in chunks or mapped")
    func fileHashesMatchTheHashOfTheirBytes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var generator = SeededGenerator(seed: 7)
        for size in [0, 1, 65_535, 65_536, 65_537, 1 << 20, (1 << 20) + 3, 3 << 20] {
            let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let path = directory.path("file-\(size)")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try FileContent.hash(path) == ContentHash.of(bytes), "size \(size)")
        }
    }

    @Test("the empty input has XXH3-128's published hash")
    func emptyInputHasTheReferenceHash() {
        // XXH3_128bits of no bytes, as the xxHash reference implementation gives it.
        #expect(ContentHash.of([UInt8]()).description == "99aa06d3014798d86001c324468d497f")
        #expect(ContentHash.algorithm == "xxh3-128")
    }

    @Test("combined parts are length-prefixed, so moving a boundary changes the hash")
    func combinedPartsAreUnambiguous() {
        var first = ContentHasher()
        first.combine("ab")
        first.combine("c")
        var second = ContentHasher()
        second.combine("a")
        second.combine("bc")
        let firstHash = first.finalize()
        let secondHash = second.finalize()
        #expect(firstHash != secondHash)
    }

    @Test("a missing file is a clear failure naming it")
    func missingFileFails() throws {
        #expect(throws: FileContent.Failure.self) { try FileContent.hash("/nonexistent/kiln-test-file") }
        do {
            _ = try FileContent.hash("/nonexistent/kiln-test-file")
        } catch {
            #expect(error.description.contains("/nonexistent/kiln-test-file"))
        }
    }
}
