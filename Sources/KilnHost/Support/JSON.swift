/// A JSON value and its serialization — enough for `--json`, `--trace` and `kiln graph`, without
/// Foundation. Object keys keep the order they were given.
///
/// Threading: a value type; safe to pass between threads.
public enum JSONValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral
{
    case string(String)
    case integer(Int)
    case number(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([(String, JSONValue)])
    case null

    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .integer(value) }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    /// The value as JSON text; `pretty` indents by two spaces.
    public func serialized(pretty: Bool = false) -> String {
        var output = ""
        write(into: &output, pretty: pretty, indent: 0)
        return output
    }

    private func write(into output: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .string(let text): Self.writeString(text, into: &output)
        case .integer(let value): output += String(value)
        case .number(let value): output += value.isFinite ? Self.format(value) : "null"
        case .bool(let value): output += value ? "true" : "false"
        case .null: output += "null"
        case .array(let items):
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                if pretty { output += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(into: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { output += "\n" + String(repeating: "  ", count: indent) }
            output += "]"
        case .object(let entries):
            guard !entries.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            for (index, (key, value)) in entries.enumerated() {
                if index > 0 { output += "," }
                if pretty { output += "\n" + String(repeating: "  ", count: indent + 1) }
                Self.writeString(key, into: &output)
                output += pretty ? ": " : ":"
                value.write(into: &output, pretty: pretty, indent: indent + 1)
            }
            if pretty { output += "\n" + String(repeating: "  ", count: indent) }
            output += "}"
        }
    }

    private static func writeString(_ text: String, into output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// A double with up to six decimals, no exponent (for times in seconds).
    static func format(_ value: Double) -> String {
        let rounded = (value * 1_000_000).rounded() / 1_000_000
        if rounded == rounded.rounded() { return String(Int(rounded)) }
        return String(rounded)
    }
}
