/// Parses Go `text/template` text into ``TemplateNode``s, checking what Go checks when it parses
/// (syntax, unknown functions, undefined `$variables`) and what it would only find when it runs
/// but can be known from the text alone (a function given the wrong number of arguments, an
/// argument given to something that isn't a function).
///
/// Threading: a value used by one thread at a time.
struct TemplateParser {
    private let bytes: [UInt8]
    private let functions: TemplateFunctions
    private var index = 0
    /// Whether the last action ended with ` -}}`: the next text loses its leading spaces.
    private var trimNext = false
    /// `$variables` in scope, innermost block last.
    private var scopes: [[String]] = [["$"]]
    /// How many `range` blocks enclose the current point.
    private var rangeDepth = 0
    /// How many control structures and parentheses enclose the current point.
    private var depth = 0

    /// Enters one more level of nesting, or fails past ``TextTemplate/parseDepthLimit``.
    private mutating func descend(at offset: Int) throws(TemplateError) {
        depth += 1
        if depth > TextTemplate.parseDepthLimit {
            throw TemplateError("actions nested more than \(TextTemplate.parseDepthLimit) deep", at: offset)
        }
    }
    /// `{{define}}` and `{{block}}` bodies.
    var definitions: [String: [TemplateNode]] = [:]

    init(_ text: String, functions: TemplateFunctions) {
        bytes = Array(text.utf8)
        self.functions = functions
    }

    // MARK: Lists and actions

    /// What ended a list of nodes.
    enum Terminator: Equatable {
        case endOfText
        case end
        /// `{{else}}`, or `{{else if …}}` / `{{else with …}}` (the keyword, and where its pipeline starts).
        case otherwise(keyword: String?)
    }

    /// The whole template.
    mutating func parseTemplate() throws(TemplateError) -> [TemplateNode] {
        let (nodes, terminator, offset) = try parseList()
        switch terminator {
        case .endOfText: return nodes
        case .end: throw TemplateError("unexpected {{end}}", at: offset)
        case .otherwise: throw TemplateError("unexpected {{else}}", at: offset)
        }
    }

    /// Nodes up to the end of the text or a `{{end}}` / `{{else}}` action (consumed).
    private mutating func parseList() throws(TemplateError) -> ([TemplateNode], Terminator, Int) {
        var nodes: [TemplateNode] = []
        while true {
            let start = index
            let open = findOpen(from: index)
            var textEnd = open ?? bytes.count
            var trimsLeft = false
            if let open, open + 3 < bytes.count, bytes[open + 2] == UInt8(ascii: "-"), Self.isSpace(bytes[open + 3]) {
                trimsLeft = true
            }
            var textStart = start
            if trimNext {
                while textStart < textEnd, Self.isSpace(bytes[textStart]) { textStart += 1 }
                trimNext = false
            }
            if trimsLeft {
                while textEnd > textStart, Self.isSpace(bytes[textEnd - 1]) { textEnd -= 1 }
            }
            if textEnd > textStart {
                nodes.append(.text(String(decoding: bytes[textStart..<textEnd], as: UTF8.self)))
            }
            guard let open else {
                index = bytes.count
                return (nodes, .endOfText, bytes.count)
            }
            index = open + 2 + (trimsLeft ? 2 : 0)
            if let node = try parseAction(openedAt: open) {
                switch node {
                case .node(let node): nodes.append(node)
                case .terminator(let terminator): return (nodes, terminator, open)
                case .nothing: break
                }
            }
        }
    }

    private enum ActionResult {
        case node(TemplateNode)
        case terminator(Terminator)
        case nothing
    }

