extension StringProtocol {
    /// The first range where `part` occurs, its Unicode scalars compared one by one; `nil` when
    /// it doesn't occur (an empty `part` occurs at the start). The search of the string processing
    /// library's `firstRange(of:)`, which kiln doesn't load (see `withoutStringProcessing` in
    /// Package.swift).
    ///
    /// Threading: a value type's method.
    public func firstRange(ofText part: some StringProtocol) -> Range<String.Index>? {
        let scalars = unicodeScalars
        let needle = part.unicodeScalars
        guard let first = needle.first else { return startIndex..<startIndex }
        var from = scalars.startIndex
        while let found = scalars[from...].firstIndex(of: first) {
            var end = found
            var matches = true
            for scalar in needle {
                guard end < scalars.endIndex, scalars[end] == scalar else {
                    matches = false
                    break
                }
                end = scalars.index(after: end)
            }
            if matches { return found..<end }
            from = scalars.index(after: found)
        }
        return nil
    }

    /// Whether `part` occurs in the string (``firstRange(ofText:)``).
    ///
    /// Threading: a value type's method.
    public func containsText(_ part: some StringProtocol) -> Bool { firstRange(ofText: part) != nil }
}

extension StringProtocol {
    /// The string with every occurrence of `part` (``firstRange(ofText:)``, left to right, not
    /// overlapping) replaced by `replacement`; unchanged when `part` is empty.
    ///
    /// Threading: a value type's method.
    public func replacingText(_ part: some StringProtocol, with replacement: some StringProtocol) -> String {
        guard !part.isEmpty else { return String(self) }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(ofText: part) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }

    /// The pieces of the string between occurrences of `separator` (not empty), empty pieces
    /// kept: Go's `strings.Split`.
    ///
    /// Threading: a value type's method.
    public func splitting(atText separator: some StringProtocol) -> [SubSequence] {
        precondition(!separator.isEmpty, "splitting at an empty separator")
        var pieces: [SubSequence] = []
        var rest = self[...]
        while let range = rest.firstRange(ofText: separator) {
            pieces.append(rest[..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        pieces.append(rest)
        return pieces
    }
}
