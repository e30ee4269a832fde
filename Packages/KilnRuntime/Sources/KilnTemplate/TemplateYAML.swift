/// YAML as go-task's `toYaml` writes it: yaml.v3's `Marshal` — block style, four spaces of
/// indentation, map keys in yaml.v3's order (digits compared as numbers), and each string
/// written plain, in single quotes, in double quotes or as a literal block by yaml.v3's rules
/// (a string that would read back as another type is quoted; a multi-line one is a block).
///
/// Threading: stateless.
enum TemplateYAML {
    /// Nesting deeper than this is written as `null` (templates' values are far shallower).
    static let depthLimit = 100

    /// `value` as a YAML document, ending with a line break.
    static func encode(_ value: TemplateValue) -> String {
        var writer = Writer()
        writer.node(value, indent: -1, in: .root, depth: 0)
        // The document ends on a line of its own (a block scalar already ends with its break).
        if !writer.output.hasSuffix("\n") { writer.output += "\n" }
        return writer.output
    }

    /// Where a node is written: what yaml.v3's emitter state would be.
    enum Place {
        case root, sequenceItem, mappingValue, mappingKey
    }

    /// How a scalar is written.
    enum Style {
        case plain, singleQuoted, doubleQuoted, literal
    }

    struct Writer {
        var output = ""
        /// The column the output is at (counting characters), and whether it ends in white space.
        var column = 0
        var endsInSpace = true

        mutating func write(_ text: String) {
            guard !text.isEmpty else { return }
            output += text
            if let lastBreak = text.lastIndex(of: "\n") {
                column = text[text.index(after: lastBreak)...].count
            } else {
                column += text.count
            }
            endsInSpace = text.last == " " || text.last == "\n"
        }

        /// A new line at `indent`, unless the output is already there, after `- ` (or at the
        /// start): yaml.v3's `write_indent`.
        mutating func newLine(at indent: Int) {
            if !(column == indent && endsInSpace) {
                if !output.isEmpty { write("\n") }
                write(String(repeating: " ", count: indent))
            }
        }

        /// The indent of a block opened at `indent`, `place` saying what holds it: after `- `
        /// two more; otherwise the next multiple of four (yaml.v3's rule).
        static func inner(_ indent: Int, _ place: Place) -> Int {
            if indent < 0 { return 0 }
            return place == .sequenceItem ? indent + 2 : 4 * ((indent + 4) / 4)
        }

        mutating func node(_ value: TemplateValue, indent: Int, in place: Place, depth: Int) {
            guard depth < TemplateYAML.depthLimit else {
                return scalar("null", style: .plain, indent: indent, in: place)
            }
            switch value {
            case .list(let items) where !items.isEmpty:
                let inner = Self.inner(indent, place)
                for item in items {
                    newLine(at: inner)
                    write("- ")
                    node(item, indent: inner, in: .sequenceItem, depth: depth + 1)
                }
            case .map(let entries) where !entries.isEmpty:
                let inner = Self.inner(indent, place)
                for key in entries.keys.sorted(by: TemplateYAML.precedes) {
                    newLine(at: inner)
                    mappingEntry(key: key, value: entries[key] ?? .null, indent: inner, depth: depth)
                }
            case .list: scalar("[]", style: .plain, indent: indent, in: place)
            case .map: scalar("{}", style: .plain, indent: indent, in: place)
            case .missing, .null: scalar("null", style: .plain, indent: indent, in: place)
            case .bool(let flag): scalar(flag ? "true" : "false", style: .plain, indent: indent, in: place)
            case .int(let number): scalar(String(number), style: .plain, indent: indent, in: place)
            case .float:
                // Go's shortest `%g`, as strconv.FormatFloat(f, 'g', -1, 64) writes it.
                let text =
                    switch value.printed {
                    case "+Inf": ".inf"
                    case "-Inf": "-.inf"
                    case "NaN": ".nan"
                    case let printed: printed
                    }
                scalar(text, style: .plain, indent: indent, in: place)
            case .time(let time):
                scalar(time.format("2006-01-02T15:04:05.999999999Z07:00"), style: .plain, indent: indent, in: place)
            case .string(let text): string(text, indent: indent, in: place)
            }
        }

