import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

/// SHA-1, for git's blob ids and go-task's `sha1sum` template function.
@Suite struct SHA1Tests {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("FIPS 180 examples")
    func knownDigests() {
        #expect(hex(SHA1.digest([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hex(SHA1.digest(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            hex(SHA1.digest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        )
    }

    @Test("fed in pieces of any size, the digest is the whole input's")
    func pieces() {
        var generator = SeededGenerator(seed: 7)
        for length in [0, 1, 63, 64, 65, 127, 128, 129, 1000, 5000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let whole = SHA1.digest(bytes)
            for _ in 0..<8 {
                var hasher = SHA1()
                var start = 0
                while start < length {
                    let end = min(length, start + Int.random(in: 1...70, using: &generator))
                    bytes[start..<end].withUnsafeBytes { hasher.update($0) }
                    start = end
                }
                #expect(hasher.finalize() == whole, "\(length) bytes")
            }
        }
    }

    @Test("every length across block boundaries digests as coreutils' sha1sum says")
    func sameAsSHA1Sum() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var generator = SeededGenerator(seed: 5)
        var paths: [String] = []
        var expected: [String] = []
        for length in [1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 4097] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let path = directory.path("data\(length).bin")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            paths.append(path)
            expected.append(hex(SHA1.digest(bytes)))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha1sum")
        process.arguments = paths
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let printed = output.split(separator: "\n").map { String($0.prefix(40)) }
        #expect(printed == expected)
    }
}
