/// Go's `text/template` built-in functions, and `fmt`'s printing that `print` and `printf` share.
///
/// Threading: stateless.
enum GoBuiltins {
    static func register(into table: inout [String: TemplateFunction]) {
        table["and"] = TemplateFunction(shortCircuit: .and)
        table["or"] = TemplateFunction(shortCircuit: .or)
        table["not"] = TemplateFunction(arguments: 1) { .bool(!$0[0].isTruthy) }
        table["len"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            switch arguments[0] {
            case .string(let text): return .int(text.utf8.count)
            case .list(let items): return .int(items.count)
            case .map(let entries): return .int(entries.count)
            case .missing, .null: throw TemplateFunctionError("len of nil pointer")
            default: throw TemplateFunctionError("len of type \(arguments[0].goTypeName)")
            }
        }
        table["index"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            var current = arguments[0]
            for key in arguments.dropFirst() {
                switch current {
                case .list(let items):
                    guard case .int(let position) = key else {
                        throw TemplateFunctionError("cannot index slice/array with type \(key.goTypeName)")
                    }
                    guard items.indices.contains(position) else {
                        throw TemplateFunctionError("index out of range: \(position)")
                    }
                    current = items[position]
                case .string(let text):
                    guard case .int(let position) = key else {
                        throw TemplateFunctionError("cannot index slice/array with type \(key.goTypeName)")
                    }
                    let bytes = Array(text.utf8)
                    guard bytes.indices.contains(position) else {
                        throw TemplateFunctionError("index out of range: \(position)")
                    }
                    current = .int(Int(bytes[position]))
                case .map(let entries):
                    guard case .string(let name) = key else {
                        throw TemplateFunctionError("value has type \(key.goTypeName); should be string")
                    }
                    current = entries[name] ?? .null
                case .missing, .null: throw TemplateFunctionError("index of untyped nil")
                default: throw TemplateFunctionError("can't index item of type \(current.goTypeName)")
                }
            }
            return current
        }
        table["print"] = TemplateFunction(arguments: 0, to: nil) { .string(sprint($0)) }
        table["println"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(arguments.map(\.printedForFormat).joined(separator: " ") + "\n")
        }
        table["printf"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            .string(GoFormat.sprintf(try arguments[0].requireString(), Array(arguments.dropFirst())))
        }
        table["eq"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            guard arguments.count >= 2 else { throw TemplateFunctionError("missing argument for comparison") }
            for other in arguments.dropFirst() {
                if try equal(arguments[0], other) { return true }
            }
            return false
        }
        table["ne"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(!(try equal(arguments[0], arguments[1])))
        }
        table["lt"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(try less(arguments[0], arguments[1]))
        }
        table["le"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let isLess = try less(arguments[0], arguments[1])
            let isEqual = try equal(arguments[0], arguments[1])
            return .bool(isLess || isEqual)
        }
        table["gt"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let isLess = try less(arguments[0], arguments[1])
            let isEqual = try equal(arguments[0], arguments[1])
            return .bool(!isLess && !isEqual)
        }
        table["ge"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(!(try less(arguments[0], arguments[1])))
        }
        table["html"] = TemplateFunction(arguments: 0, to: nil) { arguments in .string(htmlEscape(sprint(arguments))) }
        table["js"] = TemplateFunction(arguments: 0, to: nil) { arguments in .string(jsEscape(sprint(arguments))) }
        table["urlquery"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(queryEscape(sprint(arguments)))
        }
        table["call"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            throw TemplateFunctionError(
                "non-function of type \(arguments[0].goTypeName): templates have no function values"
            )
        }
    }

    /// `fmt.Sprint`: a space between two operands when neither is a string.
    static func sprint(_ arguments: [TemplateValue]) -> String {
        var output = ""
        for (position, argument) in arguments.enumerated() {
            if position > 0, argument.stringValue == nil, arguments[position - 1].stringValue == nil { output += " " }
            output += argument.printedForFormat
        }
        return output
    }

