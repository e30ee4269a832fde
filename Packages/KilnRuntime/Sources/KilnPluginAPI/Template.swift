/// `{{.NAME}}` templates, as in go-task (`{{NAME}}` is accepted too). Only substitution: no
/// functions or pipelines.
///
/// Threading: stateless.
public enum Template {
    /// A reference to a variable in a template.
    public struct Reference: Sendable, Equatable {
        /// The variable's name.
        public var name: String
        /// Its offset in the template, in UTF-8 bytes.
        public var offset: Int
    }

    /// The variables a template refers to, in order.
    public static func references(in template: String) -> [Reference] {
        var result: [Reference] = []
        scan(template) { name, offset in result.append(Reference(name: name, offset: offset)) }
        return result
    }

    /// Substitutes every reference whose name is in `variables`; others stay as written.
    public static func render(_ template: String, variables: [String: String]) -> String {
        guard template.utf8.contains(UInt8(ascii: "{")) else { return template }
        var output = ""
        var bytes = Array(template.utf8)[...]
        while let open = bytes.firstRange(of: [UInt8(ascii: "{"), UInt8(ascii: "{")]) {
            guard let close = bytes[open.upperBound...].firstRange(of: [UInt8(ascii: "}"), UInt8(ascii: "}")]) else {
                break
            }
            output += String(decoding: bytes[..<open.lowerBound], as: UTF8.self)
            let inner = String(decoding: bytes[open.upperBound..<close.lowerBound], as: UTF8.self)
            if let name = variableName(inner), let value = variables[name] {
                output += value
            } else {
                output += String(decoding: bytes[open.lowerBound..<close.upperBound], as: UTF8.self)
            }
            bytes = bytes[close.upperBound...]
        }
        output += String(decoding: bytes, as: UTF8.self)
        return output
    }

    private static func scan(_ template: String, _ found: (String, Int) -> Void) {
        let bytes = Array(template.utf8)
        var index = 0
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            var end = index + 2
            while end + 1 < bytes.count, !(bytes[end] == UInt8(ascii: "}") && bytes[end + 1] == UInt8(ascii: "}")) {
                end += 1
            }
            guard end + 1 < bytes.count else { return }
            let inner = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
            if let name = variableName(inner) { found(name, index) }
            index = end + 2
        }
    }

    /// `.NAME`, ` .NAME `, or `NAME` → `NAME`; anything else (a Go template expression) → nil.
    private static func variableName(_ inner: String) -> String? {
        var name = inner.trimmingSpaces
        if name.hasPrefix(".") { name.removeFirst() }
        guard let first = name.unicodeScalars.first, first == "_" || first.properties.isAlphabetic,
            name.unicodeScalars.allSatisfy({ $0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0) })
        else { return nil }
        return name
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(scalars)
    }
}
