import Foundation
import KilnHost
import KilnTestSupport
import Testing

@Suite("SHA-256 for remote digests")
struct SHA256Tests {
    func hex(_ text: String) -> String { RemoteDigest.of(text).hex }

    @Test("FIPS 180 test vectors")
    func vectors() {
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
        #expect(hex(String(repeating: "a", count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(RemoteDigest.of("abc").description.hasSuffix("/3"))
    }

    @Test("the same bytes fed in any pieces give the same digest")
    func pieces() {
        var generator = SeededGenerator(seed: 7)
        let bytes = (0..<1000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var whole = SHA256()
        bytes.withUnsafeBytes { whole.update($0) }
        let expected = whole.finalize()
        for split in [1, 55, 56, 63, 64, 65, 500, 999] {
            var hasher = SHA256()
            bytes.withUnsafeBytes { buffer in
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<split]))
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[split...]))
            }
            #expect(hasher.finalize() == expected, "split at \(split)")
        }
    }

    @Test("a file's digest is what sha256sum says, with its size")
    func fileMatchesSHA256Sum() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var generator = SeededGenerator(seed: 11)
        let bytes = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = directory.path("data.bin")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let digest = try SHA256.digest(ofFile: path)
        #expect(digest.size == 200_000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(output.hasPrefix(digest.hex + " "))
    }
}
