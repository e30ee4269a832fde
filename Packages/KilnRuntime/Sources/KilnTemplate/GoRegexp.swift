/// Go's regular expressions (package `regexp`, RE2 syntax), for the template functions
/// `regexMatch`, `regexFind`, `regexFindAll`, `regexReplaceAll`, `regexSplit` and their `must`
/// forms: what go-task's templates accept, matched as Go matches.
///
/// - **Syntax**: literals and escapes (`\n`, `\x7F`, `\x{10FFFF}`, `\123`, `\Q…\E`, escaped
///   punctuation); `.`; classes `[a-z]`, `[^…]`, `[[:alpha:]]`, `\d \s \w` and their negations,
///   `\pL`, `\p{Lu}` (Unicode general categories); `^ $ \A \z \b \B`; groups `(…)`,
///   `(?P<name>…)`, `(?<name>…)`, `(?:…)`; flags `(?imsU)`, `(?i:…)`; `* + ? {n} {n,} {n,m}`, each
///   lazy with `?` (counts up to 1000); `|`.
/// - **Refused as Go refuses them**: backreferences, lookaround, possessive and nested
///   repetition (`a**`), a repetition with nothing to repeat, unbalanced parentheses, bad ranges.
///   Also refused, where Go would accept: Unicode scripts (`\p{Greek}`), which kiln can't name.
/// - **Matching**: leftmost-first, as Go's; on Unicode scalars (Go's runes), not grapheme
///   clusters; `$` is the end of the text (of a line with `m`), never before a final newline; `\b`
///   and `\w` are ASCII, as in Go. Time is linear in the text times the pattern: each state of the
///   program at each position is tried at most once (RE2's bit-state backtracker), so no pattern
///   makes a render hang.
///
/// Threading: a value type; safe to share between threads.
struct GoRegexp: Sendable {
    /// What the pattern can't be: Go's wording (`missing closing )`) and the part it refers to.
    struct SyntaxError: Error, Sendable, CustomStringConvertible {
        var code: String
        var part: String
        var description: String { "\(code): `\(part)`" }
    }

    /// Capture positions of a match, in Unicode scalars of the text: `2k` and `2k+1` are group
    /// `k`'s start and end (group 0 is the whole match), `nil` for a group that didn't take part.
    typealias Match = [Int?]

    /// The most instructions a pattern may compile to (Go refuses what is larger still; kiln's
    /// limit keeps a program and its search's memory small).
    static let instructionLimit = 100_000
    /// The most states (instructions times positions in the text) one search may track: a bit each,
    /// 32 MB at most. A larger text with that pattern fails the template rather than the machine.
    static let stateLimit = 256 << 20

    fileprivate let program: [Instruction]
    /// How many groups, the whole match included.
    let groupCount: Int
    /// Group names by number (`nil`: unnamed).
    let groupNames: [String?]

