#if canImport(Glibc)
    import Glibc
#endif

/// A value a template works with: what Go's `text/template` sees of go-task's variables.
///
/// go-task decodes `vars:` from YAML into Go's `any`: strings, `int`, `float64`, `bool`, `nil`,
/// `[]any` and `map[string]any`. The cases here are those, plus ``missing`` (what a field that
/// isn't there gives: Go's zero `reflect.Value`, printed `<no value>`) and ``time`` (what `now`
/// and `toDate` return).
///
/// Threading: a value type; safe to pass between threads.
public enum TemplateValue: Sendable, Hashable {
    /// A field or key that isn't there. Falsy; printing it is an error in kiln (go-task prints
    /// nothing).
    case missing
    /// Go's `nil`: YAML's `~` or `null`.
    case null
    /// A boolean.
    case bool(Bool)
    /// An integer (Go's `int`, 64 bits here).
    case int(Int)
    /// A floating-point number (Go's `float64`).
    case float(Double)
    /// A string.
    case string(String)
    /// A list (Go's `[]any`).
    case list([TemplateValue])
    /// A map with string keys (Go's `map[string]any`); iterated and printed in key order.
    case map([String: TemplateValue])
    /// A point in time (Go's `time.Time`).
    case time(TemplateTime)

    /// Whether the value counts as true in `if`, `with`, `and`, `or` and `not`: Go's rule —
    /// false, 0, "", nil, and empty lists and maps are false.
    public var isTruthy: Bool {
        switch self {
        case .missing, .null: false
        case .bool(let value): value
        case .int(let value): value != 0
        case .float(let value): value != 0
        case .string(let value): !value.isEmpty
        case .list(let value): !value.isEmpty
        case .map(let value): !value.isEmpty
        case .time: true
        }
    }

    /// Whether sprig's `empty` holds: like ``isTruthy`` negated, except that a time is never empty.
    public var isEmpty: Bool { !isTruthy }

    /// The value as Go's `fmt.Sprint` prints it (`[a b]`, `map[a:1]`, `1e+06`, `<nil>`).
    public var printed: String {
        var output = ""
        print(into: &output)
        return output
    }

    /// Appends ``printed`` to `output`.
    public func print(into output: inout String) {
        switch self {
        case .missing: output += "<no value>"
        case .null: output += "<nil>"
        case .bool(let value): output += value ? "true" : "false"
        case .int(let value): output += String(value)
        case .float(let value): output += GoFloat.format(value, verb: "g", precision: nil)
        case .string(let value): output += value
        case .list(let items):
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += " " }
                item.print(into: &output)
            }
            output += "]"
        case .map(let entries):
            output += "map["
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { output += " " }
                output += key
                output += ":"
                entries[key]!.print(into: &output)
            }
            output += "]"
        case .time(let time): output += time.description
        }
    }

    /// Go's name for the value's type, as `printf "%T"` and `typeOf` print it.
    public var goTypeName: String {
        switch self {
        case .missing, .null: "<nil>"
        case .bool: "bool"
        case .int: "int"
        case .float: "float64"
        case .string: "string"
        case .list: "[]interface {}"
        case .map: "map[string]interface {}"
        case .time: "time.Time"
        }
    }

    /// Go's `reflect.Kind` name, as sprig's `kindOf` prints it.
    public var goKindName: String {
        switch self {
        case .missing, .null: "invalid"
        case .bool: "bool"
        case .int: "int"
        case .float: "float64"
        case .string: "string"
        case .list: "slice"
        case .map: "map"
        case .time: "struct"
        }
    }

    /// The string, if the value is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}