    /// The action after `{{` (and its trim marker) at `index`.
    private mutating func parseAction(openedAt open: Int) throws(TemplateError) -> ActionResult? {
        skipSpaces()
        // A comment is the whole action: {{/* … */}}.
        if matches("/*") {
            guard let close = find([UInt8(ascii: "*"), UInt8(ascii: "/")], from: index + 2) else {
                throw TemplateError("unclosed comment", at: open)
            }
            index = close + 2
            try closeAction(openedAt: open, what: "comment")
            return .nothing
        }
        var tokens = try lexAction(openedAt: open)
        guard let first = tokens.first else { throw TemplateError("missing value for command", at: open) }
        if case .identifier(let word) = first.kind {
            switch word {
            case "end":
                try expectEnd(tokens, what: "end")
                return .terminator(.end)
            case "else":
                if tokens.count > 1, case .identifier(let keyword) = tokens[1].kind,
                    keyword == "if" || keyword == "with"
                {
                    // Parsed by the caller as a nested block: hand the rest back through `pendingElse`.
                    tokens.removeFirst(2)
                    pendingElse = tokens
                    return .terminator(.otherwise(keyword: keyword))
                }
                try expectEnd(tokens, what: "else")
                return .terminator(.otherwise(keyword: nil))
            case "if", "with":
                tokens.removeFirst()
                return .node(try parseConditional(word == "if" ? .if : .with, tokens: tokens, at: first.offset))
            case "range":
                tokens.removeFirst()
                return .node(try parseRange(tokens: tokens, at: first.offset))
            case "break", "continue":
                try expectEnd(tokens, what: word)
                guard rangeDepth > 0 else { throw TemplateError("{{\(word)}} outside {{range}}", at: first.offset) }
                return .node(.loopControl(breaks: word == "break", offset: first.offset))
            case "define", "block":
                guard tokens.count >= 2, case .string(let name) = tokens[1].kind else {
                    throw TemplateError("{{\(word)}} needs a quoted template name", at: first.offset)
                }
                var pipeline: TemplatePipeline?
                if word == "block" {
                    guard tokens.count > 2 else { throw TemplateError("{{block}} needs a pipeline", at: first.offset) }
                    pipeline = try parsePipeline(Array(tokens[2...]), at: tokens[2].offset, allowsDeclarations: false)
                } else if tokens.count > 2 {
                    throw TemplateError("unexpected \(tokens[2].text) in {{define}}", at: tokens[2].offset)
                }
                try descend(at: first.offset)
                defer { depth -= 1 }
                let savedScopes = scopes
                let savedRange = rangeDepth
                scopes = [["$"]]
                rangeDepth = 0
                let (body, terminator, offset) = try parseList()
                scopes = savedScopes
                rangeDepth = savedRange
                guard terminator == .end else { throw TemplateError("{{\(word)}} without {{end}}", at: offset) }
                definitions[name] = body
                return word == "block"
                    ? .node(.include(name: name, pipeline: pipeline, offset: first.offset)) : .nothing
            case "template":
                guard tokens.count >= 2, case .string(let name) = tokens[1].kind else {
                    throw TemplateError("{{template}} needs a quoted template name", at: first.offset)
                }
                let pipeline =
                    tokens.count > 2
                    ? try parsePipeline(Array(tokens[2...]), at: tokens[2].offset, allowsDeclarations: false) : nil
                return .node(.include(name: name, pipeline: pipeline, offset: first.offset))
            default: break
            }
        }
        return .node(.action(try parsePipeline(tokens, at: first.offset, allowsDeclarations: true)))
    }

    /// The tokens of an `{{else if …}}` waiting to be parsed as the nested block's pipeline.
    private var pendingElse: [Token]?

    private mutating func parseConditional(_ kind: TemplateNode.ConditionalKind, tokens: [Token], at offset: Int)
        throws(TemplateError)
        -> TemplateNode
    {
        guard !tokens.isEmpty else {
            throw TemplateError("missing value for \(kind == .if ? "if" : "with")", at: offset)
        }
        try descend(at: offset)
        defer { depth -= 1 }
        scopes.append([])
        defer { scopes.removeLast() }
        let pipeline = try parsePipeline(tokens, at: tokens[0].offset, allowsDeclarations: true)
        let (body, terminator, endOffset) = try parseList()
        switch terminator {
        case .endOfText:
            throw TemplateError(
                "unexpected end of template: {{\(kind == .if ? "if" : "with")}} without {{end}}",
                at: offset
            )
        case .end:
            return .conditional(kind: kind, pipeline: pipeline, body: body, otherwise: nil)
        case .otherwise(nil):
            let (otherwise, closing, closingOffset) = try parseList()
            guard closing == .end else { throw TemplateError("expected {{end}} after {{else}}", at: closingOffset) }
            return .conditional(kind: kind, pipeline: pipeline, body: body, otherwise: otherwise)
        case .otherwise(let keyword?):
            // `{{else if x}}…{{end}}` is `{{else}}{{if x}}…{{end}}{{end}}` with one shared {{end}}.
            let nestedTokens = pendingElse ?? []
            pendingElse = nil
            let nested = try parseConditional(keyword == "if" ? .if : .with, tokens: nestedTokens, at: endOffset)
            return .conditional(kind: kind, pipeline: pipeline, body: body, otherwise: [nested])
        }
    }

