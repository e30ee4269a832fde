/// JSON as Go's `encoding/json` writes and reads it for `toJson` and `fromJson`: map keys in
/// order, `<>&` escaped unless raw, numbers read back as floats.
///
/// Threading: stateless.
enum TemplateJSON {
    static let depthLimit = 100

    static func encode(_ value: TemplateValue, escapesHTML: Bool, indent: String?) -> String {
        var output = ""
        write(value, into: &output, escapesHTML: escapesHTML, indent: indent, level: 0)
        return output
    }

    private static func write(
        _ value: TemplateValue,
        into output: inout String,
        escapesHTML: Bool,
        indent: String?,
        level: Int
    ) {
        func newline(_ level: Int) {
            guard let indent else { return }
            output += "\n" + String(repeating: indent, count: level)
        }
        switch value {
        case .missing, .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .int(let number): output += String(number)
        case .float(let number): output += float(number)
        case .string(let text): string(text, into: &output, escapesHTML: escapesHTML)
        case .time(let time):
            string(time.format("2006-01-02T15:04:05.999999999Z07:00"), into: &output, escapesHTML: escapesHTML)
        case .list(let items):
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                newline(level + 1)
                write(item, into: &output, escapesHTML: escapesHTML, indent: indent, level: level + 1)
            }
            newline(level)
            output += "]"
        case .map(let entries):
            guard !entries.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { output += "," }
                newline(level + 1)
                string(key, into: &output, escapesHTML: escapesHTML)
                output += indent == nil ? ":" : ": "
                write(entries[key]!, into: &output, escapesHTML: escapesHTML, indent: indent, level: level + 1)
            }
            newline(level)
            output += "}"
        }
    }

    /// Go's float encoding: shortest digits, fixed notation between 1e-6 and 1e21, else
    /// exponent form without padding (`1e-7`, `1.5e+21`).
    static func float(_ number: Double) -> String {
        guard number.isFinite else { return "null" }
        let (digits, point) = GoFloat.shortest(number)
        let sign = number < 0 ? "-" : ""
        let magnitude = abs(number)
        if magnitude != 0, magnitude < 1e-6 || magnitude >= 1e21 {
            return sign + GoFloat.exponential(digits, point: point, minimumExponentDigits: 1)
        }
        return sign + GoFloat.positional(digits, point: point)
    }

    private static func string(_ text: String, into output: inout String, escapesHTML: Bool) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "<" where escapesHTML, ">" where escapesHTML, "&" where escapesHTML:
                output += "\\u00" + String(scalar.value, radix: 16)
            case "\u{2028}", "\u{2029}":
                output += "\\u" + String(scalar.value, radix: 16)
            default:
                if scalar.value < 0x20 {
                    output += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }

    // MARK: Decoding

    static func decode(_ text: String) throws(TemplateFunctionError) -> TemplateValue {
        var reader = Reader(bytes: Array(text.utf8))
        reader.skipSpaces()
        let value = try reader.value(depth: 0)
        reader.skipSpaces()
        guard reader.index == reader.bytes.count else {
            throw reader.failure("invalid character after top-level value")
        }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        func failure(_ message: String) -> TemplateFunctionError {
            TemplateFunctionError("\(message) (at offset \(index))")
        }

        mutating func skipSpaces() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String, _ value: TemplateValue) throws(TemplateFunctionError) -> TemplateValue {
            let literalBytes = Array(literal.utf8)
            guard index + literalBytes.count <= bytes.count,
                Array(bytes[index..<index + literalBytes.count]) == literalBytes
            else {
                throw failure("invalid character looking for beginning of value")
            }
            index += literalBytes.count
            return value
        }

        mutating func value(depth: Int) throws(TemplateFunctionError) -> TemplateValue {
            guard depth < TemplateJSON.depthLimit else { throw failure("exceeded max depth") }
            guard index < bytes.count else { throw failure("unexpected end of JSON input") }
            switch bytes[index] {
            case UInt8(ascii: "n"): return try expect("null", .null)
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var items: [TemplateValue] = []
                skipSpaces()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .list(items)
                }
                while true {
                    skipSpaces()
                    items.append(try value(depth: depth + 1))
                    skipSpaces()
                    guard index < bytes.count else { throw failure("unexpected end of JSON input") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "]") else {
                        throw failure("invalid character after array element")
                    }
                    index += 1
                    return .list(items)
                }
            case UInt8(ascii: "{"):
                index += 1
                var entries: [String: TemplateValue] = [:]
                skipSpaces()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .map(entries)
                }
                while true {
                    skipSpaces()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                        throw failure("invalid character looking for beginning of object key string")
                    }
                    let key = try string()
                    skipSpaces()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                        throw failure("invalid character after object key")
                    }
                    index += 1
                    skipSpaces()
                    entries[key] = try value(depth: depth + 1)
                    skipSpaces()
                    guard index < bytes.count else { throw failure("unexpected end of JSON input") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    guard bytes[index] == UInt8(ascii: "}") else {
                        throw failure("invalid character after object key:value pair")
                    }
                    index += 1
                    return .map(entries)
                }
            default:
                let start = index
                while index < bytes.count, "+-.0123456789eE".utf8.contains(bytes[index]) { index += 1 }
                guard index > start, let number = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
                    throw failure("invalid character looking for beginning of value")
                }
                return .float(number)
            }
        }

        mutating func string() throws(TemplateFunctionError) -> String {
            index += 1
            var output: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { return String(decoding: output, as: UTF8.self) }
                guard byte == UInt8(ascii: "\\") else {
                    output.append(byte)
                    continue
                }
                guard index < bytes.count else { break }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count,
                        var code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                    else {
                        throw failure("invalid escape")
                    }
                    index += 4
                    // A surrogate pair.
                    if (0xD800..<0xDC00).contains(code), index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u"),
                        let low = UInt32(String(decoding: bytes[index + 2..<index + 6], as: UTF8.self), radix: 16),
                        (0xDC00..<0xE000).contains(low)
                    {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        index += 6
                    }
                    output += Array(String(Character(Unicode.Scalar(code) ?? "\u{FFFD}")).utf8)
                default: output.append(escaped)
                }
            }
            throw failure("unexpected end of JSON input")
        }
    }
}
