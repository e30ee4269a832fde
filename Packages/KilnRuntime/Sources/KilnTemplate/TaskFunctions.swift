#if canImport(Glibc)
    import Glibc
#endif

/// go-task's own template functions (`internal/templater/funcs.go` in go-task).
///
/// `fromYaml` and `mustFromYaml` need a YAML parser; the host adds them. `toYaml` writes YAML
/// here (``TemplateYAML``).
///
/// Threading: stateless.
enum TaskFunctions {
    static func register(into table: inout [String: TemplateFunction]) {
        table["OS"] = TemplateFunction(arguments: 0) { _ in "linux" }
        table["ARCH"] = TemplateFunction(arguments: 0) { _ in .string(architecture) }
        table["numCPU"] = TemplateFunction(arguments: 0) { _ in .int(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
        table["exeExt"] = TemplateFunction(arguments: 0) { _ in "" }
        table["ExeExt"] = table["exeExt"]
        table["IsSH"] = TemplateFunction(arguments: 0) { _ in true }
        table["catLines"] = SprigFunctions.string { text in
            .string(text.replacingOccurrences(of: "\r\n", with: " ").replacingOccurrences(of: "\n", with: " "))
        }
        table["splitLines"] = SprigFunctions.string { text in
            .list(
                SprigFunctions.goSplit(text.replacingOccurrences(of: "\r\n", with: "\n"), "\n", limit: -1).map(
                    TemplateValue.string
                )
            )
        }
        table["toYaml"] = TemplateFunction(arguments: 1) { .string(TemplateYAML.encode($0[0])) }
        table["mustToYaml"] = table["toYaml"]
        table["fromSlash"] = SprigFunctions.string { .string($0) }
        table["toSlash"] = table["fromSlash"]
        table["FromSlash"] = table["fromSlash"]
        table["ToSlash"] = table["fromSlash"]
        table["shellQuote"] = SprigFunctions.string { .string(ShellQuoting.quote($0)) }
        table["q"] = table["shellQuote"]
        table["splitArgs"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            .list(try ShellQuoting.fields(try arguments[0].requireString()).map(TemplateValue.string))
        }
        table["joinPath"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var parts: [String] = []
            for argument in arguments { parts.append(try argument.requireString()) }
            return .string(GoPath.join(parts))
        }
        table["joinEnv"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var parts: [String] = []
            for argument in arguments { parts.append(try argument.requireString()) }
            return .string(parts.joined(separator: ":"))
        }
        table["joinUrl"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var parts: [String] = []
            for argument in arguments { parts.append(try argument.requireString()) }
            return .string(URLParts.joinPath(parts))
        }
        table["relPath"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let base = try arguments[0].requireString(), target = try arguments[1].requireString()
            guard let relative = GoPath.relative(base, target) else {
                throw TemplateFunctionError("Rel: can't make \(target) relative to \(base)")
            }
            return .string(relative)
        }
        table["absPath"] = SprigFunctions.string { path in
            if path.hasPrefix("/") { return .string(GoPath.clean(path)) }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let directory =
                getcwd(&buffer, buffer.count) != nil
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "/"
            return .string(GoPath.join([directory, path]))
        }
        table["merge"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            var result = try arguments[0].requireMap()
            for argument in arguments.dropFirst() { result.merge(try argument.requireMap()) { _, new in new } }
            return .map(result)
        }
        table["spew"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(arguments.map { Spew.dump($0, indent: "") + "\n" }.joined())
        }
        table["uuid"] = TemplateFunction(arguments: 0) { _ in .string(UUID.random()) }
        table["randIntN"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            let bound = try arguments[0].requireInt()
            guard bound > 0 else { throw TemplateFunctionError("invalid argument to IntN") }
            return .int(Int.random(in: 0..<bound))
        }
    }

    /// Go's `runtime.GOARCH` for this machine.
    static let architecture: String = {
        #if arch(x86_64)
            "amd64"
        #elseif arch(arm64)
            "arm64"
        #elseif arch(i386)
            "386"
        #elseif arch(arm)
            "arm"
        #else
            "unknown"
        #endif
    }()
}

/// Quoting and splitting words as mvdan.cc/sh (go-task's shell) does.
///
/// Threading: stateless.
enum ShellQuoting {
    /// Characters that make a word need quotes.
    static let special: Set<Unicode.Scalar> = [
        "\\", "'", "\"", "`", "$", "|", "&", ";", "<", ">", "(", ")", "*", "?", "[", "#", "~", "=", " ", "{",
    ]
    static let keywords: Set<String> = [
        "!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
        "if",
        "in", "select", "then", "time", "until", "while",
    ]

    /// `syntax.Quote(s, LangBash)`: the word as is when safe; else in single quotes; else in
    /// double quotes (it holds a `'`); else in `$'…'` (it holds something unprintable).
    static func quote(_ text: String) -> String {
        if text.isEmpty { return "''" }
        var needsQuotes = false
        var unprintable = false
        for scalar in text.unicodeScalars {
            if special.contains(scalar) { needsQuotes = true }
            if !isPrintable(scalar) { unprintable = true }
        }
        if !needsQuotes, !unprintable, !keywords.contains(text) { return text }
        if !unprintable {
            if !text.contains("'") { return "'" + text + "'" }
            var output = "\""
            for scalar in text.unicodeScalars {
                if scalar == "\"" || scalar == "\\" || scalar == "$" || scalar == "`" { output += "\\" }
                output.unicodeScalars.append(scalar)
            }
            return output + "\""
        }
        var output = "$'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": output += "\\\\"
            case "'": output += "\\'"
            default:
                if let escape = TextHelpers.controlEscape(scalar) {
                    output += escape
                } else if isPrintable(scalar) {
                    output.unicodeScalars.append(scalar)
                } else if scalar.value < 0x80 {
                    output += "\\x" + String(scalar.value, radix: 16).leftPadded(to: 2)
                } else if scalar.value <= 0xFFFF {
                    output += "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
                } else {
                    output += "\\U" + String(scalar.value, radix: 16).leftPadded(to: 8)
                }
            }
        }
        return output + "'"
    }