extension TemplateValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A float.
    public init(floatLiteral value: Double) { self = .float(value) }
    /// A list.
    public init(arrayLiteral elements: TemplateValue...) { self = .list(elements) }
    /// A map.
    public init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self = .map(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Go's `strconv.FormatFloat` for the verbs templates use (`%v`, `%g`, `%e`, `%f`).
///
/// Digits come from the C library's correctly rounded conversions (`%.*e`, `%.*f`), which round
/// the exact binary value as Go does; the shortest form comes from Swift's `description`, which
/// like Go prints the fewest digits that read back the same.
///
/// Threading: stateless.
enum GoFloat {
    /// `value` formatted with `verb` (`g`, `e`, `f`, or their upper-case forms) and `precision`
    /// (`nil`: `%v`'s shortest form for `g`, 6 for `e` and `f`).
    static func format(_ value: Double, verb: Character, precision: Int?) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
        let lower = Character(verb.lowercased())
        var text: String
        switch lower {
        case "e": text = cFormat(value, "e", precision ?? 6)
        case "f": text = cFormat(value, "f", precision ?? 6)
        default: text = general(value, precision: precision)
        }
        if verb.isUppercase { text = text.uppercased() }
        return text
    }

    /// `%g`: exponential when the exponent is below -4 or at least the precision (6 for the
    /// shortest form, as Go decides), with no trailing zeros.
    private static func general(_ value: Double, precision: Int?) -> String {
        let (digits, point) = precision.map { significant(value, max($0, 1)) } ?? shortest(value)
        var limit = precision.map { max($0, 1) } ?? 6
        if let precision, max(precision, 1) > digits.count, digits.count >= point { limit = digits.count }
        let exponent = point - 1
        let sign = value.sign == .minus ? "-" : ""
        if exponent < -4 || exponent >= limit {
            return sign + exponential(digits, point: point, minimumExponentDigits: 2)
        }
        return sign + positional(digits, point: point)
    }

    /// `D.DDDDe±X` of digits whose decimal point is at `point`, the exponent padded with zeros to
    /// `minimumExponentDigits` (2 for `%g`, as in C; none in Go's JSON).
    static func exponential(_ digits: [UInt8], point: Int, minimumExponentDigits: Int) -> String {
        var text = String(UnicodeScalar(digits[0]))
        if digits.count > 1 { text += "." + String(decoding: digits.dropFirst(), as: UTF8.self) }
        let exponent = point - 1
        let magnitude = String(abs(exponent))
        return text + (exponent < 0 ? "e-" : "e+")
            + String(repeating: "0", count: max(0, minimumExponentDigits - magnitude.count))
            + magnitude
    }

    /// `DDD.DDD` of digits whose decimal point is at `point` (`0.000DD`, `DD000`).
    static func positional(_ digits: [UInt8], point: Int) -> String {
        if point <= 0 { return "0." + String(repeating: "0", count: -point) + String(decoding: digits, as: UTF8.self) }
        if point >= digits.count {
            return String(decoding: digits, as: UTF8.self) + String(repeating: "0", count: point - digits.count)
        }
        return String(decoding: digits[..<point], as: UTF8.self) + "."
            + String(decoding: digits[point...], as: UTF8.self)
    }

    /// The fewest digits that read back as `value`, and the decimal point's position
    /// (`value = 0.DIGITS × 10^point`), without trailing zeros.
    static func shortest(_ value: Double) -> ([UInt8], Int) {
        if value == 0 { return ([0x30], 1) }
        let text = abs(value).description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...]) ?? 0
        }
        return digitsAndPoint(mantissa, exponent: exponent)
    }

    /// `count` significant digits of `value`, correctly rounded, without trailing zeros.
    private static func significant(_ value: Double, _ count: Int) -> ([UInt8], Int) {
        if value == 0 { return ([0x30], 1) }
        let text = cFormat(abs(value), "e", count - 1)
        guard let e = text.firstIndex(of: "e") else { return shortest(value) }
        return digitsAndPoint(text[..<e], exponent: Int(text[text.index(after: e)...]) ?? 0)
    }

    private static func digitsAndPoint(_ mantissa: Substring, exponent: Int) -> ([UInt8], Int) {
        var digits: [UInt8] = []
        var point = -1
        for byte in mantissa.utf8 {
            if byte == UInt8(ascii: ".") {
                point = digits.count
            } else if byte >= 0x30, byte <= 0x39 {
                digits.append(byte)
            }
        }
        if point < 0 { point = digits.count }
        var leading = 0
        while leading < digits.count - 1, digits[leading] == 0x30 { leading += 1 }
        digits.removeFirst(leading)
        point -= leading
        while digits.count > 1, digits.last == 0x30 { digits.removeLast() }
        return (digits, point + exponent)
    }

    /// The C library's `%.PRECISIONe` or `%.PRECISIONf`.
    private static func cFormat(_ value: Double, _ verb: String, _ precision: Int) -> String {
        let precision = min(max(precision, 0), 1000)
        var buffer = [CChar](repeating: 0, count: 1400)
        _ = withVaList([value]) { arguments in
            vsnprintf(&buffer, buffer.count, "%.\(precision)\(verb)", arguments)
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