    /// Compiles `pattern`.
    ///
    /// - Throws: ``SyntaxError`` where Go's `regexp.Compile` fails, and for Unicode scripts.
    init(_ pattern: String) throws(SyntaxError) {
        var parser = Parser(Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        // Counted repetitions multiply (`(a{1000}){1000}`): a program past the limit is refused
        // before it is built, as Go refuses an expression too large.
        guard Compiler.size(of: tree) <= Self.instructionLimit else {
            throw SyntaxError(code: "expression too large", part: pattern)
        }
        var compiler = Compiler()
        compiler.emit(.save(0))
        compiler.compile(tree)
        compiler.emit(.save(1))
        compiler.emit(.match)
        program = compiler.program
        groupCount = parser.groupNames.count + 1
        groupNames = [nil] + parser.groupNames
    }

    /// The leftmost-first match in `text` that starts at `start` or after; `nil` when none does.
    /// Assertions (`^`, `\b`) see the whole text.
    func firstMatch(in text: [Unicode.Scalar], from start: Int = 0) throws(TemplateFunctionError) -> Match? {
        var machine = try machine(for: text)
        return machine.search(from: start)
    }

    /// Go's `FindAllIndex` with `n` (`n < 0`: all): the successive non-overlapping matches, where
    /// an empty match right after the previous match doesn't count.
    func allMatches(in text: [Unicode.Scalar], limit: Int = -1) throws(TemplateFunctionError) -> [Match] {
        var machine = try machine(for: text)
        var matches: [Match] = []
        var position = 0
        var previousEnd = -1
        while limit < 0 || matches.count < limit, position <= text.count,
            let match = machine.search(from: position), let start = match[0], let end = match[1]
        {
            var accept = true
            if end == position {
                // An empty match: step over one scalar, and none right after the last match.
                if start == previousEnd { accept = false }
                position += 1
            } else {
                position = end
            }
            previousEnd = end
            if accept { matches.append(match) }
        }
        return matches
    }

    /// Go's `ReplaceAllString` (`expand`: `$1`, `${name}`) and `ReplaceAllLiteralString`:
    /// `text` with every match replaced by what `replacement` gives for it.
    func replacingAll(
        in text: [Unicode.Scalar],
        with replacement: (Match) -> String
    ) throws(TemplateFunctionError) -> String {
        var machine = try machine(for: text)
        var output = String.UnicodeScalarView()
        var lastEnd = 0
        var position = 0
        while position <= text.count, let match = machine.search(from: position),
            let start = match[0], let end = match[1]
        {
            output.append(contentsOf: text[lastEnd..<start])
            // No replacement for an empty match right after another (else patterns that match
            // both empty and not would replace twice).
            if end > lastEnd || start == 0 { output.append(contentsOf: replacement(match).unicodeScalars) }
            lastEnd = end
            position = position + 1 > end ? position + 1 : end
        }
        if lastEnd < text.count { output.append(contentsOf: text[lastEnd...]) }
        return String(output)
    }

    /// A search of `text`; refused when its states wouldn't fit in ``stateLimit``.
    private func machine(for text: [Unicode.Scalar]) throws(TemplateFunctionError) -> Backtracker {
        let (states, overflow) = program.count.multipliedReportingOverflow(by: text.count + 1)
        guard !overflow, states <= Self.stateLimit else {
            throw TemplateFunctionError(
                "regexp: a text of \(text.count) characters is too long for this pattern (\(program.count) steps): kiln's regular expressions search at most \(Self.stateLimit) steps × characters"
            )
        }
        return Backtracker(program: program, text: text, slotCount: 2 * groupCount)
    }

    /// The text of group `group` of `match` (`nil`: it took no part).
    static func group(_ group: Int, of match: Match, in text: [Unicode.Scalar]) -> String? {
        guard 2 * group + 1 < match.count, let start = match[2 * group], let end = match[2 * group + 1] else {
            return nil
        }
        return String(String.UnicodeScalarView(text[start..<end]))
    }
}

// MARK: - The tree

private indirect enum Node {
    case empty
    case literal(Unicode.Scalar, foldsCase: Bool)
    case characterClass(CharacterClass)
    case anyCharacter(matchesNewline: Bool)
    case assertion(Assertion)
    case capture(Int, Node)
    case concatenation([Node])
    case alternation([Node])
    case repetition(Node, minimum: Int, maximum: Int?, greedy: Bool)
}

private enum Assertion {
    case beginText, endText, beginLine, endLine, wordBoundary, notWordBoundary
}

/// A set of scalars: ranges and general categories, items that take what a set leaves out (`\D`,
/// `\PL`, `[:^alpha:]` inside a class), maybe negated, maybe compared without case.
///
/// Compared without case as Go builds its classes: a scalar is in an item when any letter of its
/// case orbit is, and in an excluding item when none is (`(?i)[\P{Lu}]` leaves out `a` too).
private struct CharacterClass {
    /// A set an item of the class leaves out.
    struct Excluded {
        var ranges: [ClosedRange<UInt32>]
        var categories: [Unicode.GeneralCategory]
    }

    var ranges: [ClosedRange<UInt32>] = []
    var categories: [Unicode.GeneralCategory] = []
    var excluded: [Excluded] = []
    var negated = false
    var foldsCase = false

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        if Self.contains(scalar, ranges, categories) { return !negated }
        guard foldsCase else {
            return excluded.contains { !Self.contains(scalar, $0.ranges, $0.categories) } != negated
        }
        let orbit = GoRegexp.caseOrbit(of: scalar)
        let found =
            orbit.contains { $0 != scalar && Self.contains($0, ranges, categories) }
            || excluded.contains { set in !orbit.contains { Self.contains($0, set.ranges, set.categories) } }
        return found != negated
    }

    private static func contains(
        _ scalar: Unicode.Scalar,
        _ ranges: [ClosedRange<UInt32>],
        _ categories: [Unicode.GeneralCategory]
    ) -> Bool {
        let value = scalar.value
        if ranges.contains(where: { $0.contains(value) }) { return true }
        return !categories.isEmpty && categories.contains(scalar.properties.generalCategory)
    }

    /// Adds `other`'s members (a class inside a class: `[\d\s]`, `[^\D]`, `[\PLx]`).
    mutating func add(_ other: CharacterClass) {
        if other.negated {
            // A negated item is one set (`\D`, `\PL`, `[:^alpha:]`): what it leaves out.
            excluded.append(Excluded(ranges: other.ranges, categories: other.categories))
        } else {
            ranges += other.ranges
            categories += other.categories
            excluded += other.excluded
        }
    }
}

// MARK: - Parsing

private struct Parser {
    struct Flags {
        var foldsCase = false
        var multiLine = false
        var dotMatchesNewline = false
        var ungreedy = false
    }

    /// `\A \z \b \B`.
    static let escapedAssertions: [Unicode.Scalar: Assertion] = [
        "A": .beginText, "z": .endText, "b": .wordBoundary, "B": .notWordBoundary,
    ]

    let pattern: [Unicode.Scalar]
    var position = 0
    var flags = Flags()
    var groupNames: [String?] = []
    /// The literals of a `\Q…\E` before its last: a repetition after the quote takes only the
    /// last (`\Qab\E*` is `ab*`, as in Go), so the rest go into the sequence before it.
    var quotedPrefix: [Node] = []

    init(_ pattern: [Unicode.Scalar]) { self.pattern = pattern }

