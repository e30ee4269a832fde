import Foundation
import Testing

@testable import KilnTemplate

/// kiln's engine for Go's regular expressions, beyond what the differential tests compare with
/// go-task: its time on hostile patterns, its errors, and what it refuses that Go accepts.
@Suite("Go's regular expressions")
struct GoRegexpTests {
    func render(_ template: String) throws -> String {
        try TextTemplate(template).render(TemplateValue.map([:]), missing: .printNothing)
    }

    /// Why `pattern` doesn't compile; `nil`, with the test failed, when it does.
    func refusal(of pattern: String) -> GoRegexp.SyntaxError? {
        do {
            _ = try GoRegexp(pattern)
            Issue.record("\(pattern) compiled")
            return nil
        } catch {
            return error
        }
    }

    @Test("a pattern that backtracks exponentially elsewhere takes time linear in the text")
    func hostilePatternsAreLinear() throws {
        // (a*)*b on 20,000 a's: a backtracking engine without memory tries 2^n ways. Each state
        // at each position is tried once here: the program's ~10 states times 20,001 positions.
        let text = [Unicode.Scalar](repeating: "a", count: 20_000)
        for pattern in ["(a*)*b", "(a|a)*b", "(a+)+$b", "((a?){10}){10}b"] {
            let expression = try GoRegexp(pattern)
            #expect(try expression.firstMatch(in: text) == nil, "\(pattern)")
        }
        // And every match of a long text, each search clearing only what the last one touched.
        let words = Array(String(repeating: "ab ", count: 20_000).unicodeScalars)
        #expect(try GoRegexp("[a-z]+").allMatches(in: words).count == 20_000)
    }

    @Test("a pattern or a text too large for the engine's memory is refused, not run")
    func sizeLimits() throws {
        // Counted repetitions multiply: a thousand thousand copies would be a billion steps.
        if let error = refusal(of: "(a{1000}){1000}") { #expect(error.code == "expression too large") }
        // A large pattern on a long text: more states than a search may track.
        let pattern = try GoRegexp("(x{1000}){20}")
        let text = [Unicode.Scalar](repeating: "x", count: 20_000)
        #expect(throws: TemplateFunctionError.self) { try pattern.firstMatch(in: text) }
    }

    @Test("a pattern Go can't compile fails the template with Go's words and the part at fault")
    func syntaxErrors() throws {
        let cases: [(String, String)] = [
            ("a(b", "missing closing ): `a(b`"),
            ("a)", "unexpected ): `a)`"),
            ("[a", "missing closing ]: `[a`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("*", "missing argument to repetition operator: `*`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("\\1", "invalid escape sequence: `\\1`"),
            ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        ]
        for (pattern, message) in cases {
            if let error = refusal(of: pattern) { #expect(error.description == message, "\(pattern)") }
        }
        #expect(throws: TemplateError.self) { try render(#"{{mustRegexFind "a(b" "x"}}"#) }
    }

    @Test("Unicode scripts, which Go knows and kiln doesn't, are refused, saying so")
    func scriptsAreRefused() throws {
        if let error = refusal(of: "\\p{Greek}") {
            #expect(error.description.contains("general categories, not its scripts"), "\(error)")
        }
        // The general categories are known: one letter for a group, two for one category.
        #expect(try render(#"{{regexFindAll "\\p{Ll}+|\\pN" "aΩb7" -1}}"#) == "[a b 7]")
    }

    @Test("case orbits: the extras table is what Unicode's case mappings give, and every orbit is one")
    func foldingExtrasFromUnicode() {
        // Every scalar's folding key, from the case mappings: the members its key's upper and title
        // cases don't reach are the table, exactly.
        func single(_ mapping: String) -> Unicode.Scalar? {
            mapping.unicodeScalars.count == 1 ? mapping.unicodeScalars.first : nil
        }
        var derived: Set<[UInt32]> = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let key = GoRegexp.foldingKey(of: scalar)
            #expect(GoRegexp.foldingKey(of: key) == key, "the key of U+\(String(value, radix: 16)) is its own key")
            guard key != scalar else { continue }
            let reached = [single(key.properties.uppercaseMapping), single(key.properties.titlecaseMapping)]
            if !reached.contains(scalar) { derived.insert([key.value, scalar.value]) }
        }
        #expect(derived == Set(GoRegexp.foldingExtras.map { [$0.0, $0.1] }))
        // An orbit is the same from each of its members, and all of them have one key.
        for value in UInt32(0)...0x2CFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let orbit = GoRegexp.caseOrbit(of: scalar)
            #expect(orbit.contains(scalar))
            for member in orbit {
                #expect(Set(GoRegexp.caseOrbit(of: member)) == Set(orbit), "U+\(String(value, radix: 16))")
                if !scalar.isASCII {
                    #expect(GoRegexp.foldingKey(of: member) == GoRegexp.foldingKey(of: scalar))
                }
            }
        }
        // Three letters in one orbit, and the dotless i alone (Unicode folds it only for Turkic).
        #expect(Set(GoRegexp.caseOrbit(of: "s")) == ["s", "S", "\u{017F}"])
        #expect(Set(GoRegexp.caseOrbit(of: "\u{03C2}")) == ["\u{03C3}", "\u{03A3}", "\u{03C2}"])
        #expect(GoRegexp.caseOrbit(of: "\u{0131}") == ["\u{0131}"])
    }
}
