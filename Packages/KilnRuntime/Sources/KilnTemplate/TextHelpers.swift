/// Small text rules more than one part of kiln needs: the closest name for "did you mean", the
/// name after a `$`, and C-style escapes.
///
/// Threading: stateless.
public enum TextHelpers {
    /// The candidate closest to `name` — by edit distance, where swapping two neighbouring
    /// letters counts as one edit (`biuld` → `build`) — if it is close enough to be a likely typo
    /// (at most a third of the name, and at least one edit). With `ignoringCase`, a candidate that
    /// differs only in case wins outright.
    public static func closest(to name: String, among candidates: some Sequence<String>, ignoringCase: Bool = false)
        -> String?
    {
        let target = Array(ignoringCase ? name.lowercased() : name)
        var best: (String, Int)?
        for candidate in candidates {
            let compared = Array(ignoringCase ? candidate.lowercased() : candidate)
            if ignoringCase, compared == target { return candidate }
            // The lengths' difference is a lower bound of the distance: most candidates end here.
            let bound = min(max(1, target.count / 3), (best?.1 ?? .max) - 1)
            guard abs(compared.count - target.count) <= bound else { continue }
            let distance = editDistance(target, compared)
            if distance <= bound { best = (candidate, distance) }
        }
        return best?.0
    }

    /// Optimal string alignment distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }

    /// The variable name `rest` starts with, right after a `$`: `{NAME}` (to its brace) or a run
    /// of letters, digits and `_`; `rest` moves past it. `nil`, with `rest` unchanged, when there
    /// is none.
    public static func dollarName(_ rest: inout Substring) -> Substring? {
        if rest.first == "{", let close = rest.firstIndex(of: "}") {
            let name = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
            return name
        }
        let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
        guard !name.isEmpty else { return nil }
        rest = rest.dropFirst(name.count)
        return name
    }

    /// `\n`, `\t`, `\r`, `\a`, `\b`, `\f`, `\v` for those control characters; `nil` for others.
    static func controlEscape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\n": "\\n"
        case "\t": "\\t"
        case "\r": "\\r"
        case "\u{07}": "\\a"
        case "\u{08}": "\\b"
        case "\u{0C}": "\\f"
        case "\u{0B}": "\\v"
        default: nil
        }
    }
}