    var atEnd: Bool { position >= pattern.count }
    var peek: Unicode.Scalar? { atEnd ? nil : pattern[position] }

    func text(from start: Int, to end: Int? = nil) -> String {
        String(String.UnicodeScalarView(pattern[start..<min(end ?? pattern.count, pattern.count)]))
    }

    mutating func parse() throws(GoRegexp.SyntaxError) -> Node {
        let node = try parseAlternation(depth: 0)
        if !atEnd {
            // Only a `)` stops an alternation early.
            throw GoRegexp.SyntaxError(code: "unexpected )", part: text(from: 0))
        }
        return node
    }

    mutating func parseAlternation(depth: Int) throws(GoRegexp.SyntaxError) -> Node {
        guard depth <= 1000 else {
            throw GoRegexp.SyntaxError(code: "expression nests too deeply", part: text(from: 0))
        }
        var branches = [try parseConcatenation(depth: depth)]
        while peek == "|" {
            position += 1
            branches.append(try parseConcatenation(depth: depth))
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    mutating func parseConcatenation(depth: Int) throws(GoRegexp.SyntaxError) -> Node {
        var items: [Node] = []
        while let scalar = peek, scalar != "|", scalar != ")" {
            guard let atom = try parseAtom(depth: depth) else {
                // A flag group or an empty quote doesn't stand between an item and its repetition:
                // `a(?i)*` and `a\Q\E*` are `a*` in Go.
                if let last = items.last, let next = peek, next == "*" || next == "+" || next == "?" || next == "{" {
                    items[items.count - 1] = try parseRepetitions(of: last)
                }
                continue
            }
            items += quotedPrefix
            quotedPrefix = []
            items.append(try parseRepetitions(of: atom))
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concatenation(items)
        }
    }

    /// The repetition operator after an atom, if any (one at most: Go refuses `a**`).
    mutating func parseRepetitions(of atom: Node) throws(GoRegexp.SyntaxError) -> Node {
        var node = atom
        var previousOperator: Int?
        while let scalar = peek {
            let operatorStart = position
            var bounds: (Int, Int?)
            switch scalar {
            case "*": bounds = (0, nil)
            case "+": bounds = (1, nil)
            case "?": bounds = (0, 1)
            case "{":
                guard let counted = try parseCount() else { return node }
                bounds = counted
            default: return node
            }
            if scalar != "{" { position += 1 }
            var greedy = true
            if peek == "?" {
                position += 1
                greedy = false
            }
            if flags.ungreedy { greedy.toggle() }
            if let previousOperator {
                throw GoRegexp.SyntaxError(
                    code: "invalid nested repetition operator",
                    part: text(from: previousOperator, to: position)
                )
            }
            previousOperator = operatorStart
            node = .repetition(node, minimum: bounds.0, maximum: bounds.1, greedy: greedy)
        }
        return node
    }

    /// `{n}`, `{n,}`, `{n,m}` at the position (consumed), or `nil` when the `{` is a literal.
    mutating func parseCount() throws(GoRegexp.SyntaxError) -> (Int, Int?)? {
        let start = position
        var index = position + 1
        func number() -> Int? {
            let first = index
            var value = 0
            while index < pattern.count, ("0"..."9").contains(pattern[index]) {
                value = min(value * 10 + Int(pattern[index].value - 0x30), 100_000)
                index += 1
            }
            return index > first ? value : nil
        }
        guard let minimum = number() else { return nil }
        var maximum: Int? = minimum
        if index < pattern.count, pattern[index] == "," {
            index += 1
            if index < pattern.count, pattern[index] == "}" {
                maximum = nil
            } else {
                guard let bound = number() else { return nil }
                maximum = bound
            }
        }
        guard index < pattern.count, pattern[index] == "}" else { return nil }
        index += 1
        position = index
        if minimum > 1000 || (maximum ?? 0) > 1000 || (maximum.map { $0 < minimum } ?? false) {
            throw GoRegexp.SyntaxError(code: "invalid repeat count", part: text(from: start, to: index))
        }
        return (minimum, maximum)
    }

    /// One atom; `nil` for what matches nothing but changes the flags (`(?i)`) or is empty
    /// (`\Q\E`).
    mutating func parseAtom(depth: Int) throws(GoRegexp.SyntaxError) -> Node? {
        let start = position
        let scalar = pattern[position]
        position += 1
        switch scalar {
        case "*", "+", "?":
            throw GoRegexp.SyntaxError(code: "missing argument to repetition operator", part: String(scalar))
        case "{":
            // A count with nothing before it is an error; a `{` that starts no count, a literal.
            position = start
            let isCount: Bool
            do { isCount = try parseCount() != nil } catch { isCount = true }
            guard !isCount else {
                throw GoRegexp.SyntaxError(
                    code: "missing argument to repetition operator",
                    part: text(from: start, to: position)
                )
            }
            position = start + 1
            return .literal("{", foldsCase: false)
        case ".":
            return .anyCharacter(matchesNewline: flags.dotMatchesNewline)
        case "^":
            return .assertion(flags.multiLine ? .beginLine : .beginText)
        case "$":
            return .assertion(flags.multiLine ? .endLine : .endText)
        case "(":
            return try parseGroup(startingAt: start, depth: depth)
        case "[":
            return .characterClass(try parseClass(startingAt: start))
        case "\\":
            return try parseEscape(startingAt: start)
        default:
            return literal(scalar)
        }
    }

    func literal(_ scalar: Unicode.Scalar) -> Node {
        .literal(scalar, foldsCase: flags.foldsCase)
    }

    mutating func parseGroup(startingAt start: Int, depth: Int) throws(GoRegexp.SyntaxError) -> Node? {
        var name: String?
        if peek == "?" {
            position += 1
            if peek == "P" || peek == "<" {
                if peek == "P" { position += 1 }
                guard peek == "<" else {
                    throw GoRegexp.SyntaxError(
                        code: "invalid or unsupported Perl syntax",
                        part: text(from: start, to: position + 1)
                    )
                }
                position += 1
                let nameStart = position
                while let scalar = peek, scalar != ">" { position += 1 }
                guard peek == ">" else {
                    throw GoRegexp.SyntaxError(code: "invalid named capture", part: text(from: start))
                }
                let candidate = text(from: nameStart, to: position)
                position += 1
                guard !candidate.isEmpty,
                    candidate.unicodeScalars.allSatisfy({
                        $0 == "_" || ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0)
                    })
                else {
                    throw GoRegexp.SyntaxError(code: "invalid named capture", part: text(from: start, to: position))
                }
                name = candidate
            } else {
                // Flags: `(?i)`, `(?i-s:…)`, `(?:…)`.
                var new = flags
                var clearing = false
                var sawFlag = false
                while true {
                    guard let scalar = peek else {
                        throw GoRegexp.SyntaxError(code: "missing closing )", part: text(from: 0))
                    }
                    position += 1
                    switch scalar {
                    case "i": new.foldsCase = !clearing
                    case "m": new.multiLine = !clearing
                    case "s": new.dotMatchesNewline = !clearing
                    case "U": new.ungreedy = !clearing
                    case "-" where !clearing:
                        clearing = true
                        continue
                    case ")" where !(clearing && !sawFlag):
                        flags = new
                        return nil
                    case ":" where !(clearing && !sawFlag):
                        let saved = flags
                        flags = new
                        let inner = try parseAlternation(depth: depth + 1)
                        flags = saved
                        guard peek == ")" else {
                            throw GoRegexp.SyntaxError(code: "missing closing )", part: text(from: 0))
                        }
                        position += 1
                        return inner
                    default:
                        throw GoRegexp.SyntaxError(
                            code: "invalid or unsupported Perl syntax",
                            part: text(from: start, to: position)
                        )
                    }
                    sawFlag = true
                }
            }
        }
        // Every group that reaches here captures (`(?:…)` returned above).
        groupNames.append(name)
        let index = groupNames.count
        // Flags set inside by `(?i)` last to the group's end.
        let saved = flags
        let inner = try parseAlternation(depth: depth + 1)
        flags = saved
        guard peek == ")" else {
            throw GoRegexp.SyntaxError(code: "missing closing )", part: text(from: 0))
        }
        position += 1
        return .capture(index, inner)
    }

    mutating func parseEscape(startingAt start: Int) throws(GoRegexp.SyntaxError) -> Node? {
        guard let scalar = peek else {
            throw GoRegexp.SyntaxError(code: "trailing backslash at end of expression", part: "")
        }
        if let assertion = Self.escapedAssertions[scalar] {
            position += 1
            return .assertion(assertion)
        }
        switch scalar {
        case "Q":
            position += 1
            var items: [Node] = []
            while !atEnd {
                if pattern[position] == "\\", position + 1 < pattern.count, pattern[position + 1] == "E" {
                    position += 2
                    break
                }
                items.append(literal(pattern[position]))
                position += 1
            }
            guard let last = items.popLast() else { return nil }
            quotedPrefix = items
            return last
        default:
            if let perl = try parseClassEscape(startingAt: start) {
                return .characterClass(perl)
            }
            return literal(try parseLiteralEscape(startingAt: start))
        }
    }

    /// `\d \D \s \S \w \W \pL \p{Lu} \PL` at the position (after the backslash), consumed; `nil`
    /// when it is none of them.
    mutating func parseClassEscape(startingAt start: Int) throws(GoRegexp.SyntaxError) -> CharacterClass? {
        guard let scalar = peek else { return nil }
        var result = CharacterClass()
        // Go folds each item of a class when it is built: `(?i)\W` leaves out the Kelvin sign too.
        result.foldsCase = flags.foldsCase
        switch scalar {
        case "d", "D": result.ranges = [0x30...0x39]
        case "s", "S": result.ranges = [0x09...0x0A, 0x0C...0x0D, 0x20...0x20]
        case "w", "W": result.ranges = [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A]
        case "p", "P":
            position += 1
            var name: String
            if peek == "{" {
                guard let close = pattern[position...].firstIndex(of: "}") else {
                    throw GoRegexp.SyntaxError(code: "invalid character class range", part: text(from: start))
                }
                name = text(from: position + 1, to: close)
                position = close + 1
            } else {
                guard let letter = peek else {
                    throw GoRegexp.SyntaxError(code: "invalid character class range", part: text(from: start))
                }
                name = String(letter)
                position += 1
            }
            var negated = scalar == "P"
            if name.hasPrefix("^") {
                negated.toggle()
                name.removeFirst()
            }
            guard let categories = Self.categories[name] else {
                throw GoRegexp.SyntaxError(
                    code: name == "Any" || name.count > 2
                        ? "invalid character class range (kiln's regular expressions know Unicode's general categories, not its scripts)"
                        : "invalid character class range",
                    part: text(from: start, to: position)
                )
            }
            result.categories = categories
            result.negated = negated
            return result
        default: return nil
        }
        position += 1
        result.negated = scalar.properties.isUppercase
        return result
    }

    /// An escaped literal (after the backslash), consumed.
    mutating func parseLiteralEscape(startingAt start: Int) throws(GoRegexp.SyntaxError) -> Unicode.Scalar {
        let scalar = pattern[position]
        position += 1
        switch scalar {
        case "a": return "\u{07}"
        case "f": return "\u{0C}"
        case "t": return "\t"
        case "n": return "\n"
        case "r": return "\r"
        case "v": return "\u{0B}"
        case "0"..."7":
            // Octal: `\0` and up to three digits; `\1`–`\7` alone would be backreferences.
            guard scalar == "0" || (position < pattern.count && ("0"..."7").contains(pattern[position])) else {
                throw GoRegexp.SyntaxError(code: "invalid escape sequence", part: text(from: start, to: position))
            }
            var value = scalar.value - 0x30
            var digits = 1
            while digits < 3, position < pattern.count, ("0"..."7").contains(pattern[position]) {
                value = value * 8 + pattern[position].value - 0x30
                position += 1
                digits += 1
            }
            return Unicode.Scalar(value)!
        case "x":
            var digits: String
            if peek == "{" {
                guard let close = pattern[position...].firstIndex(of: "}") else {
                    throw GoRegexp.SyntaxError(code: "invalid escape sequence", part: text(from: start))
                }
                digits = text(from: position + 1, to: close)
                position = close + 1
            } else {
                digits = text(from: position, to: position + 2)
                position += 2
            }
            guard !digits.isEmpty, digits.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit }),
                let value = UInt32(digits, radix: 16), let result = Unicode.Scalar(value), value <= 0x10FFFF
            else {
                throw GoRegexp.SyntaxError(code: "invalid escape sequence", part: text(from: start, to: position))
            }
            return result
        default:
            // Punctuation escapes itself; a letter or digit that means nothing is an error.
            guard scalar.isASCII, !scalar.properties.isAlphabetic, !("0"..."9").contains(scalar) else {
                throw GoRegexp.SyntaxError(code: "invalid escape sequence", part: text(from: start, to: position))
            }
            return scalar
        }
    }

    mutating func parseClass(startingAt start: Int) throws(GoRegexp.SyntaxError) -> CharacterClass {
        var result = CharacterClass()
        result.foldsCase = flags.foldsCase
        if peek == "^" {
            result.negated = true
            position += 1
        }
        var first = true
        while true {
            guard let scalar = peek else {
                throw GoRegexp.SyntaxError(code: "missing closing ]", part: text(from: start))
            }
            if scalar == "]", !first { break }
            first = false
            let itemStart = position
            // `[:alpha:]`
            if scalar == "[", position + 1 < pattern.count, pattern[position + 1] == ":" {
                if let close = (position + 2..<max(position + 2, pattern.count - 1)).first(where: {
                    pattern[$0] == ":" && pattern[$0 + 1] == "]"
                }) {
                    var name = text(from: position + 2, to: close)
                    let negated = name.hasPrefix("^")
                    if negated { name.removeFirst() }
                    guard let ranges = Self.asciiClasses[name] else {
                        throw GoRegexp.SyntaxError(
                            code: "invalid character class range",
                            part: text(from: position, to: close + 2)
                        )
                    }
                    position = close + 2
                    result.add(CharacterClass(ranges: ranges, negated: negated))
                    continue
                }
            }
            var low: Unicode.Scalar
            if scalar == "\\" {
                position += 1
                guard !atEnd else { throw GoRegexp.SyntaxError(code: "missing closing ]", part: text(from: start)) }
                if let perl = try parseClassEscape(startingAt: itemStart) {
                    result.add(perl)
                    continue
                }
                low = try parseLiteralEscape(startingAt: itemStart)
            } else {
                low = scalar
                position += 1
            }
            var high = low
            if peek == "-", position + 1 < pattern.count, pattern[position + 1] != "]" {
                position += 1
                if pattern[position] == "\\" {
                    position += 1
                    guard !atEnd else { throw GoRegexp.SyntaxError(code: "missing closing ]", part: text(from: start)) }
                    high = try parseLiteralEscape(startingAt: position - 1)
                } else {
                    high = pattern[position]
                    position += 1
                }
                guard high.value >= low.value else {
                    throw GoRegexp.SyntaxError(
                        code: "invalid character class range",
                        part: text(from: itemStart, to: position)
                    )
                }
            }
            result.ranges.append(low.value...high.value)
        }
        position += 1
        return result
    }

    static let asciiClasses: [String: [ClosedRange<UInt32>]] = [
        "alnum": [0x30...0x39, 0x41...0x5A, 0x61...0x7A],
        "alpha": [0x41...0x5A, 0x61...0x7A],
        "ascii": [0x00...0x7F],
        "blank": [0x09...0x09, 0x20...0x20],
        "cntrl": [0x00...0x1F, 0x7F...0x7F],
        "digit": [0x30...0x39],
        "graph": [0x21...0x7E],
        "lower": [0x61...0x7A],
        "print": [0x20...0x7E],
        "punct": [0x21...0x2F, 0x3A...0x40, 0x5B...0x60, 0x7B...0x7E],
        "space": [0x09...0x0D, 0x20...0x20],
        "upper": [0x41...0x5A],
        "word": [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A],
        "xdigit": [0x30...0x39, 0x41...0x46, 0x61...0x66],
    ]

    /// Unicode's general categories by Go's names: one letter for a group, two for one.
    static let categories: [String: [Unicode.GeneralCategory]] = {
        let named: [(String, Unicode.GeneralCategory)] = [
            ("Lu", .uppercaseLetter), ("Ll", .lowercaseLetter), ("Lt", .titlecaseLetter), ("Lm", .modifierLetter),
            ("Lo", .otherLetter), ("Mn", .nonspacingMark), ("Mc", .spacingMark), ("Me", .enclosingMark),
            ("Nd", .decimalNumber), ("Nl", .letterNumber), ("No", .otherNumber), ("Pc", .connectorPunctuation),
            ("Pd", .dashPunctuation), ("Ps", .openPunctuation), ("Pe", .closePunctuation),
            ("Pi", .initialPunctuation), ("Pf", .finalPunctuation), ("Po", .otherPunctuation),
            ("Sm", .mathSymbol), ("Sc", .currencySymbol), ("Sk", .modifierSymbol), ("So", .otherSymbol),
            ("Zs", .spaceSeparator), ("Zl", .lineSeparator), ("Zp", .paragraphSeparator), ("Cc", .control),
            ("Cf", .format), ("Cs", .surrogate), ("Co", .privateUse),
        ]
        var table: [String: [Unicode.GeneralCategory]] = [:]
        for (name, category) in named {
            table[name] = [category]
            table[String(name.prefix(1)), default: []].append(category)
        }
        return table
    }()
}

