#if canImport(Glibc)
    import Glibc
#endif

/// A Go `text/template`, parsed once and rendered many times: the language of go-task's
/// Taskfiles (`{{.VAR}}`, `{{if}}`, `{{range}}`, pipelines, and go-task's and sprig's functions).
///
/// Parsing finds what Go finds when it parses (syntax, unknown functions, undefined
/// `$variables`) and what it would only find when it runs but the text alone shows (a function
/// given the wrong number of arguments). Rendering finds the rest (a function's own error, a
/// field of something that isn't a map) — and, unlike go-task, a value that isn't there printed
/// as text: go-task prints nothing for `{{.TYPO}}`, kiln says so. Every error carries the byte
/// offset in the text where it happened.
///
/// Threading: immutable after `init`; `render` may run on any thread, concurrently.
public final class TextTemplate: Sendable {
    /// The template's text.
    public let text: String
    let nodes: [TemplateNode]
    let definitions: [String: [TemplateNode]]
    let functions: TemplateFunctions

    /// The largest output a render may make, and how many loop iterations it may run: a template
    /// like `{{range 1000000000}}` is an error, not a hang.
    public static let outputLimit = 16 << 20
    static let iterationLimit = 10_000_000
    /// The longest list a function may make (`until`, `seq`): a million numbers.
    static let listLimit = 1 << 20
    /// How deep `{{template}}` calls may nest when rendering, and control structures and
    /// parentheses when parsing. Each level costs a few stack frames (up to ~20 KiB in a debug
    /// build) and a render may run on any thread: these keep the worst case under 1 MiB. A
    /// Taskfile's templates nest a few levels.
    static let nestingLimit = 16
    static let parseDepthLimit = 32

    /// Parses `text`.
    ///
    /// - Parameter functions: The functions the template may call (``TemplateFunctions/standard``:
    ///   Go's built-ins, sprig's, go-task's).
    /// - Throws: ``TemplateError`` at the first mistake, with its offset.
    public init(_ text: String, functions: TemplateFunctions = .standard) throws(TemplateError) {
        self.text = text
        self.functions = functions
        var parser = TemplateParser(text, functions: functions)
        nodes = try parser.parseTemplate()
        definitions = parser.definitions
        if definitions.isEmpty, nodes.allSatisfy({ if case .text = $0 { true } else { false } }) {
            literal = nodes.map { if case .text(let text) = $0 { text } else { "" } }.joined()
        } else {
            literal = nil
        }
    }

    /// The output when the template has no action (comments and trimmed spaces aside).
    private let literal: String?

    /// Whether the text has no action: rendering gives it back unchanged.
    public var isLiteral: Bool { literal != nil }