    /// Go's `unicode.IsPrint`: graphic characters and the ASCII space, no other spaces.
    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == " " { return true }
        if scalar.properties.isWhitespace { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
            .spaceSeparator:
            return false
        default:
            return true
        }
    }

    /// `shell.Fields(s, nil)`: the words of `text` after quote removal; `$NAME` expands to
    /// nothing, as with go-task's empty environment.
    static func fields(_ text: String) throws(TemplateFunctionError) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var scalars = Array(text.unicodeScalars)[...]
        func expand() {
            // `$NAME` or `${NAME}`: nothing.
            if scalars.first == "{" {
                while let next = scalars.popFirst(), next != "}" {}
            } else {
                while let next = scalars.first,
                    next == "_" || next.properties.isAlphabetic || ("0"..."9").contains(next)
                {
                    scalars.removeFirst()
                }
            }
        }
        while let scalar = scalars.popFirst() {
            switch scalar {
            case " ", "\t", "\n":
                if inWord { words.append(current) }
                current = ""
                inWord = false
            case "'":
                inWord = true
                guard let close = scalars.firstIndex(of: "'") else {
                    throw TemplateFunctionError("reached EOF without closing quote '")
                }
                current.unicodeScalars.append(contentsOf: scalars[..<close])
                scalars = scalars[(close + 1)...]
            case "\"":
                inWord = true
                var closed = false
                while let next = scalars.popFirst() {
                    if next == "\"" {
                        closed = true
                        break
                    }
                    if next == "\\", let escaped = scalars.first, "\"\\$`\n".unicodeScalars.contains(escaped) {
                        scalars.removeFirst()
                        if escaped != "\n" { current.unicodeScalars.append(escaped) }
                    } else if next == "$", let following = scalars.first,
                        following == "{" || following == "_" || following.properties.isAlphabetic
                    {
                        expand()
                    } else {
                        current.unicodeScalars.append(next)
                    }
                }
                guard closed else { throw TemplateFunctionError("reached EOF without closing quote \"") }
            case "\\":
                inWord = true
                if let escaped = scalars.popFirst(), escaped != "\n" { current.unicodeScalars.append(escaped) }
            case "$":
                if let following = scalars.first,
                    following == "{" || following == "_" || following.properties.isAlphabetic
                {
                    inWord = true
                    expand()
                } else {
                    inWord = true
                    current.unicodeScalars.append(scalar)
                }
            default:
                inWord = true
                current.unicodeScalars.append(scalar)
            }
        }
        if inWord, !current.isEmpty || true { words.append(current) }
        return words.filter { !$0.isEmpty }
    }
}

/// go-spew's `Sdump`, for the values templates hold.
///
/// Threading: stateless.
enum Spew {
    static func dump(_ value: TemplateValue, indent: String) -> String {
        switch value {
        case .missing, .null: return "(interface {}) <nil>"
        case .bool(let flag): return "(bool) \(flag)"
        case .int(let number): return "(int) \(number)"
        case .float(let number): return "(float64) \(GoFloat.format(number, verb: "g", precision: nil))"
        case .string(let text): return "(string) (len=\(text.utf8.count)) \(GoFormat.quote(text))"
        case .time(let time): return "(time.Time) \(time.description)"
        case .list(let items):
            let inner = indent + " "
            let body = items.map { inner + dump($0, indent: inner) }.joined(separator: ",\n")
            return "([]interface {}) (len=\(items.count) cap=\(items.count)) {\n" + body + (items.isEmpty ? "" : "\n")
                + indent + "}"
        case .map(let entries):
            let inner = indent + " "
            let body = entries.keys.sorted().map {
                inner + dump(.string($0), indent: inner) + ": " + dump(entries[$0]!, indent: inner)
            }
            .joined(separator: ",\n")
            return "(map[string]interface {}) (len=\(entries.count)) {\n" + body + (entries.isEmpty ? "" : "\n")
                + indent + "}"
        }
    }
}

/// go-task's shell quoting (`{{shellQuote}}`), for the host's own use (`{{.CLI_ARGS}}`).
///
/// Threading: stateless.
public enum GoShell {
    /// `word` quoted as go-task quotes it: as is when safe, else in single, double or `$'…'` quotes.
    public static func quote(_ word: String) -> String { ShellQuoting.quote(word) }
}
