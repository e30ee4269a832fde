/// A length of time written as Go writes one (`time.ParseDuration`): `500ms`, `30s`, `1h30m`,
/// `1.5m`, `2us` — decimal numbers, each with a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`). It is
/// go-task's syntax for `timeout:`.
///
/// Threading: a value type; safe to pass between threads.
public struct GoDuration: Sendable, Hashable, CustomStringConvertible {
    /// The length in seconds.
    public var seconds: Double
    /// As it is written (what messages show: `command timeout exceeded (500ms)`).
    public var description: String

    /// Reads `text`; `nil` when it isn't a duration as Go reads one. A sign is allowed (`-5m`);
    /// whether the length may be zero or negative is the caller's to say.
    public init?(_ text: String) {
        var rest = Substring(text)
        var negative = false
        if let sign = rest.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            rest = rest.dropFirst()
        }
        // Go's special case: a bare 0 needs no unit.
        if rest == "0" {
            self.seconds = 0
            self.description = text
            return
        }
        guard !rest.isEmpty else { return nil }
        var total = 0.0
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            // A number: digits with at most one point, and at least one digit.
            guard digits.contains(where: \.isNumber), digits.filter({ $0 == "." }).count <= 1,
                let value = Double(digits.hasPrefix(".") ? "0" + digits : String(digits))
            else { return nil }
            rest = rest.dropFirst(digits.count)
            let unitText = rest.prefix { !($0.isASCII && ($0.isNumber || $0 == ".")) }
            guard let unit = Self.units[String(unitText)] else { return nil }
            rest = rest.dropFirst(unitText.count)
            total += value * unit
        }
        // Go's limit: what 63 bits of nanoseconds hold (about 292 years).
        guard total <= 9_223_372_036 else { return nil }
        self.seconds = negative ? -total : total
        self.description = text
    }

    /// Seconds per unit.
    private static let units: [String: Double] = [
        "ns": 1e-9, "us": 1e-6, "\u{00B5}s": 1e-6, "\u{03BC}s": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600,
    ]
}