// MARK: - The program

private enum Instruction {
    case scalar(Unicode.Scalar)
    /// One of the scalars of a letter's case orbit (``GoRegexp/caseOrbit(of:)``).
    case scalarFoldingCase([Unicode.Scalar])
    case characterClass(CharacterClass)
    case anyCharacter(matchesNewline: Bool)
    case assertion(Assertion)
    /// Try `first`, then `second`.
    case split(Int, Int)
    case jump(Int)
    case save(Int)
    case match
}

private struct Compiler {
    var program: [Instruction] = []

    mutating func emit(_ instruction: Instruction) { program.append(instruction) }

    mutating func compile(_ node: Node) {
        switch node {
        case .empty: break
        case .literal(let scalar, let foldsCase):
            // A letter with other cases matches any of them; anything else only itself.
            let orbit = foldsCase ? GoRegexp.caseOrbit(of: scalar) : []
            emit(orbit.count > 1 ? .scalarFoldingCase(orbit) : .scalar(scalar))
        case .characterClass(let set): emit(.characterClass(set))
        case .anyCharacter(let matchesNewline): emit(.anyCharacter(matchesNewline: matchesNewline))
        case .assertion(let assertion): emit(.assertion(assertion))
        case .capture(let index, let inner):
            emit(.save(2 * index))
            compile(inner)
            emit(.save(2 * index + 1))
        case .concatenation(let items):
            for item in items { compile(item) }
        case .alternation(let branches):
            var jumps: [Int] = []
            for (number, branch) in branches.enumerated() {
                if number < branches.count - 1 {
                    let split = program.count
                    emit(.split(split + 1, 0))
                    compile(branch)
                    jumps.append(program.count)
                    emit(.jump(0))
                    program[split] = .split(split + 1, program.count)
                } else {
                    compile(branch)
                }
            }
            for jump in jumps { program[jump] = .jump(program.count) }
        case .repetition(let inner, let minimum, let maximum, let greedy):
            // As Go's simplifier and compiler shape them, so that matches prefer what Go's do:
            // x{n,} is n-1 copies then x+; x{n,m} is n copies then m-n nested optional ones; x*
            // with a body that can match empty is (x+)? (golang.org/issue/46123).
            guard let maximum else {
                if minimum == 0 {
                    if Self.isNullable(inner) {
                        optional(greedy: greedy) { $0.plus(inner, greedy: greedy) }
                    } else {
                        let loop = program.count
                        emit(.split(0, 0))
                        compile(inner)
                        emit(.jump(loop))
                        program[loop] = greedy ? .split(loop + 1, program.count) : .split(program.count, loop + 1)
                    }
                } else {
                    for _ in 1..<minimum { compile(inner) }
                    plus(inner, greedy: greedy)
                }
                return
            }
            for _ in 0..<minimum { compile(inner) }
            // Each optional copy may skip to the end of them all: (x(x(x)?)?)?.
            var exits: [Int] = []
            for _ in minimum..<maximum {
                exits.append(program.count)
                emit(.split(0, 0))
                compile(inner)
            }
            for split in exits {
                program[split] = greedy ? .split(split + 1, program.count) : .split(program.count, split + 1)
            }
        }
    }