    private mutating func parseRange(tokens: [Token], at offset: Int) throws(TemplateError) -> TemplateNode {
        guard !tokens.isEmpty else { throw TemplateError("missing value for range", at: offset) }
        try descend(at: offset)
        defer { depth -= 1 }
        scopes.append([])
        defer { scopes.removeLast() }
        let pipeline = try parsePipeline(tokens, at: tokens[0].offset, allowsDeclarations: true, inRange: true)
        rangeDepth += 1
        let (body, terminator, endOffset) = try parseList()
        rangeDepth -= 1
        switch terminator {
        case .endOfText: throw TemplateError("unexpected end of template: {{range}} without {{end}}", at: offset)
        case .end: return .range(pipeline: pipeline, body: body, otherwise: nil)
        case .otherwise(nil):
            let (otherwise, closing, closingOffset) = try parseList()
            guard closing == .end else { throw TemplateError("expected {{end}} after {{else}}", at: closingOffset) }
            return .range(pipeline: pipeline, body: body, otherwise: otherwise)
        case .otherwise:
            throw TemplateError(
                "{{else if}} and {{else with}} belong to {{if}} and {{with}}, not {{range}}",
                at: endOffset
            )
        }
    }

    private func expectEnd(_ tokens: [Token], what: String) throws(TemplateError) {
        if tokens.count > 1 { throw TemplateError("unexpected \(tokens[1].text) in {{\(what)}}", at: tokens[1].offset) }
    }

    // MARK: Pipelines

    private mutating func parsePipeline(
        _ tokens: [Token],
        at offset: Int,
        allowsDeclarations: Bool,
        inRange: Bool = false
    )
        throws(TemplateError) -> TemplatePipeline
    {
        var position = 0
        var variables: [String] = []
        var assigns = false
        // `$x :=`, `$x =`, or (in range) `$i, $v :=`.
        if allowsDeclarations, case .variable(let first) = tokens.first?.kind {
            var names = [first]
            var next = 1
            if inRange, tokens.count > 3, tokens[1].kind == .comma, case .variable(let second) = tokens[2].kind {
                names.append(second)
                next = 3
            }
            if next < tokens.count, tokens[next].kind == .declare || tokens[next].kind == .assign {
                assigns = tokens[next].kind == .assign
                if names.count == 2, assigns {
                    throw TemplateError("range can only declare variables with :=", at: tokens[next].offset)
                }
                for (name, token) in zip(names, [tokens[0], tokens[min(2, next)]]) where assigns {
                    guard isDeclared(name) else {
                        throw TemplateError("undefined variable \"\(name)\"", at: token.offset)
                    }
                }
                variables = names
                position = next + 1
            } else if next == 3 {
                throw TemplateError("expected := after range variables", at: tokens[min(next, tokens.count - 1)].offset)
            }
        }
        var commands: [TemplateCommand] = []
        var rest = tokens[position...]
        guard !rest.isEmpty else { throw TemplateError("missing value for command", at: offset) }
        while true {
            let (command, remaining) = try parseCommand(rest, isFirst: commands.isEmpty, stage: commands.count + 1)
            commands.append(command)
            rest = remaining
            guard let separator = rest.first else { break }
            guard separator.kind == .pipe else {
                throw TemplateError("unexpected \(separator.text) in command", at: separator.offset)
            }
            rest = rest.dropFirst()
            guard !rest.isEmpty else { throw TemplateError("missing command after |", at: separator.offset) }
        }
        // Declared after the pipeline is parsed: `{{$x := $x}}` reads an outer $x.
        if !assigns { scopes[scopes.count - 1] += variables }
        return TemplatePipeline(variables: variables, assigns: assigns, commands: commands, offset: offset)
    }

