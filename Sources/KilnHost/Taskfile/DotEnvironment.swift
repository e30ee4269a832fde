import KilnPaths
import KilnPluginAPI

/// `.env` files as go-task reads them (godotenv's format): `KEY=value` lines, `export KEY=value`,
/// `KEY: value`, `#` comments, single quotes (literal), double quotes (`\n`, `\"`, `${VAR}`
/// expanded), unquoted values (a ` #` starts a comment, `$VAR` and `${VAR}` expanded from the
/// lines before, then the environment).
///
/// Threading: stateless.
enum DotEnvironment {
    /// The variables of `text`, in order; `environment` answers `$VAR` the file doesn't set.
    static func parse(_ text: String, environment: [String: String]) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        var known: [String: String] = [:]
        func expand(_ value: Substring) -> String {
            var output = ""
            var rest = value
            while let dollar = rest.firstIndex(of: "$") {
                output += rest[..<dollar]
                rest = rest[rest.index(after: dollar)...]
                guard let name = TextHelpers.dollarName(&rest) else {
                    output += "$"
                    continue
                }
                output += known[String(name)] ?? environment[String(name)] ?? ""
            }
            return output + rest
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let rawLine = lines.popFirst() {
            var line = rawLine.trimmingSpaces
            if line.hasSuffix("\r") { line = line.dropLast().trimmingSpaces }
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).trimmingSpaces }
            guard let separator = line.firstIndex(where: { $0 == "=" || $0 == ":" }) else { continue }
            let name = String(line[..<separator].trimmingSpaces)
            guard !name.isEmpty else { continue }
            var rest = line[line.index(after: separator)...].trimmingSpaces
            var value: String
            if let quote = rest.first, quote == "'" || quote == "\"" {
                // A quoted value may run over several lines, to its closing quote.
                rest = rest.dropFirst()
                var body = ""
                var closed = false
                while true {
                    var escaped = false
                    var index = rest.startIndex
                    while index < rest.endIndex {
                        let character = rest[index]
                        if quote == "\"", character == "\\", !escaped {
                            escaped = true
                        } else if character == quote, !escaped {
                            closed = true
                            break
                        } else {
                            if escaped {
                                switch character {
                                case "n": body += "\n"
                                case "r": body += "\r"
                                case "t": body += "\t"
                                default: body.append(character)
                                }
                            } else {
                                body.append(character)
                            }
                            escaped = false
                        }
                        index = rest.index(after: index)
                    }
                    if closed { break }
                    guard let next = lines.popFirst() else { break }
                    body += "\n"
                    rest = next[...]
                }
                value = quote == "\"" ? expand(body[...]) : body
            } else {
                if let comment = rest.firstRange(ofText: " #") { rest = rest[..<comment.lowerBound] }
                value = expand(rest.trimmingSpaces)
            }
            known[name] = value
            if let index = result.firstIndex(where: { $0.name == name }) {
                result[index].value = value
            } else {
                result.append((name, value))
            }
        }
        return result
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
