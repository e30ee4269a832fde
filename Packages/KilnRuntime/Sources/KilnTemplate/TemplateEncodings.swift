/// Go's `path` and `path/filepath` rules (Unix), as the path functions use them.
///
/// Threading: stateless.
enum GoPath {
    /// `path.Clean`.
    static func clean(_ path: String) -> String {
        if path.isEmpty { return "." }
        let rooted = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                if let last = parts.last, last != ".." {
                    parts.removeLast()
                } else if !rooted {
                    parts.append(part)
                }
            default: parts.append(part)
            }
        }
        let joined = parts.joined(separator: "/")
        if rooted { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// `filepath.Join`: the non-empty parts joined and cleaned.
    static func join(_ parts: [String]) -> String {
        let nonEmpty = parts.filter { !$0.isEmpty }
        return nonEmpty.isEmpty ? "" : clean(nonEmpty.joined(separator: "/"))
    }

    /// `path.Base`.
    static func base(_ path: String) -> String {
        if path.isEmpty { return "." }
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        if trimmed == "/" { return "/" }
        return String(trimmed.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
    }

    /// `path.Dir`.
    static func directory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return clean(String(path[...slash]))
    }

    /// `path.Ext`.
    static func `extension`(_ path: String) -> String {
        for index in path.indices.reversed() {
            if path[index] == "/" { break }
            if path[index] == "." { return String(path[index...]) }
        }
        return ""
    }

    /// `filepath.Rel`: `target` relative to `base`; `nil` when one is absolute and the other not.
    static func relative(_ base: String, _ target: String) -> String? {
        let base = clean(base), target = clean(target)
        if base == target { return "." }
        guard base.hasPrefix("/") == target.hasPrefix("/") else { return nil }
        let baseParts = base == "." ? [] : base.split(separator: "/").map(String.init)
        let targetParts = target == "." ? [] : target.split(separator: "/").map(String.init)
        var common = 0
        while common < baseParts.count, common < targetParts.count, baseParts[common] == targetParts[common] {
            common += 1
        }
        if baseParts[common...].contains("..") { return nil }
        let ups = Array(repeating: "..", count: baseParts.count - common)
        return (ups + targetParts[common...]).joined(separator: "/")
    }
}

/// Standard base64 (`encoding/base64.StdEncoding`).
///
/// Threading: stateless.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(0) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                output.append(
                    position <= chunk.count
                        ? alphabet[Int(value >> (18 - 6 * UInt32(position)) & 63)] : UInt8(ascii: "=")
                )
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            var value: UInt32 = 0
            var padding = 0
            for position in 0..<4 {
                let byte = bytes[index + position]
                if byte == UInt8(ascii: "=") {
                    guard index + 4 == bytes.count, position >= 2 else { return nil }
                    padding += 1
                    value <<= 6
                    continue
                }
                guard padding == 0, let digit = alphabet.firstIndex(of: byte) else { return nil }
                value = value << 6 | UInt32(digit)
            }
            for position in 0..<(3 - padding) { output.append(UInt8(value >> (16 - 8 * UInt32(position)) & 0xFF)) }
            index += 4
        }
        return output
    }
}

/// Standard base32 (`encoding/base32.StdEncoding`).
///
/// Threading: stateless.
enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 5, bytes.count)])
            var value: UInt64 = 0
            for position in 0..<5 { value = value << 8 | UInt64(position < chunk.count ? chunk[position] : 0) }
            let characters = [0, 2, 4, 5, 7, 8][chunk.count]
            for position in 0..<8 {
                output.append(
                    position < characters ? alphabet[Int(value >> (35 - 5 * UInt64(position)) & 31)] : UInt8(ascii: "=")
                )
            }
            index += 5
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count % 8 == 0 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            var value: UInt64 = 0
            var characters = 0
            for position in 0..<8 {
                let byte = bytes[index + position]
                if byte == UInt8(ascii: "=") {
                    value <<= 5
                    continue
                }
                guard let digit = alphabet.firstIndex(of: byte) else { return nil }
                value = value << 5 | UInt64(digit)
                characters += 1
            }
            guard let count = [0: 0, 2: 1, 4: 2, 5: 3, 7: 4, 8: 5][characters] else { return nil }
            for position in 0..<count { output.append(UInt8(value >> (32 - 8 * UInt64(position)) & 0xFF)) }
            index += 8
        }
        return output
    }
}

/// Random (version 4) UUIDs.
///
/// Threading: stateless.
enum UUID {
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { String($0, radix: 16).leftPadded(to: 2) }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(
            separator: "-"
        )
    }
}

