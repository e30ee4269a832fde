/// `value` with `digits` decimals (`String(format:)` without Foundation).
///
/// Threading: a pure function; any thread.
public func formatDecimal(_ value: Double, digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((abs(value) * scale).rounded())
    let whole = scaled / Int(scale)
    var fraction = String(scaled % Int(scale))
    fraction = String(repeating: "0", count: max(0, digits - fraction.count)) + fraction
    return (value < 0 && scaled != 0 ? "-" : "") + String(whole) + (digits > 0 ? "." + fraction : "")
}
