import Foundation
import KilnTestSupport
import Testing

@testable import KilnHost

/// go-task's wildcard task names: a name matches when each `*` can stand for some text, and
/// `MATCH` holds those texts as go-task's regular expression `^…(.*)…$` captures them.
@Suite struct WildcardNameTests {
    @Test("the texts the stars stand for, each star as long as the rest allows")
    func examples() {
        #expect(WildcardName.match("start-*", "start-web") == ["web"])
        #expect(WildcardName.match("start-*", "start-") == [""])
        #expect(WildcardName.match("wildcard-*-*", "wildcard-a-b-c") == ["a-b", "c"])
        #expect(WildcardName.match("*-to-*", "a-b-to-c") == ["a-b", "c"])
        #expect(WildcardName.match("*:*", "x:y:z") == ["x:y", "z"])
        #expect(WildcardName.match("start-*", "stop-web") == nil)
        #expect(WildcardName.match("*-end", "no-match") == nil)
        #expect(WildcardName.match("a*b", "ab") == [""])
    }

    @Test("what the stars capture is what a regular expression engine captures (500 random names)")
    func sameAsRegularExpression() throws {
        var random = SeededGenerator(seed: 13)
        let alphabet: [Character] = ["a", "b", "-", "*"]
        for _ in 0..<500 {
            let pattern = String(
                (0..<Int.random(in: 1...6, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
            )
            guard pattern.contains("*") else { continue }
            let name = String(
                (0..<Int.random(in: 0...8, using: &random)).map { _ in "ab-".randomElement(using: &random)! }
            )
            let regex = try NSRegularExpression(
                pattern: "^" + pattern.replacingOccurrences(of: "*", with: "(.*)") + "$"
            )
            let expected = regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)).map { found in
                (1..<found.numberOfRanges).map { String(name[Range(found.range(at: $0), in: name)!]) }
            }
            #expect(WildcardName.match(pattern, name) == expected, "\(pattern) against \(name)")
        }
    }

    @Test("many stars against a long name that doesn't match end quickly")
    func noExponentialSearch() {
        let pattern = String(repeating: "*a", count: 40) + "*b"
        let name = String(repeating: "a", count: 400)
        #expect(WildcardName.match(pattern, name) == nil)
    }
}