    /// Whether `text` holds anything Go would read as an action (`{{`). Text without one is
    /// its own rendering and needs no parse.
    public static func hasActions(_ text: String) -> Bool {
        // Called for every string of a large Taskfile: a byte scan over contiguous storage.
        if let found = text.utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            guard var cursor = bytes.baseAddress, bytes.count > 1 else { return false }
            var remaining = bytes.count
            // memchr for each `{`: most strings have none.
            while remaining > 1, let brace = memchr(cursor, Int32(UInt8(ascii: "{")), remaining) {
                let found = UnsafePointer(brace.assumingMemoryBound(to: UInt8.self))
                let offset = found - cursor
                if offset + 1 < remaining, found[1] == UInt8(ascii: "{") { return true }
                cursor = found + 1
                remaining -= offset + 1
            }
            return false
        }) {
            return found
        }
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "{"), previous == UInt8(ascii: "{") { return true }
            previous = byte
        }
        return false
    }

    /// The variables the template prints as they are — `{{.NAME}}`, `{{$.NAME}}`, with no
    /// function between — outside `range` and `with` (which change dot): those a typo in would
    /// print nothing in go-task. `{{if .X}}`, `{{.X | default "d"}}` ask about a variable and
    /// aren't listed.
    public var printedVariableReferences: [(name: String, offset: Int)] {
        var result: [(String, Int)] = []
        func visit(_ nodes: [TemplateNode], dotIsData: Bool) {
            for node in nodes {
                switch node {
                case .text, .loopControl, .include: break
                case .action(let pipeline):
                    guard dotIsData, pipeline.variables.isEmpty, pipeline.commands.count == 1,
                        pipeline.commands[0].operands.count == 1
                    else { continue }
                    switch pipeline.commands[0].operands[0] {
                    case .field(let names, let offset): result.append((names[0], offset))
                    case .variable(let name, let fields, let offset) where name == "$" && !fields.isEmpty:
                        result.append((fields[0], offset))
                    default: break
                    }
                case .conditional(let kind, _, let body, let otherwise):
                    visit(body, dotIsData: dotIsData && kind == .if)
                    if let otherwise { visit(otherwise, dotIsData: dotIsData) }
                case .range(_, let body, let otherwise):
                    visit(body, dotIsData: false)
                    if let otherwise { visit(otherwise, dotIsData: dotIsData) }
                }
            }
        }
        visit(nodes, dotIsData: true)
        return result
    }

    /// The value of a template that is one action (`{{index .L 0}}`), not printed: what go-task's
    /// `ref:` variables are.
    ///
    /// - Throws: ``TemplateError`` if rendering fails, or the template isn't a single action.
    public func value(_ data: TemplateValue) throws(TemplateError) -> TemplateValue {
        guard nodes.count == 1, case .action(let pipeline) = nodes[0], definitions.isEmpty else {
            throw TemplateError("expected a single expression", at: 0)
        }
        var evaluator = TemplateEvaluator(template: self, data: data, missing: .printNothing)
        return try evaluator.value(of: pipeline)
    }

    /// The names of the top-level variables the template reads as `.NAME` (first field of a
    /// field chain on the data, outside `range` and `with`, which change dot), in order, with
    /// their offsets.
    public var variableReferences: [(name: String, offset: Int)] {
        var result: [(String, Int)] = []
        func visit(_ pipeline: TemplatePipeline) {
            for command in pipeline.commands {
                for operand in command.operands { visit(operand) }
            }
        }
        func visit(_ operand: TemplateOperand) {
            switch operand {
            case .field(let names, let offset): result.append((names[0], offset))
            case .variable(let name, let fields, let offset) where name == "$" && !fields.isEmpty:
                result.append((fields[0], offset))
            case .pipeline(let pipeline, _, _): visit(pipeline)
            default: break
            }
        }
        func visit(_ nodes: [TemplateNode], dotIsData: Bool) {
            for node in nodes {
                switch node {
                case .text, .loopControl: break
                case .action(let pipeline): if dotIsData { visit(pipeline) }
                case .conditional(let kind, let pipeline, let body, let otherwise):
                    if dotIsData { visit(pipeline) }
                    visit(body, dotIsData: dotIsData && kind == .if)
                    if let otherwise { visit(otherwise, dotIsData: dotIsData) }
                case .range(let pipeline, let body, let otherwise):
                    if dotIsData { visit(pipeline) }
                    visit(body, dotIsData: false)
                    if let otherwise { visit(otherwise, dotIsData: dotIsData) }
                case .include(_, let pipeline, _): if dotIsData, let pipeline { visit(pipeline) }
                }
            }
        }
        visit(nodes, dotIsData: true)
        return result
    }

    /// Every top-level name of the data the template may read — counted wherever a field is read,
    /// whatever dot is there, so never too few — or `nil` when it may read all of it (dot or `$`
    /// used whole: `{{.}}`, `{{spew .}}`, `{{template "t" .}}`). Two renders of the template
    /// with data that agree on these names print the same.
    ///
    /// Threading: any thread.
    public var dataNames: Set<String>? {
        var names = Set<String>()
        var whole = false
        func visit(_ pipeline: TemplatePipeline) {
            for command in pipeline.commands {
                for operand in command.operands { visit(operand) }
            }
        }
        func visit(_ operand: TemplateOperand) {
            switch operand {
            case .dot: whole = true
            case .field(let fields, _): names.insert(fields[0])
            case .variable(let name, let fields, _) where name == "$":
                if let first = fields.first { names.insert(first) } else { whole = true }
            case .pipeline(let pipeline, _, _): visit(pipeline)
            default: break
            }
        }
        func visit(_ nodes: [TemplateNode]) {
            for node in nodes {
                switch node {
                case .text, .loopControl: break
                case .action(let pipeline): visit(pipeline)
                case .conditional(_, let pipeline, let body, let otherwise):
                    visit(pipeline)
                    visit(body)
                    if let otherwise { visit(otherwise) }
                case .range(let pipeline, let body, let otherwise):
                    visit(pipeline)
                    visit(body)
                    if let otherwise { visit(otherwise) }
                case .include(_, let pipeline, _): if let pipeline { visit(pipeline) }
                }
            }
        }
        visit(nodes)
        for (_, body) in definitions { visit(body) }
        return whole ? nil : names
    }

    /// Renders the template with `data` as dot (and `$`).
    ///
    /// - Parameter missing: What printing a value that isn't there does: ``MissingValues/fail``
    ///   (kiln's rule) or ``MissingValues/printNothing`` (go-task's).
    /// - Throws: ``TemplateError`` with the offset of the action that failed.
    public func render(_ data: TemplateValue, missing: MissingValues = .fail) throws(TemplateError) -> String {
        if let literal { return literal }
        var evaluator = TemplateEvaluator(template: self, data: data, missing: missing)
        try evaluator.run(nodes)
        return evaluator.output
    }

    /// What printing a value that isn't there does.
    public enum MissingValues: Sendable {
        /// An error naming it (kiln's rule: `{{.TYPO}}` is a mistake, not an empty string).
        case fail
        /// Nothing is printed (go-task's rule).
        case printNothing
    }
}

/// A mistake in a template, or a failure while rendering it.
///
/// Threading: a value type; safe to pass between threads.
public struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// Where, in UTF-8 bytes from the start of the template's text.
    public var offset: Int

    /// Creates an error.
    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// The message.
    public var description: String { message }
}