    private func isDeclared(_ name: String) -> Bool {
        scopes.contains { $0.contains(name) }
    }

    /// One command: operands up to a `|` or the end; returns the tokens after it.
    private mutating func parseCommand(_ tokens: ArraySlice<Token>, isFirst: Bool, stage: Int) throws(TemplateError)
        -> (TemplateCommand, ArraySlice<Token>)
    {
        var operands: [TemplateOperand] = []
        var rest = tokens
        let offset = tokens.first!.offset
        while let token = rest.first, token.kind != .pipe {
            if !operands.isEmpty, !token.spaceBefore, token.kind != .rightParen {
                throw TemplateError("missing space before \(token.text)", at: token.offset)
            }
            if token.kind == .rightParen { throw TemplateError("unexpected )", at: token.offset) }
            let (operand, remaining) = try parseOperand(rest)
            operands.append(operand)
            rest = remaining
        }
        guard let head = operands.first else { throw TemplateError("missing value for command", at: offset) }
        switch head {
        case .function(let name, let at):
            let function = functions[name]!
            let count = operands.count - 1 + (isFirst ? 0 : 1)
            if let message = function.arityProblem(count, name: name) { throw TemplateError(message, at: at) }
        case .null(let at):
            throw TemplateError("nil is not a command", at: at)
        default:
            if operands.count > 1 {
                throw TemplateError(
                    "\(describe(head)) is not a function: it can't take arguments",
                    at: operands[1].offset
                )
            }
            if !isFirst {
                throw TemplateError(
                    "\(describe(head)) is not a function: it can't take the value of the stage before it (| stage \(stage))",
                    at: head.offset
                )
            }
        }
        return (TemplateCommand(operands: operands, offset: offset), rest)
    }

    private func describe(_ operand: TemplateOperand) -> String {
        switch operand {
        case .dot: "."
        case .field(let names, _): "." + names.joined(separator: ".")
        case .variable(let name, let fields, _): ([name] + fields).joined(separator: ".")
        case .literal(let value, _): value.stringValue.map { "\"\($0)\"" } ?? value.printed
        case .pipeline: "a parenthesized pipeline"
        case .function(let name, _): name
        case .null: "nil"
        }
    }