        /// `key: value`, the key on the current line at `indent`.
        mutating func mappingEntry(key: String, value: TemplateValue, indent: Int, depth: Int) {
            // A key on several lines, or longer than 128, can't be a simple key: `? key`.
            if key.contains(where: \.isNewline) || key.utf8.count > 128 {
                write("? ")
                // Not a simple key: any style, its block indented as a value's.
                string(key, indent: indent, in: .mappingValue)
                newLine(at: indent)
                write(":")
            } else {
                string(key, indent: indent, in: .mappingKey)
                write(":")
            }
            switch value {
            case .list(let items) where !items.isEmpty:
                node(value, indent: indent, in: .mappingValue, depth: depth + 1)
            case .map(let entries) where !entries.isEmpty:
                node(value, indent: indent, in: .mappingValue, depth: depth + 1)
            default:
                write(" ")
                node(value, indent: indent, in: .mappingValue, depth: depth + 1)
            }
        }

        /// A string, in the style yaml.v3 picks for it.
        mutating func string(_ text: String, indent: Int, in place: Place) {
            var style: Style =
                text.contains("\n") ? .literal : TemplateYAML.readsAsString(text) ? .plain : .doubleQuoted
            let analysis = Analysis(text)
            if place == .mappingKey, analysis.isMultiline { style = .doubleQuoted }
            if style == .plain {
                if !analysis.plainAllowed || text.isEmpty && place == .mappingKey { style = .singleQuoted }
            }
            if style == .singleQuoted, !analysis.singleQuotedAllowed { style = .doubleQuoted }
            if style == .literal, !analysis.blockAllowed || place == .mappingKey { style = .doubleQuoted }
            scalar(text, style: style, indent: indent, in: place)
        }

        mutating func scalar(_ text: String, style: Style, indent: Int, in place: Place) {
            switch style {
            case .plain: write(text)
            case .singleQuoted: write("'" + text.replacingOccurrences(of: "'", with: "''") + "'")
            case .doubleQuoted: write(TemplateYAML.doubleQuoted(text))
            case .literal:
                // The body's indent: as a block under whatever holds it (four at the top).
                let body = indent < 0 ? 4 : Self.inner(indent, place)
                var header = "|"
                if let first = text.unicodeScalars.first, first == " " || TemplateYAML.isBreak(first) {
                    header += "4"
                }
                header += TemplateYAML.chompingIndicator(text)
                // The header on a line of its own, then each line at the body's indent; an empty
                // line is only its break (so a leading break is an empty first line).
                write(header + "\n")
                var atLineStart = true
                var line = ""
                for character in text.unicodeScalars {
                    if TemplateYAML.isBreak(character) {
                        write(line)
                        line = ""
                        write("\n")
                        atLineStart = true
                    } else {
                        if atLineStart {
                            write(String(repeating: " ", count: body))
                            atLineStart = false
                        }
                        line.unicodeScalars.append(character)
                    }
                }
                write(line)
            }
        }
    }

    /// What yaml.v3's emitter finds in a scalar: which styles can hold it.
    struct Analysis {
        var isMultiline = false
        var plainAllowed = true
        var singleQuotedAllowed = true
        var blockAllowed = true