    /// x+: x, then back to it or on.
    mutating func plus(_ inner: Node, greedy: Bool) {
        let start = program.count
        compile(inner)
        let next = program.count + 1
        emit(greedy ? .split(start, next) : .split(next, start))
    }

    /// x?: into x or past it.
    mutating func optional(greedy: Bool, _ body: (inout Compiler) -> Void) {
        let split = program.count
        emit(.split(0, 0))
        body(&self)
        program[split] = greedy ? .split(split + 1, program.count) : .split(program.count, split + 1)
    }

    /// How many instructions `node` compiles to, at most (saturating past any limit).
    static func size(of node: Node) -> Int {
        switch node {
        case .empty: return 0
        case .literal, .characterClass, .anyCharacter, .assertion: return 1
        case .capture(_, let inner): return min(Int.max / 4, size(of: inner) + 2)
        case .concatenation(let items):
            return items.reduce(0) { min(Int.max / 4, $0 + size(of: $1)) }
        case .alternation(let branches):
            return branches.reduce(0) { min(Int.max / 4, $0 + size(of: $1) + 2) }
        case .repetition(let inner, let minimum, let maximum, _):
            let copies = max(1, maximum ?? (minimum + 1))
            let (total, overflow) = (size(of: inner) + 2).multipliedReportingOverflow(by: copies)
            return overflow ? Int.max / 4 : min(Int.max / 4, total)
        }
    }