    /// One operand and the field chain right after it.
    private mutating func parseOperand(_ tokens: ArraySlice<Token>) throws(TemplateError) -> (
        TemplateOperand, ArraySlice<Token>
    ) {
        var rest = tokens.dropFirst()
        let token = tokens.first!
        var operand: TemplateOperand
        switch token.kind {
        case .dot: operand = .dot(offset: token.offset)
        case .field(let name):
            var names = [name]
            while let next = rest.first, !next.spaceBefore, case .field(let more) = next.kind {
                names.append(more)
                rest = rest.dropFirst()
            }
            return (.field(names, offset: token.offset), rest)
        case .variable(let name):
            guard isDeclared(name) else { throw TemplateError("undefined variable \"\(name)\"", at: token.offset) }
            operand = .variable(name, fields: [], offset: token.offset)
        case .identifier(let name):
            switch name {
            case "true", "false": operand = .literal(.bool(name == "true"), offset: token.offset)
            case "nil": operand = .null(offset: token.offset)
            default:
                guard functions[name] != nil else {
                    var message = "function \"\(name)\" not defined"
                    if let close = functions.suggestion(for: name) { message += "; did you mean \"\(close)\"?" }
                    throw TemplateError(message, at: token.offset)
                }
                operand = .function(name, offset: token.offset)
            }
        case .string(let value): operand = .literal(.string(value), offset: token.offset)
        case .number(let value): operand = .literal(value, offset: token.offset)
        case .leftParen:
            // Up to the matching parenthesis.
            var depth = 1
            var end = rest.startIndex
            while end < rest.endIndex {
                if rest[end].kind == .leftParen { depth += 1 }
                if rest[end].kind == .rightParen {
                    depth -= 1
                    if depth == 0 { break }
                }
                end += 1
            }
            guard end < rest.endIndex else { throw TemplateError("unclosed left paren", at: token.offset) }
            let inner = Array(rest[rest.startIndex..<end])
            guard !inner.isEmpty else { throw TemplateError("missing value in ()", at: token.offset) }
            try descend(at: token.offset)
            defer { depth -= 1 }
            let pipeline = try parsePipeline(inner, at: inner[0].offset, allowsDeclarations: false)
            rest = rest[(end + 1)...]
            operand = .pipeline(pipeline, fields: [], offset: token.offset)
        default:
            throw TemplateError("unexpected \(token.text) in operand", at: token.offset)
        }
        // Fields right after a variable or a parenthesized pipeline: `$x.A`, `(…).A`.
        var fields: [String] = []
        while let next = rest.first, !next.spaceBefore, case .field(let name) = next.kind {
            fields.append(name)
            rest = rest.dropFirst()
        }
        if !fields.isEmpty {
            switch operand {
            case .variable(let name, _, let offset): operand = .variable(name, fields: fields, offset: offset)
            case .pipeline(let pipeline, _, let offset): operand = .pipeline(pipeline, fields: fields, offset: offset)
            case .dot: operand = .field(fields, offset: token.offset)
            default:
                throw TemplateError(
                    "unexpected .\(fields[0]) after \(token.text)",
                    at: rest.first?.offset ?? token.offset
                )
            }
        }
        if let next = rest.first, !next.spaceBefore, next.kind != .rightParen, next.kind != .pipe, next.kind != .comma {
            throw TemplateError("unexpected \(next.text) after \(token.text); missing space?", at: next.offset)
        }
        return (operand, rest)
    }

    // MARK: Lexing

    struct Token {
        enum Kind: Equatable {
            case identifier(String)
            case field(String)
            case variable(String)
            case string(String)
            case number(TemplateValue)
            case dot, leftParen, rightParen, pipe, comma, declare, assign
        }

        var kind: Kind
        var offset: Int
        var spaceBefore: Bool
        var text: String
    }

    /// The tokens of the action at `index`, up to and past its `}}` (noting a ` -}}`).
    private mutating func lexAction(openedAt open: Int) throws(TemplateError) -> [Token] {
        var tokens: [Token] = []
        var sawSpace = true
        while true {
            let before = index
            skipSpaces()
            if index > before { sawSpace = true }
            guard index < bytes.count else { throw TemplateError("unclosed action", at: open) }
            // ` -}}` trims; `}}` closes.
            if bytes[index] == UInt8(ascii: "-"), sawSpace, matches("-}}", at: index) {
                index += 3
                trimNext = true
                return tokens
            }
            if matches("}}") {
                index += 2
                return tokens
            }
            let start = index
            let byte = bytes[index]
            let kind: Token.Kind
            switch byte {
            case UInt8(ascii: "("): index += 1; kind = .leftParen
            case UInt8(ascii: ")"): index += 1; kind = .rightParen
            case UInt8(ascii: "|"): index += 1; kind = .pipe
            case UInt8(ascii: ","): index += 1; kind = .comma
            case UInt8(ascii: ":"):
                guard matches(":=") else { throw TemplateError("expected :=", at: index) }
                index += 2
                kind = .declare
            case UInt8(ascii: "="): index += 1; kind = .assign
            case UInt8(ascii: "\""): kind = .string(try lexQuoted())
            case UInt8(ascii: "`"):
                guard let close = bytes[(index + 1)...].firstIndex(of: UInt8(ascii: "`")) else {
                    throw TemplateError("unterminated raw quoted string", at: index)
                }
                kind = .string(String(decoding: bytes[(index + 1)..<close], as: UTF8.self))
                index = close + 1
            case UInt8(ascii: "'"): kind = .number(.int(try lexCharacter()))
            case UInt8(ascii: "$"):
                index += 1
                let name = lexWord()
                kind = .variable("$" + name)
            case UInt8(ascii: "."):
                if index + 1 < bytes.count, Self.isDigit(bytes[index + 1]) {
                    kind = .number(try lexNumber())
                } else {
                    index += 1
                    let name = lexWord()
                    kind = name.isEmpty ? .dot : .field(name)
                }
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard index + 1 < bytes.count, Self.isDigit(bytes[index + 1]) || bytes[index + 1] == UInt8(ascii: ".")
                else {
                    throw TemplateError("unexpected \"\(Character(UnicodeScalar(byte)))\" in action", at: index)
                }
                kind = .number(try lexNumber())
            default:
                if Self.isDigit(byte) {
                    kind = .number(try lexNumber())
                } else if Self.isWordStart(byte) {
                    kind = .identifier(lexWord())
                } else {
                    let character =
                        String(decoding: bytes[index..<min(bytes.count, index + 4)], as: UTF8.self).first.map(
                            String.init
                        ) ?? "?"
                    throw TemplateError("unexpected \"\(character)\" in action", at: index)
                }
            }
            tokens.append(
                Token(
                    kind: kind,
                    offset: start,
                    spaceBefore: sawSpace,
                    text: String(decoding: bytes[start..<index], as: UTF8.self)
                )
            )
            sawSpace = false
        }
    }

