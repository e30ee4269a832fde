import KilnPaths
import KilnPluginAPI

/// The templates of Taskfiles: the library every job renders through (Go's, sprig's and
/// go-task's functions; errors located in their files), and YAML values as go-task types them.
///
/// Threading: stateless apart from the library's parse memo, which is thread-safe.
public enum TaskfileTemplates {
    /// The library kiln's runs render with.
    public static let library = TemplateLibrary(functions: .standard.adding(hostFunctions)) { scalar, text, offset in
        locate(offset: offset, in: text, writtenAt: scalar)
    }

    /// Renders `text`, written at `location`, with `variables`.
    static func render(_ text: String, variables: [String: TemplateValue], at location: SourceLocation?)
        throws(TemplateRenderError)
        -> String
    {
        try library.render(text, variables: variables, at: location)
    }

    /// Where the action holding the byte at `offset` of `text` starts, its `{{` included, as an
    /// editor would select it.
    static func actionStart(before offset: Int, in text: String) -> Int {
        let bytes = Array(text.utf8)
        var start = min(offset, bytes.count)
        while start >= 2, !(bytes[start - 1] == UInt8(ascii: "{") && bytes[start - 2] == UInt8(ascii: "{")) {
            start -= 1
        }
        return max(0, start - 2)
    }

    /// Where the byte at `offset` of the template `text` is, when the scalar holding it starts at
    /// `scalar`: the action around that byte found in the file (quotes, escapes and folded lines
    /// make the scalar's text differ from the file's), or the scalar's start.
    static func locate(
        offset: Int,
        in text: String,
        writtenAt scalar: SourceLocation,
        file: (String) -> TaskfileLocator? = { path in (try? Files.readText(path)).map(TaskfileLocator.init(text:)) }
    ) -> SourceLocation {
        let bytes = Array(text.utf8)
        var start = min(offset, max(0, bytes.count - 1))
        while start > 0,
            !(bytes[start] == UInt8(ascii: "{") && start + 1 < bytes.count && bytes[start + 1] == UInt8(ascii: "{"))
        {
            start -= 1
        }
        guard start + 1 < bytes.count, bytes[start] == UInt8(ascii: "{"), bytes[start + 1] == UInt8(ascii: "{") else {
            return scalar
        }
        var end = start + 2
        while end + 1 < bytes.count, !(bytes[end] == UInt8(ascii: "}") && bytes[end + 1] == UInt8(ascii: "}")) {
            end += 1
        }
        let action = String(decoding: bytes[start..<min(bytes.count, end + 2)], as: UTF8.self)
        // Which occurrence of that action text in the template it is.
        var occurrence = 0
        var search = 0
        let needle = Array(action.utf8)
        while search < start {
            if bytes[search...].starts(with: needle) { occurrence += 1 }
            search += 1
        }
        guard let locator = file(scalar.file), var found = locator.locate(action, occurrence: occurrence, after: scalar)
        else {
            return scalar
        }
        // Within the action, point at the offending byte when it is on the action's first line.
        let inside = bytes[start..<min(offset, bytes.count)]
        if !inside.contains(UInt8(ascii: "\n")) {
            found.column += String(decoding: inside, as: UTF8.self).count
        }
        return found
    }

    /// A YAML value as go-task (yaml.v3) gives it to templates: plain scalars typed (`true`,
    /// `42`, `1.5`, `~`), quoted ones strings, sequences lists, mappings maps.
    static func value(of node: YAMLNode) -> TemplateValue {
        switch node {
        case .scalar(let scalar):
            guard scalar.style == .plain else { return .string(scalar.string) }
            return typedPlainScalar(scalar.string)
        case .sequence(let items, _):
            return .list(items.map(value(of:)))
        case .mapping(let entries, _):
            var result: [String: TemplateValue] = [:]
            for entry in entries { result[entry.key.string ?? ""] = value(of: entry.value) }
            return .map(result)
        }
    }

    /// yaml.v3's resolution of a plain scalar decoded into `any`.
    static func typedPlainScalar(_ text: String) -> TemplateValue {
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
        case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
        case ".nan", ".NaN", ".NAN": return .float(.nan)
        default: break
        }
        guard let first = text.utf8.first,
            first == UInt8(ascii: "-") || first == UInt8(ascii: "+") || first == UInt8(ascii: ".")
                || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9"))
        else { return .string(text) }
        var digits = Substring(text)
        var negative = false
        if digits.first == "-" || digits.first == "+" {
            negative = digits.first == "-"
            digits.removeFirst()
        }
        let plain = String(digits.filter { $0 != "_" })
        func signed(_ value: Int?) -> TemplateValue? { value.map { .int(negative ? -$0 : $0) } }
        if plain.hasPrefix("0x"), let value = signed(Int(plain.dropFirst(2), radix: 16)) { return value }
        if plain.hasPrefix("0o"), let value = signed(Int(plain.dropFirst(2), radix: 8)) { return value }
        if plain.hasPrefix("0b"), let value = signed(Int(plain.dropFirst(2), radix: 2)) { return value }
        if !plain.isEmpty, plain.allSatisfy(\.isASCII), plain.allSatisfy(\.isNumber), let value = signed(Int(plain)) {
            return value
        }
        if plain.allSatisfy({ $0.isASCII && ($0.isNumber || "eE.+-".contains($0)) }), plain.contains(where: \.isNumber),
            let value = Double(plain)
        {
            return .float(negative ? -value : value)
        }
        return .string(text)
    }
}

extension TemplateValue {
    /// The value with its maps' null entries removed, at any depth: what go-task keeps of a
    /// variable's value (`map: {a: 1, b: ~}` is `map[a:1]`; lists keep their nulls).
    var droppingNullEntries: TemplateValue {
        switch self {
        case .map(let entries):
            var kept: [String: TemplateValue] = [:]
            for (key, value) in entries where value != .null { kept[key] = value.droppingNullEntries }
            return .map(kept)
        case .list(let items): return .list(items.map(\.droppingNullEntries))
        default: return self
        }
    }
}

/// Finds text in a Taskfile: where the `occurrence`-th appearance of a string after a place is,
/// as an editor counts lines and columns.
///
/// Threading: a value type; safe to pass between threads.
struct TaskfileLocator {
    let bytes: [UInt8]
    let lineStarts: [Int]

    init(text: String) {
        bytes = Array(text.utf8)
        var starts = [0]
        for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") { starts.append(offset + 1) }
        lineStarts = starts
    }

    /// Where the `occurrence`-th appearance of `raw` at or after `start` is (1-based line and
    /// column, counting characters), if it is within a MiB of it.
    func locate(_ raw: String, occurrence: Int, after start: SourceLocation) -> SourceLocation? {
        guard !raw.isEmpty, start.line >= 1 else { return nil }
        let needle = Array(raw.utf8)
        var index = start.line - 1 < lineStarts.count ? lineStarts[start.line - 1] : bytes.count
        var line = start.line
        var column = 1
        while column < start.column, index < bytes.count, bytes[index] != UInt8(ascii: "\n") {
            index += 1
            while index < bytes.count, bytes[index] & 0xC0 == 0x80 { index += 1 }
            column += 1
        }
        var remaining = occurrence
        let limit = min(bytes.count, index + 1 << 20)
        while index + needle.count <= limit {
            if bytes[index] == needle[0], bytes[index..<index + needle.count].elementsEqual(needle) {
                if remaining == 0 { return SourceLocation(file: start.file, line: line, column: column) }
                remaining -= 1
            }
            if bytes[index] == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if bytes[index] & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return nil
    }
}
