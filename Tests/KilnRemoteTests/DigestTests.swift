import Foundation
import Testing

@testable import KilnRemote

@Suite("REAPI digests")
struct DigestTests {
    @Test("a digest is the lower-case hexadecimal SHA-256 of the bytes and their size (FIPS 180-2 vectors)")
    func knownVectors() {
        let empty = ActionRecipe.digest(of: Data())
        #expect(empty.hash == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(empty.sizeBytes == 0)
        let abc = ActionRecipe.digest(of: Data("abc".utf8))
        #expect(abc.hash == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(abc.sizeBytes == 3)
        #expect([UInt8]([0x00, 0x09, 0x0a, 0x0f, 0x10, 0xa5, 0xff]).withUnsafeBytes(hexadecimal) == "00090a0f10a5ff")
        #expect([UInt8]().withUnsafeBytes(hexadecimal) == "")
        // Two blocks, through each of the three ways in: Data, bytes, a buffer.
        let message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        let expected = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        #expect(ActionRecipe.digest(of: Data(message.utf8)).hash == expected)
        #expect(ActionRecipe.digest(of: Array(message.utf8)).hash == expected)
        #expect(Array(message.utf8).withUnsafeBytes { ActionRecipe.digest(of: $0) }.hash == expected)
        #expect(ActionRecipe.digest(of: Array(message.utf8)).sizeBytes == 56)
    }
}