    /// Whether `node` can match the empty text.
    static func isNullable(_ node: Node) -> Bool {
        switch node {
        case .empty, .assertion: true
        case .literal, .characterClass, .anyCharacter: false
        case .capture(_, let inner): isNullable(inner)
        case .concatenation(let items): items.allSatisfy(isNullable)
        case .alternation(let branches): branches.contains(where: isNullable)
        case .repetition(let inner, let minimum, _, _): minimum == 0 || isNullable(inner)
        }
    }
}

// MARK: - Matching

/// RE2's bit-state backtracker: depth-first in priority order, so the first match found is the
/// leftmost-first one; each (position, instruction) is explored once, which bounds a search's work
/// by their product. Within a search the visited bits are shared across start positions (a state
/// that failed from one start fails from any); the next search clears the ones the last touched.
private struct Backtracker {
    let program: [Instruction]
    let text: [Unicode.Scalar]
    let slotCount: Int
    /// Bit `position * program.count + instruction`.
    var visited: [UInt64]
    /// The furthest position the last search reached (its bits are the ones to clear).
    var reached = -1

    init(program: [Instruction], text: [Unicode.Scalar], slotCount: Int) {
        self.program = program
        self.text = text
        self.slotCount = slotCount
        visited = [UInt64](repeating: 0, count: (program.count * (text.count + 1) + 63) / 64)
    }