    /// Go's `eq` for two values: basic kinds compare by value; values of different kinds are an
    /// error unless one of them is nil or missing; lists and maps can't be compared.
    static func equal(_ a: TemplateValue, _ b: TemplateValue) throws(TemplateFunctionError) -> Bool {
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.float(let x), .float(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.time(let x), .time(let y)): return x.seconds == y.seconds && x.nanoseconds == y.nanoseconds
        case (.list, _), (.map, _):
            throw TemplateFunctionError("non-comparable type \(a.printed): \(a.goTypeName)")
        case (.missing, .missing), (.null, .null), (.missing, .null), (.null, .missing): return true
        case (.missing, _), (.null, _), (_, .missing), (_, .null): return false
        case (_, .list), (_, .map): throw TemplateFunctionError("non-comparable type \(b.printed): \(b.goTypeName)")
        default: throw TemplateFunctionError("incompatible types for comparison")
        }
    }

    static func less(_ a: TemplateValue, _ b: TemplateValue) throws(TemplateFunctionError) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y
        case (.float(let x), .float(let y)): return x < y
        case (.string(let x), .string(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        case (.int, _), (.float, _), (.string, _):
            switch b {
            case .int, .float, .string: throw TemplateFunctionError("incompatible types for comparison")
            default: throw TemplateFunctionError("invalid type for comparison")
            }
        default: throw TemplateFunctionError("invalid type for comparison")
        }
    }

    static func htmlEscape(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "&": output += "&amp;"
            case "'": output += "&#39;"
            case "\"": output += "&#34;"
            case "\0": output += "\u{FFFD}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    static func jsEscape(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": output += "\\\\"
            case "'": output += "\\'"
            case "\"": output += "\\\""
            case "<": output += "\\u003C"
            case ">": output += "\\u003E"
            case "&": output += "\\u0026"
            case "=": output += "\\u003D"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default:
                if scalar.value < 0x20 {
                    output += "\\u" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output
    }

    /// `url.QueryEscape`.
    static func queryEscape(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "~")
            {
                output.unicodeScalars.append(UnicodeScalar(byte))
            } else if byte == UInt8(ascii: " ") {
                output += "+"
            } else {
                output += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return output
    }
}

extension TemplateValue {
    /// The value as `fmt` prints an argument with `%v`: like ``printed``, except that a missing
    /// value (passed to a function, it is Go's nil) prints `<nil>`.
    var printedForFormat: String {
        if case .missing = self { return "<nil>" }
        return printed
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }

