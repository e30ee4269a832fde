import Foundation
import KilnTemplate
import Testing

/// Results a thread of its own hands back.
final class LockedResults: @unchecked Sendable {
    private let condition = NSCondition()
    private var values: [Int: Result<String, any Error>] = [:]
    private var done = false

    func set(_ index: Int, _ value: Result<String, any Error>) {
        condition.lock()
        values[index] = value
        condition.unlock()
    }

    func finish() {
        condition.lock()
        done = true
        condition.signal()
        condition.unlock()
    }

    func wait() {
        condition.lock()
        while !done { condition.wait() }
        condition.unlock()
    }

    func get(_ index: Int) -> Result<String, any Error>? {
        condition.lock()
        defer { condition.unlock() }
        return values[index]
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The template engine's own rules: where errors point, what is checked when parsing, kiln's
/// strict printing of missing values, and the limits that keep a template from hanging.
@Suite struct TextTemplateTests {
    func render(_ text: String, _ data: TemplateValue = [:], missing: TextTemplate.MissingValues = .fail) throws
        -> String
    {
        try TextTemplate(text).render(data, missing: missing)
    }

    func error(_ text: String, _ data: TemplateValue = [:]) -> TemplateError? {
        do {
            _ = try render(text, data)
            return nil
        } catch {
            return error as? TemplateError
        }
    }

    @Test("trim markers remove the spaces beside an action, comments included")
    func trimMarkers() throws {
        #expect(try render("x  {{- /* c */ -}}  y") == "xy")
        #expect(try render("a {{- \" b \" -}} c") == "a b c")
        #expect(try render("{{-3}}") == "-3")
        #expect(try render("x\n  {{- 1}}\n") == "x1\n")
    }

    @Test("an unknown function is an error when parsing, at its offset, with a suggestion")
    func unknownFunction() {
        let failure = error("echo {{.A | uper}}", ["A": "a"])
        #expect(failure?.offset == 12)
        #expect(failure?.message == "function \"uper\" not defined; did you mean \"upper\"?")
    }

    @Test("the wrong number of arguments is an error when parsing, counting the piped value")
    func arity() {
        #expect(error("{{upper}}")?.message == "wrong number of args for upper: want 1 got 0")
        #expect(error("{{\"a\" | upper \"b\"}}")?.message == "wrong number of args for upper: want 1 got 2")
        #expect(error("{{\"a\" | upper}}") == nil)
        #expect(error("{{default}}")?.message == "wrong number of args for default: want at least 1 got 0")
    }

    @Test("malformed actions are errors at their place")
    func malformed() {
        #expect(error("ab {{.A")?.offset == 3)
        #expect(error("{{if .A}}x")?.message.contains("without {{end}}") == true)
        #expect(error("{{ $x }}")?.message == "undefined variable \"$x\"")
        #expect(error("{{.A.B .C}}", ["A": ["B": "b"], "C": "c"])?.message.contains("not a function") == true)
        #expect(error("{{\"unterminated}}")?.message == "unterminated quoted string")
    }

    @Test("printing a value that isn't there is an error in kiln; go-task prints nothing")
    func missingValues() throws {
        #expect(error("x{{.TYPO}}y", ["TYPE": "t"])?.offset == 3)
        #expect(try render("x{{.TYPO}}y", missing: .printNothing) == "xy")
        // Asking about a missing value is fine.
        #expect(try render("{{if .TYPO}}a{{else}}b{{end}}{{.TYPO | default \"d\"}}{{empty .TYPO}}") == "bdtrue")
        // A declared but empty (null) value prints nothing, as in go-task.
        #expect(try render("[{{.N}}]", ["N": .null]) == "[]")
        #expect(error("{{.M.none}}", ["M": ["a": 1]]) != nil)
    }

    @Test("a render that would loop or grow without end stops with an error")
    func limits() {
        #expect(error("{{range 100000000}}x{{end}}")?.message.contains("limit") == true)
        #expect(
            error("{{define \"r\"}}{{template \"r\"}}{{end}}{{template \"r\"}}")?.message.contains("nested") == true
        )
        #expect(error("{{range 9000000}}0123456789{{end}}")?.message.contains("limit") == true)
        #expect(error("{{repeat 100000000 \"abc\"}}")?.message.contains("limit") == true)
    }

    @Test("nesting past the limits is an error, not a crash, even on a thread with a small stack")
    func deepNesting() throws {
        let deepIf = String(repeating: "{{if true}}", count: 10_000) + String(repeating: "{{end}}", count: 10_000)
        let deepParentheses =
            "{{" + String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000) + "}}"
        let deepJSON = "{{fromJson \"" + String(repeating: "[", count: 10_000) + "\" | len}}"
        // Within the limits, a template renders on a 1 MiB stack, even in a debug build; past
        // them, parsing stops with an error.
        let withinLimits =
            String(repeating: "{{if true}}", count: 30) + "x" + String(repeating: "{{end}}", count: 30)
            + "{{define \"r\"}}{{if lt . 14}}{{template \"r\" (add . 1)}}{{end}}{{end}}{{template \"r\" 0}}"
        let results = LockedResults()
        let thread = Thread {
            results.set(0, Result { try TextTemplate(deepIf) }.map { _ in "" })
            results.set(1, Result { try TextTemplate(deepParentheses) }.map { _ in "" })
            results.set(2, Result { try TextTemplate(deepJSON).render([:]) })
            results.set(3, Result { try TextTemplate(withinLimits).render([:]) })
            results.finish()
        }
        thread.stackSize = 1 << 20
        thread.start()
        results.wait()
        #expect((results.get(0)?.failure as? TemplateError)?.message.contains("nested more than 32 deep") == true)
        #expect((results.get(1)?.failure as? TemplateError)?.message.contains("nested more than 32 deep") == true)
        #expect((results.get(2)?.failure as? TemplateError) != nil || (try? results.get(2)?.get()) == "0")
        #expect((try? results.get(3)?.get()) == "x")
    }

    @Test("a template is parsed once and rendered with other data, on many threads")
    func renderedConcurrently() async throws {
        let template = try TextTemplate("{{.A}}-{{range .L}}{{.}}{{end}}")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let output = try template.render(["A": .int(index), "L": ["x", .int(index)]])
                    #expect(output == "\(index)-x\(index)")
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("variable references are listed with their offsets, not inside range or with")
    func references() throws {
        let template = try TextTemplate(
            "{{.A}} {{if .B}}{{.C}}{{end}} {{range .D}}{{.E}}{{end}} {{$.F}} {{default .G \"x\"}}"
        )
        #expect(template.variableReferences.map(\.name) == ["A", "B", "C", "D", "F", "G"])
        #expect(template.variableReferences.first?.offset == 2)
    }

    @Test("text without actions is itself")
    func literal() throws {
        #expect(try TextTemplate("a { b } c").isLiteral)
        #expect(!TextTemplate.hasActions("a { b } c"))
        #expect(TextTemplate.hasActions("a {{b}}"))
    }
}