/// URLs for `urlParse`, `urlJoin` and `joinUrl`.
///
/// Threading: stateless.
enum URLParts {
    /// sprig's `urlParse`: scheme, host, hostname, path, query, fragment, userinfo, opaque.
    static func parse(_ text: String) -> [String: TemplateValue] {
        var rest = Substring(text)
        var result: [String: TemplateValue] = [
            "scheme": "", "host": "", "hostname": "", "path": "", "query": "", "fragment": "", "userinfo": "",
            "opaque": "",
        ]
        if let hash = rest.firstIndex(of: "#") {
            result["fragment"] = .string(String(rest[rest.index(after: hash)...]))
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            result["query"] = .string(String(rest[rest.index(after: question)...]))
            rest = rest[..<question]
        }
        if let colon = rest.firstIndex(of: ":"),
            rest[..<colon].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
            rest.first?.isLetter == true
        {
            result["scheme"] = .string(rest[..<colon].lowercased())
            rest = rest[rest.index(after: colon)...]
            if !rest.hasPrefix("/") {
                result["opaque"] = .string(String(rest))
                return result
            }
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
            var authority = rest[..<authorityEnd]
            rest = rest[authorityEnd...]
            if let at = authority.lastIndex(of: "@") {
                result["userinfo"] = .string(String(authority[..<at]))
                authority = authority[authority.index(after: at)...]
            }
            result["host"] = .string(String(authority))
            var hostname = authority
            if hostname.hasPrefix("["), let close = hostname.firstIndex(of: "]") {
                hostname = hostname[hostname.index(after: hostname.startIndex)..<close]
            } else if let colon = hostname.lastIndex(of: ":") {
                hostname = hostname[..<colon]
            }
            result["hostname"] = .string(String(hostname))
        }
        result["path"] = .string(String(rest))
        return result
    }

    /// sprig's `urlJoin`: a URL from `urlParse`'s parts.
    static func join(_ parts: [String: TemplateValue]) -> String {
        func part(_ name: String) -> String { parts[name]?.stringValue ?? "" }
        var output = ""
        if !part("scheme").isEmpty { output += part("scheme") + ":" }
        if !part("opaque").isEmpty { return output + part("opaque") }
        if !part("host").isEmpty || !part("userinfo").isEmpty {
            output += "//"
            if !part("userinfo").isEmpty { output += part("userinfo") + "@" }
            output += part("host")
        }
        let path = part("path")
        if !path.isEmpty, !path.hasPrefix("/"), !part("host").isEmpty { output += "/" }
        output += path
        if !part("query").isEmpty { output += "?" + part("query") }
        if !part("fragment").isEmpty { output += "#" + part("fragment") }
        return output
    }

    /// `url.JoinPath(base, elements...)`: the path elements joined onto the base's path and
    /// cleaned, keeping a trailing slash.
    static func joinPath(_ parts: [String]) -> String {
        guard let first = parts.first else { return "" }
        var components = parse(first)
        var path = components["path"]?.stringValue ?? ""
        let elements = parts.dropFirst()
        if elements.isEmpty { return first }
        let trailing = elements.last?.hasSuffix("/") == true
        path = GoPath.clean("/" + ([path] + elements).joined(separator: "/"))
        if !(first.bytesContain("://") || first.hasPrefix("/")) { path = String(path.dropFirst()) }
        if trailing, !path.hasSuffix("/") { path += "/" }
        components["path"] = .string(path)
        return join(components)
    }
}

/// Go's `time.Duration` text.
///
/// Threading: stateless.
enum GoDuration {
    /// `Duration.String()`: `1h2m3s`, `1.5s`, `250ms`, `0s`.
    static func format(_ nanoseconds: Int) -> String {
        if nanoseconds == 0 { return "0s" }
        let negative = nanoseconds < 0
        let magnitude = nanoseconds.magnitude
        var text: String
        if magnitude < 1_000_000_000 {
            let (unit, suffix): (UInt, String) =
                magnitude < 1000 ? (1, "ns") : magnitude < 1_000_000 ? (1000, "µs") : (1_000_000, "ms")
            text = decimal(magnitude, unit: unit) + suffix
        } else {
            let hours = magnitude / 3_600_000_000_000
            let minutes = magnitude / 60_000_000_000 % 60
            let seconds = magnitude % 60_000_000_000
            text = ""
            if hours > 0 { text += "\(hours)h" }
            if hours > 0 || minutes > 0 { text += "\(minutes)m" }
            text += decimal(seconds, unit: 1_000_000_000) + "s"
        }
        return (negative ? "-" : "") + text
    }

    private static func decimal(_ value: UInt, unit: UInt) -> String {
        let whole = value / unit
        var fraction = value % unit
        guard fraction > 0 else { return String(whole) }
        var digits = String(fraction).leftPadded(to: String(unit).count - 1)
        while digits.hasSuffix("0") { digits.removeLast() }
        fraction = 0
        return "\(whole).\(digits)"
    }

    /// `time.ParseDuration`: `-1.5h`, `10m30s`, `250ms`; `nil` if malformed.
    static func parse(_ text: String) -> Int? {
        var rest = Substring(text)
        var sign = 1
        if rest.first == "-" || rest.first == "+" {
            sign = rest.first == "-" ? -1 : 1
            rest.removeFirst()
        }
        if rest == "0" { return 0 }
        guard !rest.isEmpty else { return nil }
        var total = 0.0
        let units: [(String, Double)] = [
            ("ns", 1), ("us", 1e3), ("µs", 1e3), ("μs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 6e10), ("h", 3.6e12),
        ]
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = Double(number) else { return nil }
            rest.removeFirst(number.count)
            guard let (suffix, scale) = units.filter({ rest.hasPrefix($0.0) }).max(by: { $0.0.count < $1.0.count })
            else { return nil }
            rest.removeFirst(suffix.count)
            total += value * scale
        }
        guard total.magnitude < 9.2e18 else { return nil }
        return sign * Int(total)
    }
}