    enum Step {
        case explore(Int, Int)
        case restore(Int, Int?)
    }

    /// The leftmost-first match starting at `start` or after.
    mutating func search(from start: Int) -> GoRegexp.Match? {
        if reached >= start {
            let first = start * program.count / 64
            let last = ((reached + 1) * program.count + 63) / 64
            for word in first..<min(last, visited.count) { visited[word] = 0 }
        }
        reached = start
        for position in start...text.count {
            if let match = run(at: position) { return match }
        }
        return nil
    }

    private mutating func run(at start: Int) -> GoRegexp.Match? {
        var slots = [Int?](repeating: nil, count: slotCount)
        var stack: [Step] = [.explore(0, start)]
        while let step = stack.popLast() {
            switch step {
            case .restore(let slot, let value):
                slots[slot] = value
            case .explore(var pc, var position):
                // Follow one thread until it fails or splits.
                while true {
                    let bit = position * program.count + pc
                    if visited[bit >> 6] & (1 << UInt64(bit & 63)) != 0 { break }
                    visited[bit >> 6] |= 1 << UInt64(bit & 63)
                    if position > reached { reached = position }
                    switch program[pc] {
                    case .match:
                        return slots
                    case .scalar(let scalar):
                        guard position < text.count, text[position] == scalar else { break }
                        pc += 1
                        position += 1
                        continue
                    case .scalarFoldingCase(let orbit):
                        guard position < text.count, orbit.contains(text[position]) else { break }
                        pc += 1
                        position += 1
                        continue
                    case .characterClass(let set):
                        guard position < text.count, set.contains(text[position]) else { break }
                        pc += 1
                        position += 1
                        continue
                    case .anyCharacter(let matchesNewline):
                        guard position < text.count, matchesNewline || text[position] != "\n" else { break }
                        pc += 1
                        position += 1
                        continue
                    case .assertion(let assertion):
                        guard holds(assertion, at: position) else { break }
                        pc += 1
                        continue
                    case .split(let first, let second):
                        stack.append(.explore(second, position))
                        pc = first
                        continue
                    case .jump(let target):
                        pc = target
                        continue
                    case .save(let slot):
                        stack.append(.restore(slot, slots[slot]))
                        slots[slot] = position
                        pc += 1
                        continue
                    }
                    break
                }
            }
        }
        return nil
    }