    /// Every `target` replaced by `replacement`, matching bytes as Go does: `"\n"` matches
    /// inside `"\r\n"`, which Swift's `String` holds as one character.
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        let needle = Array(target.utf8)
        guard !needle.isEmpty else { return self }
        let bytes = Array(utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == needle[0], index + needle.count <= bytes.count,
                bytes[index..<index + needle.count].elementsEqual(needle)
            {
                output += replacement.utf8
                index += needle.count
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// `fmt.Sprintf` for the verbs templates use.
///
/// Threading: stateless.
enum GoFormat {
    struct Spec {
        var minus = false, plus = false, sharp = false, zero = false, space = false
        var width: Int?
        var precision: Int?
        var verb: Character = "v"
    }

    static func sprintf(_ template: String, _ arguments: [TemplateValue]) -> String {
        var output = ""
        var next = 0
        var characters = Substring(template)
        while let character = characters.first {
            characters.removeFirst()
            guard character == "%" else {
                output.append(character)
                continue
            }
            var spec = Spec()
            flags: while let flag = characters.first {
                switch flag {
                case "-": spec.minus = true
                case "+": spec.plus = true
                case "#": spec.sharp = true
                case "0": spec.zero = true
                case " ": spec.space = true
                default: break flags
                }
                characters.removeFirst()
            }
            spec.width = readNumber(&characters, arguments: arguments, next: &next)
            if characters.first == "." {
                characters.removeFirst()
                spec.precision = readNumber(&characters, arguments: arguments, next: &next) ?? 0
            }
            guard let verb = characters.first else {
                output += "%!(NOVERB)"
                break
            }
            characters.removeFirst()
            spec.verb = verb
            if verb == "%" {
                output += "%"
                continue
            }
            guard next < arguments.count else {
                output += "%!\(verb)(MISSING)"
                continue
            }
            output += pad(format(arguments[next], spec), spec)
            next += 1
        }
        if next < arguments.count {
            output += "%!(EXTRA "
            output += arguments[next...].map { "\($0.goTypeName)=\($0.printedForFormat)" }.joined(separator: ", ")
            output += ")"
        }
        return output
    }

    private static func readNumber(_ characters: inout Substring, arguments: [TemplateValue], next: inout Int) -> Int? {
        if characters.first == "*" {
            characters.removeFirst()
            defer { next += 1 }
            if next < arguments.count, case .int(let value) = arguments[next] { return value }
            return nil
        }
        let digits = characters.prefix { $0.isASCII && $0.isNumber }
        characters.removeFirst(digits.count)
        return digits.isEmpty ? nil : Int(digits)
    }

    private static func pad(_ text: String, _ spec: Spec) -> String {
        guard let width = spec.width, text.count < width else { return text }
        let fill = width - text.count
        if spec.minus { return text + String(repeating: " ", count: fill) }
        if spec.zero, "dfFeEgGxXob".contains(spec.verb) {
            if text.hasPrefix("-") || text.hasPrefix("+") {
                return String(text.first!) + String(repeating: "0", count: fill) + text.dropFirst()
            }
            return String(repeating: "0", count: fill) + text
        }
        return String(repeating: " ", count: fill) + text
    }

    private static func bad(_ value: TemplateValue, _ verb: Character) -> String {
        if case .missing = value { return "%!\(verb)(<nil>)" }
        if case .null = value { return "%!\(verb)(<nil>)" }
        return "%!\(verb)(\(value.goTypeName)=\(value.printed))"
    }

    static func format(_ value: TemplateValue, _ spec: Spec) -> String {
        let verb = spec.verb
        if verb == "T" { return value.goTypeName }
        switch value {
        case .list(let items):
            if verb == "s" || verb == "v" || verb == "d" || verb == "q" || verb == "x" || verb == "X"
                || "fFeEgGtoc".contains(verb)
            {
                var inner = spec
                inner.width = nil
                return "[" + items.map { format($0, inner) }.joined(separator: " ") + "]"
            }
            return bad(value, verb)
        case .map(let entries):
            var inner = spec
            inner.width = nil
            return "map["
                + entries.keys.sorted().map { "\(format(.string($0), inner)):\(format(entries[$0]!, inner))" }.joined(
                    separator: " "
                ) + "]"
        default: break
        }
        switch verb {
        case "v":
            switch value {
            case .string(let text) where spec.sharp: return quote(text)
            case .missing, .null: return "<nil>"
            case .int(let number) where spec.plus && number >= 0: return "+" + String(number)
            default: return value.printed
            }
        case "s":
            switch value {
            case .string(let text): return spec.precision.map { String(text.prefix($0)) } ?? text
            case .time(let time): return time.description
            default: return bad(value, verb)
            }
        case "q":
            switch value {
            case .string(let text): return quote(text)
            case .int(let code):
                return "'"
                    + (Unicode.Scalar(UInt32(truncatingIfNeeded: code)).map { String(Character($0)) } ?? "\u{FFFD}")
                    + "'"
            default: return bad(value, verb)
            }
        case "d", "o", "b", "c", "U":
            guard case .int(let number) = value else { return bad(value, verb) }
            switch verb {
            case "d": return (spec.plus && number >= 0 ? "+" : "") + String(number)
            case "o": return (number < 0 ? "-" : "") + (spec.sharp ? "0" : "") + String(number.magnitude, radix: 8)
            case "b": return String(number, radix: 2)
            case "c":
                return Unicode.Scalar(UInt32(truncatingIfNeeded: number)).map { String(Character($0)) } ?? "\u{FFFD}"
            default: return "U+" + String(number, radix: 16, uppercase: true).leftPadded(to: 4)
            }
        case "x", "X":
            let upper = verb == "X"
            switch value {
            case .int(let number):
                return (number < 0 ? "-" : "") + (spec.sharp ? (upper ? "0X" : "0x") : "")
                    + String(number.magnitude, radix: 16, uppercase: upper)
            case .string(let text):
                return text.utf8.map { String($0, radix: 16, uppercase: upper).leftPadded(to: 2) }.joined()
            default: return bad(value, verb)
            }
        case "f", "F", "e", "E", "g", "G":
            guard case .float(let number) = value else { return bad(value, verb) }
            let text = GoFloat.format(number, verb: verb == "F" ? "f" : verb, precision: spec.precision)
            return spec.plus && number >= 0 ? "+" + text : text
        case "t":
            guard case .bool(let flag) = value else { return bad(value, verb) }
            return flag ? "true" : "false"
        default:
            return bad(value, verb)
        }
    }

    /// `strconv.Quote`.
    static func quote(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            default:
                if let escape = TextHelpers.controlEscape(scalar) {
                    output += escape
                } else if scalar.value < 0x20 || scalar.value == 0x7F {
                    output += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output + "\""
    }
}