    private mutating func lexWord() -> String {
        let start = index
        while index < bytes.count, Self.isWordStart(bytes[index]) || Self.isDigit(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func lexNumber() throws(TemplateError) -> TemplateValue {
        let start = index
        if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
        var previous: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            let isExponentSign =
                (byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-"))
                && (previous == UInt8(ascii: "e") || previous == UInt8(ascii: "E") || previous == UInt8(ascii: "p")
                    || previous == UInt8(ascii: "P"))
                && !(bytes[start..<index].contains(UInt8(ascii: "x"))
                    && (previous == UInt8(ascii: "e") || previous == UInt8(ascii: "E")))
            guard Self.isDigit(byte) || Self.isWordStart(byte) || byte == UInt8(ascii: ".") || isExponentSign else {
                break
            }
            previous = byte
            index += 1
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Self.number(text) else { throw TemplateError("bad number syntax: \"\(text)\"", at: start) }
        return value
    }

    /// Go's number literal syntax: decimal, `0x`, `0o`, `0b`, legacy octal, `_` separators, floats.
    static func number(_ text: String) -> TemplateValue? {
        var body = Substring(text)
        var negative = false
        if body.first == "+" || body.first == "-" {
            negative = body.first == "-"
            body.removeFirst()
        }
        guard !body.isEmpty, !body.hasPrefix("_"), !body.hasSuffix("_") else { return nil }
        let plain = String(body.filter { $0 != "_" })
        let lower = plain.lowercased()
        func signed(_ magnitude: Int) -> TemplateValue { .int(negative ? -magnitude : magnitude) }
        if lower.hasPrefix("0x") {
            if lower.contains("p") || lower.contains(".") { return nil }
            return Int(lower.dropFirst(2), radix: 16).map(signed)
        }
        if lower.hasPrefix("0o") { return Int(lower.dropFirst(2), radix: 8).map(signed) }
        if lower.hasPrefix("0b") { return Int(lower.dropFirst(2), radix: 2).map(signed) }
        if lower.allSatisfy(\.isNumber) {
            if lower.count > 1, lower.hasPrefix("0") { return Int(lower.dropFirst(), radix: 8).map(signed) }
            return Int(lower).map(signed)
        }
        guard lower.allSatisfy({ $0.isNumber || "e.+-".contains($0) }), let value = Double(lower) else { return nil }
        return .float(negative ? -value : value)
    }

    /// A `"…"` string with Go's escapes.
    private mutating func lexQuoted() throws(TemplateError) -> String {
        let start = index
        index += 1
        var result: [UInt8] = []
        while true {
            guard index < bytes.count, bytes[index] != UInt8(ascii: "\n") else {
                throw TemplateError("unterminated quoted string", at: start)
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: result, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                try lexEscape(into: &result, quote: UInt8(ascii: "\""))
            } else {
                result.append(byte)
                index += 1
            }
        }
    }

    /// A `'x'` character constant: its code point.
    private mutating func lexCharacter() throws(TemplateError) -> Int {
        let start = index
        index += 1
        var result: [UInt8] = []
        guard index < bytes.count else { throw TemplateError("unterminated character constant", at: start) }
        if bytes[index] == UInt8(ascii: "\\") {
            try lexEscape(into: &result, quote: UInt8(ascii: "'"))
        } else {
            let scalarStart = index
            index += 1
            while index < bytes.count, bytes[index] & 0xC0 == 0x80 { index += 1 }
            result = Array(bytes[scalarStart..<index])
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "'"),
            let scalar = String(decoding: result, as: UTF8.self).unicodeScalars.first
        else { throw TemplateError("malformed character constant", at: start) }
        index += 1
        return Int(scalar.value)
    }

    private mutating func lexEscape(into result: inout [UInt8], quote: UInt8) throws(TemplateError) {
        let start = index
        index += 1
        guard index < bytes.count else { throw TemplateError("unterminated escape", at: start) }
        let byte = bytes[index]
        index += 1
        func hex(_ count: Int) throws(TemplateError) -> UInt32 {
            guard index + count <= bytes.count,
                let value = UInt32(String(decoding: bytes[index..<index + count], as: UTF8.self), radix: 16)
            else {
                throw TemplateError("invalid escape", at: start)
            }
            index += count
            return value
        }
        func append(_ scalar: UInt32) throws(TemplateError) {
            guard let scalar = Unicode.Scalar(scalar) else { throw TemplateError("invalid escape", at: start) }
            result += Array(String(Character(scalar)).utf8)
        }
        switch byte {
        case UInt8(ascii: "n"): result.append(0x0A)
        case UInt8(ascii: "t"): result.append(0x09)
        case UInt8(ascii: "r"): result.append(0x0D)
        case UInt8(ascii: "a"): result.append(0x07)
        case UInt8(ascii: "b"): result.append(0x08)
        case UInt8(ascii: "f"): result.append(0x0C)
        case UInt8(ascii: "v"): result.append(0x0B)
        case UInt8(ascii: "\\"): result.append(byte)
        case quote: result.append(byte)
        case UInt8(ascii: "x"): result.append(UInt8(try hex(2)))
        case UInt8(ascii: "u"): try append(try hex(4))
        case UInt8(ascii: "U"): try append(try hex(8))
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            guard index + 2 <= bytes.count,
                let value = UInt8(String(decoding: bytes[(index - 1)..<(index + 2)], as: UTF8.self), radix: 8)
            else {
                throw TemplateError("invalid escape", at: start)
            }
            index += 2
            result.append(value)
        default: throw TemplateError("unknown escape sequence \\\(Character(UnicodeScalar(byte)))", at: start)
        }
    }

    private mutating func closeAction(openedAt open: Int, what: String) throws(TemplateError) {
        skipSpaces()
        if matches("-}}") {
            index += 3
            trimNext = true
        } else if matches("}}") {
            index += 2
        } else {
            throw TemplateError("\(what) ends before the closing delimiter", at: index)
        }
    }

    // MARK: Bytes

    private mutating func skipSpaces() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    private func matches(_ text: StaticString, at position: Int? = nil) -> Bool {
        let position = position ?? index
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return text.withUTF8Buffer { buffer in bytes[position..<position + count].elementsEqual(buffer) }
    }

    private func findOpen(from start: Int) -> Int? {
        find([UInt8(ascii: "{"), UInt8(ascii: "{")], from: start)
    }

    private func find(_ needle: [UInt8], from start: Int) -> Int? {
        var position = start
        while position + 1 < bytes.count {
            if bytes[position] == needle[0], bytes[position + 1] == needle[1] { return position }
            position += 1
        }
        return nil
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
            || byte == UInt8(ascii: "\r")
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func isWordStart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_") || byte >= 0x80
    }
}
