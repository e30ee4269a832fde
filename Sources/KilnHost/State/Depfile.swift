import KilnPaths

/// Makefile-syntax dependency files, as `cc -MD -MF FILE` writes them:
/// `target: prerequisite prerequisite \` with continuation lines, `\ ` for spaces in names, `$$`
/// for `$`, and (with `-MP`) extra rules `header.h:` with no prerequisites.
///
/// Threading: stateless.
enum Depfile {
    /// Every prerequisite named after a `target:`, once each, in order.
    static func prerequisites(_ text: String) -> [String] {
        var result: [String] = []
        var seen = Set<String>()
        // Continuation lines join their rule.
        let joined = text.replacingText("\\\r\n", with: " ").replacingText("\\\n", with: " ")
        for line in joined.split(whereSeparator: \.isNewline) {
            guard let colon = firstUnescapedColon(line) else { continue }
            for word in words(line[line.index(after: colon)...]) where seen.insert(word).inserted {
                result.append(word)
            }
        }
        return result
    }

    /// The colon ending the targets: not escaped, and not a drive letter's (`C:\`).
    private static func firstUnescapedColon(_ line: Substring) -> Substring.Index? {
        var index = line.startIndex
        var escaped = false
        while index < line.endIndex {
            let character = line[index]
            if character == "\\", !escaped {
                escaped = true
            } else {
                if character == ":", !escaped { return index }
                escaped = false
            }
            index = line.index(after: index)
        }
        return nil
    }

    /// Whitespace-separated words, with `\ ` kept as a space and `$$` as `$`.
    private static func words(_ text: Substring) -> [String] {
        var words: [String] = []
        var current = ""
        var iterator = Array(text)[...]
        while let character = iterator.popFirst() {
            if character == "\\", let next = iterator.first, next == " " || next == "#" {
                current.append(next)
                iterator.removeFirst()
            } else if character == "$", iterator.first == "$" {
                current.append("$")
                iterator.removeFirst()
            } else if character.isWhitespace {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