    func holds(_ assertion: Assertion, at position: Int) -> Bool {
        switch assertion {
        case .beginText: return position == 0
        case .endText: return position == text.count
        case .beginLine: return position == 0 || text[position - 1] == "\n"
        case .endLine: return position == text.count || text[position] == "\n"
        case .wordBoundary, .notWordBoundary:
            let before = position > 0 && GoRegexp.isWordScalar(text[position - 1])
            let after = position < text.count && GoRegexp.isWordScalar(text[position])
            return (before != after) == (assertion == .wordBoundary)
        }
    }
}

extension GoRegexp {
    /// `\w`: ASCII letters, digits and `_`.
    static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar == "_" || scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
    }

    /// The scalars that are `scalar`'s letter but for case, `scalar` among them: Go's case orbit
    /// (`unicode.SimpleFold`), the classes of Unicode's simple case folding. `k`, `K` and the
    /// Kelvin sign; `s`, `S` and the long s; `σ`, `Σ` and the final `ς`; `1` alone.
    ///
    /// Most letters are their folding key's upper, title and lower case; ``foldingExtras`` holds
    /// the others (GoRegexpTests derives it again from all of Unicode).
    static func caseOrbit(of scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        if scalar.isASCII {
            // Without the Unicode tables: a letter's two cases, and the long s and Kelvin sign.
            let value = UInt8(scalar.value)
            guard (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) else { return [scalar] }
            let lower = Unicode.Scalar(value | 0x20)
            let orbit = [lower, Unicode.Scalar(value & ~0x20)]
            return lower == "k" ? orbit + ["\u{212A}"] : lower == "s" ? orbit + ["\u{017F}"] : orbit
        }
        let key = foldingKey(of: scalar)
        var orbit = [key]
        for mapping in [key.properties.uppercaseMapping, key.properties.titlecaseMapping] {
            if let other = single(mapping), !orbit.contains(other), foldingKey(of: other) == key { orbit.append(other) }
        }
        for (extraKey, extra) in foldingExtras where extraKey == key.value {
            if let other = Unicode.Scalar(extra), !orbit.contains(other) { orbit.append(other) }
        }
        if !orbit.contains(scalar) { orbit.append(scalar) }
        return orbit
    }

    /// The letter `scalar` folds to: the lower case of its upper case (`ς` → `Σ` → `σ`, the long
    /// s → `S` → `s`), or its own lower case when its upper case is several scalars (`ß`).
    /// Simple case folding's exceptions: the dotless `ı` folds to itself only (Unicode folds it
    /// only for Turkic languages), and three pairs whose upper cases are several scalars.
    static func foldingKey(of scalar: Unicode.Scalar) -> Unicode.Scalar {
        switch scalar.value {
        case 0x0131: return scalar
        case 0x1FD3: return "\u{0390}"
        case 0x1FE3: return "\u{03B0}"
        case 0xFB05: return "\u{FB06}"
        default: break
        }
        let upper = single(scalar.properties.uppercaseMapping) ?? scalar
        return single(upper.properties.lowercaseMapping) ?? single(scalar.properties.lowercaseMapping) ?? scalar
    }

    /// Members of a case orbit that its key's upper and title case don't reach: (key, member).
    /// Derived from Unicode's case mappings (GoRegexpTests.foldingExtrasFromUnicode checks it).
    static let foldingExtras: [(UInt32, UInt32)] = [
        (0x03BC, 0x00B5), (0x0073, 0x017F), (0x03B9, 0x0345), (0x03C3, 0x03C2), (0x03B2, 0x03D0),
        (0x03B8, 0x03D1), (0x03C6, 0x03D5), (0x03C0, 0x03D6), (0x03BA, 0x03F0), (0x03C1, 0x03F1),
        (0x03B8, 0x03F4), (0x03B5, 0x03F5), (0x0432, 0x1C80), (0x0434, 0x1C81), (0x043E, 0x1C82),
        (0x0441, 0x1C83), (0x0442, 0x1C84), (0x0442, 0x1C85), (0x044A, 0x1C86), (0x0463, 0x1C87),
        (0xA64B, 0x1C88), (0x1E61, 0x1E9B), (0x00DF, 0x1E9E), (0x03B9, 0x1FBE), (0x0390, 0x1FD3),
        (0x03B0, 0x1FE3), (0x03C9, 0x2126), (0x006B, 0x212A), (0x00E5, 0x212B), (0xFB06, 0xFB05),
    ]

    private static func single(_ mapping: String) -> Unicode.Scalar? {
        let scalars = mapping.unicodeScalars
        guard let first = scalars.first, scalars.index(after: scalars.startIndex) == scalars.endIndex else {
            return nil
        }
        return first
    }
}