        init(_ text: String) {
            let scalars = Array(text.unicodeScalars)
            guard !scalars.isEmpty else {
                // Plain is allowed in block context for an empty value (but not as a key).
                return
            }
            var blockIndicators = false
            var lineBreaks = false, special = false, tabs = false
            var leadingSpace = false, leadingBreak = false, trailingSpace = false, trailingBreak = false
            var breakSpace = false, spaceBreak = false
            var precededByWhitespace = true, previousSpace = false, previousBreak = false
            if text.hasPrefix("---") || text.hasPrefix("...") { blockIndicators = true }
            for (index, character) in scalars.enumerated() {
                let next = index + 1 < scalars.count ? scalars[index + 1] : nil
                let followedByWhitespace = next == nil || next == " " || next == "\t"
                if index == 0 {
                    switch character {
                    case "#", ",", "[", "]", "{", "}", "&", "*", "!", "|", ">", "'", "\"", "%", "@", "`":
                        blockIndicators = true
                    case "?", ":", "-":
                        if followedByWhitespace { blockIndicators = true }
                    default: break
                    }
                } else {
                    switch character {
                    case ":": if followedByWhitespace { blockIndicators = true }
                    case "#": if precededByWhitespace { blockIndicators = true }
                    default: break
                    }
                }
                if character == "\t" {
                    tabs = true
                } else if !TemplateYAML.isPrintable(character) {
                    special = true
                }
                if character == " " {
                    if index == 0 { leadingSpace = true }
                    if index == scalars.count - 1 { trailingSpace = true }
                    if previousBreak { breakSpace = true }
                    previousSpace = true
                    previousBreak = false
                } else if TemplateYAML.isBreak(character) {
                    lineBreaks = true
                    if index == 0 { leadingBreak = true }
                    if index == scalars.count - 1 { trailingBreak = true }
                    if previousSpace { spaceBreak = true }
                    previousSpace = false
                    previousBreak = true
                } else {
                    previousSpace = false
                    previousBreak = false
                }
                precededByWhitespace = character == " " || character == "\t" || TemplateYAML.isBreak(character)
            }
            isMultiline = lineBreaks
            if leadingSpace || leadingBreak || trailingSpace || trailingBreak { plainAllowed = false }
            if trailingSpace { blockAllowed = false }
            if breakSpace {
                plainAllowed = false
                singleQuotedAllowed = false
            }
            if spaceBreak || tabs || special {
                plainAllowed = false
                singleQuotedAllowed = false
            }
            if spaceBreak || special { blockAllowed = false }
            if lineBreaks || blockIndicators { plainAllowed = false }
        }
    }

    /// What yaml.v3 can print unescaped.
    static func isPrintable(_ character: Unicode.Scalar) -> Bool {
        switch character.value {
        case 0x0A, 0x20...0x7E, 0xA0...0xD7FF: true
        case 0xE000...0xFFFD: character.value != 0xFEFF
        default: false
        }
    }

    static func isBreak(_ character: Unicode.Scalar) -> Bool {
        switch character.value {
        case 0x0A, 0x0D, 0x85, 0x2028, 0x2029: true
        default: false
        }
    }

    /// A literal block's chomping: `-` without a final line break, `+` with more than one.
    static func chompingIndicator(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard let last = scalars.last, isBreak(last) else { return "-" }
        if scalars.count == 1 || isBreak(scalars[scalars.count - 2]) { return "+" }
        return ""
    }

    /// `text` in double quotes, escaped as yaml.v3 escapes it.
    static func doubleQuoted(_ text: String) -> String {
        var result = "\""
        for character in text.unicodeScalars {
            switch character.value {
            case 0x00: result += "\\0"
            case 0x07: result += "\\a"
            case 0x08: result += "\\b"
            case 0x09: result += "\\t"
            case 0x0A: result += "\\n"
            case 0x0B: result += "\\v"
            case 0x0C: result += "\\f"
            case 0x0D: result += "\\r"
            case 0x1B: result += "\\e"
            case 0x22: result += "\\\""
            case 0x5C: result += "\\\\"
            case 0x85: result += "\\N"
            case 0xA0: result += "\\_"
            case 0x2028: result += "\\L"
            case 0x2029: result += "\\P"
            default:
                if isPrintable(character), character.value != 0xFEFF {
                    result.unicodeScalars.append(character)
                } else if character.value <= 0xFF {
                    result += "\\x" + hex(character.value, width: 2)
                } else if character.value <= 0xFFFF {
                    result += "\\u" + hex(character.value, width: 4)
                } else {
                    result += "\\U" + hex(character.value, width: 8)
                }
            }
        }
        return result + "\""
    }

    static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// Whether yaml.v3 would read `text`, unquoted, back as a string — not a null, bool, number
    /// or timestamp, nor a YAML 1.1 bool (`yes`, `off`) or base-60 float it quotes anyway.
    static func readsAsString(_ text: String) -> Bool {
        switch text {
        case "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", ".nan", ".NaN",
            ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
            return false
        case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
            return false
        default: break
        }
        guard let first = text.unicodeScalars.first else { return false }
        switch first {
        case ".":
            return !isYAMLFloat(text)
        case "+", "-", "0"..."9":
            if isBase60Float(text) || isTimestamp(text) { return false }
            let plain = text.replacingOccurrences(of: "_", with: "")
            return !isGoInteger(plain) && !isYAMLFloat(plain)
        default:
            return true
        }
    }

    /// Whether Go's `strconv.ParseInt(text, 0, 64)` or `ParseUint` reads `text`: decimal, `0x`,
    /// `0o`, `0b` or a leading `0` (octal), with a sign for the signed form.
    static func isGoInteger(_ text: String) -> Bool {
        var rest = Substring(text)
        var negative = false
        var signed = false
        if let sign = rest.first, sign == "+" || sign == "-" {
            signed = true
            negative = sign == "-"
            rest = rest.dropFirst()
        }
        var radix = 10
        for (prefix, base) in [("0x", 16), ("0X", 16), ("0o", 8), ("0O", 8), ("0b", 2), ("0B", 2)]
        where rest.hasPrefix(prefix) {
            radix = base
            rest = rest.dropFirst(2)
            break
        }
        if radix == 10, rest.count > 1, rest.hasPrefix("0") {
            radix = 8
            rest = rest.dropFirst()
        }
        guard let first = rest.unicodeScalars.first, first.properties.isASCIIHexDigit,
            let magnitude = UInt64(rest, radix: radix)
        else { return false }
        guard signed else { return true }
        return negative ? magnitude <= UInt64(1) << 63 : magnitude <= UInt64(Int64.max)
    }

    /// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (yaml.v3's float syntax).
    static func isYAMLFloat(_ text: String) -> Bool {
        var characters = Array(text.unicodeScalars)[...]
        if let sign = characters.first, sign == "+" || sign == "-" { characters = characters.dropFirst() }
        func digits() -> Int {
            var count = 0
            while let next = characters.first, ("0"..."9").contains(next) {
                characters = characters.dropFirst()
                count += 1
            }
            return count
        }
        if characters.first == "." {
            characters = characters.dropFirst()
            guard digits() > 0 else { return false }
        } else {
            guard digits() > 0 else { return false }
            if characters.first == "." {
                characters = characters.dropFirst()
                _ = digits()
            }
        }
        if let exponent = characters.first, exponent == "e" || exponent == "E" {
            characters = characters.dropFirst()
            if let sign = characters.first, sign == "+" || sign == "-" { characters = characters.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return characters.isEmpty
    }

    /// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$` (YAML 1.1's base 60, which yaml.v3 quotes).
    static func isBase60Float(_ text: String) -> Bool {
        var characters = Array(text.unicodeScalars)[...]
        if let sign = characters.first, sign == "+" || sign == "-" { characters = characters.dropFirst() }
        guard let first = characters.first, ("0"..."9").contains(first) else { return false }
        while let next = characters.first, ("0"..."9").contains(next) || next == "_" {
            characters = characters.dropFirst()
        }
        var groups = 0
        while characters.first == ":" {
            characters = characters.dropFirst()
            var count = 0
            var group: [Unicode.Scalar] = []
            while let next = characters.first, ("0"..."9").contains(next), count < 2 {
                group.append(next)
                characters = characters.dropFirst()
                count += 1
            }
            guard count > 0, count == 1 || ("0"..."5").contains(group[0]) else { return false }
            groups += 1
        }
        guard groups > 0 else { return false }
        if characters.first == "." {
            characters = characters.dropFirst()
            while let next = characters.first, ("0"..."9").contains(next) || next == "_" {
                characters = characters.dropFirst()
            }
        }
        return characters.isEmpty
    }

    /// yaml.v3's timestamps: `2006-1-2`, and that followed by `T`, `t` or a space and a time.
    static func isTimestamp(_ text: String) -> Bool {
        let characters = Array(text.unicodeScalars)
        var index = 0
        func number(_ minimum: Int, _ maximum: Int) -> Bool {
            var count = 0
            while index < characters.count, ("0"..."9").contains(characters[index]), count < maximum {
                index += 1
                count += 1
            }
            return count >= minimum
        }
        guard number(4, 4), index < characters.count, characters[index] == "-" else { return false }
        index += 1
        guard number(1, 2), index < characters.count, characters[index] == "-" else { return false }
        index += 1
        guard number(1, 2) else { return false }
        if index == characters.count { return true }
        guard characters[index] == "T" || characters[index] == "t" || characters[index] == " " else { return false }
        index += 1
        guard number(1, 2), index < characters.count, characters[index] == ":" else { return false }
        index += 1
        guard number(1, 2), index < characters.count, characters[index] == ":" else { return false }
        index += 1
        guard number(1, 2) else { return false }
        if index < characters.count, characters[index] == "." {
            index += 1
            guard number(1, 9) else { return false }
        }
        if index == characters.count { return true }
        let zone = String(String.UnicodeScalarView(characters[index...]))
        if zone == "Z" { return true }
        let sign = characters[index]
        guard sign == "+" || sign == "-" else { return false }
        index += 1
        guard number(2, 2), index < characters.count, characters[index] == ":" else { return false }
        index += 1
        return number(2, 2) && index == characters.count
    }

    /// yaml.v3's order of map keys: text, except that runs of digits compare as numbers
    /// (`a2` before `a10`), and a letter sorts after a digit that follows a shared digit.
    static func precedes(_ a: String, _ b: String) -> Bool {
        let left = Array(a.unicodeScalars)
        let right = Array(b.unicodeScalars)
        var digits = false
        var index = 0
        while index < left.count, index < right.count {
            let x = left[index]
            let y = right[index]
            if x == y {
                digits = x.properties.numericType == .decimal
                index += 1
                continue
            }
            let xLetter = x.properties.isAlphabetic
            let yLetter = y.properties.isAlphabetic
            if xLetter, yLetter { return x.value < y.value }
            if xLetter || yLetter { return digits ? xLetter : yLetter }
            var leftNumber: Int64 = 0
            var rightNumber: Int64 = 0
            if x == "0" || y == "0" {
                var back = index - 1
                while back >= 0, left[back].properties.numericType == .decimal {
                    if left[back] != "0" {
                        leftNumber = 1
                        rightNumber = 1
                        break
                    }
                    back -= 1
                }
            }
            var leftEnd = index
            while leftEnd < left.count,
                let digit = left[leftEnd].properties.numericType == .decimal ? left[leftEnd] : nil
            {
                leftNumber = leftNumber &* 10 &+ Int64(digit.value) &- 48
                leftEnd += 1
            }
            var rightEnd = index
            while rightEnd < right.count,
                let digit = right[rightEnd].properties.numericType == .decimal ? right[rightEnd] : nil
            {
                rightNumber = rightNumber &* 10 &+ Int64(digit.value) &- 48
                rightEnd += 1
            }
            if leftNumber != rightNumber { return leftNumber < rightNumber }
            if leftEnd != rightEnd { return leftEnd < rightEnd }
            return x.value < y.value
        }
        return left.count < right.count
    }
}
