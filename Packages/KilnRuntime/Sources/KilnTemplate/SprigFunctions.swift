#if canImport(Glibc)
    import Glibc
#endif

/// slim-sprig's functions, the set go-task ships: strings, lists, maps, numbers, defaults, JSON,
/// dates, paths, encodings, regular expressions, reflection.
///
/// Where sprig's result depends on Go's map order (`keys`, `values`), kiln sorts by key, so a
/// command's text — and its signature — doesn't change from run to run.
///
/// Threading: stateless.
enum SprigFunctions {
    typealias Table = [String: TemplateFunction]

    static func register(into table: inout Table) {
        registerStrings(into: &table)
        registerLists(into: &table)
        registerMaps(into: &table)
        registerNumbers(into: &table)
        registerDefaults(into: &table)
        registerDates(into: &table)
        registerPathsAndEncodings(into: &table)
        registerRegularExpressions(into: &table)
    }

    /// A function of one string.
    static func string(_ body: @escaping @Sendable (String) -> TemplateValue) -> TemplateFunction {
        TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            body(try arguments[0].requireString())
        }
    }

    /// A function of two strings.
    static func strings(_ body: @escaping @Sendable (String, String) -> TemplateValue) -> TemplateFunction {
        TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            body(try arguments[0].requireString(), try arguments[1].requireString())
        }
    }

    // MARK: Strings

    static func registerStrings(into table: inout Table) {
        table["hello"] = TemplateFunction(arguments: 0) { _ in "Hello!" }
        table["trim"] = string { .string($0.trimmingGoSpace()) }
        table["upper"] = string { .string($0.uppercased()) }
        table["lower"] = string { .string($0.lowercased()) }
        table["title"] = string { .string(title($0)) }
        table["substr"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            let start = try arguments[0].requireInt(), end = try arguments[1].requireInt()
            let bytes = Array(try arguments[2].requireString().utf8)
            func slice(_ range: Range<Int>) throws(TemplateFunctionError) -> TemplateValue {
                guard range.lowerBound >= 0, range.upperBound <= bytes.count else {
                    throw TemplateFunctionError("slice bounds out of range [\(range.lowerBound):\(range.upperBound)]")
                }
                return .string(String(decoding: bytes[range], as: UTF8.self))
            }
            if start < 0 { return try slice(0..<end) }
            if end < 0 || end > bytes.count { return try slice(start..<bytes.count) }
            guard start <= end else { throw TemplateFunctionError("slice bounds out of range [\(start):\(end)]") }
            return try slice(start..<end)
        }
        table["repeat"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let count = try arguments[0].requireInt()
            let text = try arguments[1].requireString()
            guard count >= 0 else { throw TemplateFunctionError("strings: negative Repeat count") }
            guard count * text.utf8.count <= TextTemplate.outputLimit else {
                throw TemplateFunctionError(
                    "the result would be over kiln's limit of \(TextTemplate.outputLimit) bytes"
                )
            }
            return .string(String(repeating: text, count: count))
        }
        table["trimAll"] = strings { .string($1.trimmingCharacters(in: $0)) }
        table["trimall"] = table["trimAll"]
        table["trimSuffix"] = strings { suffix, text in
            .string(
                text.bytesHaveSuffix(suffix)
                    ? String(decoding: text.utf8.dropLast(suffix.utf8.count), as: UTF8.self) : text
            )
        }
        table["trimPrefix"] = strings { prefix, text in
            .string(
                text.bytesHavePrefix(prefix)
                    ? String(decoding: text.utf8.dropFirst(prefix.utf8.count), as: UTF8.self) : text
            )
        }
        table["contains"] = strings { part, text in .bool(text.bytesContain(part)) }
        table["hasPrefix"] = strings { prefix, text in .bool(text.bytesHavePrefix(prefix)) }
        table["hasSuffix"] = strings { suffix, text in .bool(text.bytesHaveSuffix(suffix)) }
        table["quote"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(
                arguments.filter { $0 != .null && $0 != .missing }.map { GoFormat.quote($0.sprigString) }.joined(
                    separator: " "
                )
            )
        }
        table["squote"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(arguments.filter { $0 != .null && $0 != .missing }.map { "'\($0.printed)'" }.joined(separator: " "))
        }
        table["cat"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .string(arguments.filter { $0 != .null && $0 != .missing }.map(\.printed).joined(separator: " "))
        }
        table["indent"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let pad = String(repeating: " ", count: max(0, try arguments[0].requireInt()))
            return .string(pad + (try arguments[1].requireString()).replacingOccurrences(of: "\n", with: "\n" + pad))
        }
        table["nindent"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let pad = String(repeating: " ", count: max(0, try arguments[0].requireInt()))
            return .string(
                "\n" + pad + (try arguments[1].requireString()).replacingOccurrences(of: "\n", with: "\n" + pad)
            )
        }
        table["replace"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            let old = try arguments[0].requireString(), new = try arguments[1].requireString()
            let text = try arguments[2].requireString()
            if old.isEmpty {
                // Go inserts `new` before every character and at the end.
                return .string(new + text.map { String($0) + new }.joined())
            }
            return .string(text.replacingOccurrences(of: old, with: new))
        }
        table["plural"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            let one = try arguments[0].requireString(), many = try arguments[1].requireString()
            return .string(try arguments[2].requireInt() == 1 ? one : many)
        }
        table["trunc"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let count = try arguments[0].requireInt()
            let bytes = Array(try arguments[1].requireString().utf8)
            if count < 0, bytes.count + count > 0 {
                return .string(String(decoding: bytes[(bytes.count + count)...], as: UTF8.self))
            }
            if count >= 0, bytes.count > count { return .string(String(decoding: bytes[..<count], as: UTF8.self)) }
            return .string(String(decoding: bytes, as: UTF8.self))
        }
        table["toString"] = TemplateFunction(arguments: 1) { .string($0[0].sprigString) }
        table["toStrings"] = TemplateFunction(arguments: 1) { .list($0[0].sprigStrings.map(TemplateValue.string)) }
        table["join"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .string(arguments[1].sprigStrings.joined(separator: try arguments[0].requireString()))
        }
        table["split"] = strings { separator, text in
            .map(
                Dictionary(
                    uniqueKeysWithValues: goSplit(text, separator, limit: -1).enumerated().map {
                        ("_\($0.offset)", .string($0.element))
                    }
                )
            )
        }
        table["splitn"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            let separator = try arguments[0].requireString(), limit = try arguments[1].requireInt()
            let parts = goSplit(try arguments[2].requireString(), separator, limit: limit)
            return .map(
                Dictionary(uniqueKeysWithValues: parts.enumerated().map { ("_\($0.offset)", .string($0.element)) })
            )
        }
        table["splitList"] = strings { separator, text in
            .list(goSplit(text, separator, limit: -1).map(TemplateValue.string))
        }
        table["sortAlpha"] = TemplateFunction(arguments: 1) { arguments in
            guard case .list = arguments[0] else { return .list([.string(arguments[0].sprigString)]) }
            return .list(
                arguments[0].sprigStrings.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.map(
                    TemplateValue.string
                )
            )
        }
        table["atoi"] = string { .int(Int($0) ?? 0) }
        table["int"] = TemplateFunction(arguments: 1) { .int($0[0].sprigInt) }
        table["int64"] = TemplateFunction(arguments: 1) { .int($0[0].sprigInt) }
        table["float64"] = TemplateFunction(arguments: 1) { .float($0[0].sprigFloat) }
        table["toDecimal"] = TemplateFunction(arguments: 1) { .int(Int(GoBuiltins.sprint([$0[0]]), radix: 8) ?? 0) }
        table["seq"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var numbers: [Int] = []
            for argument in arguments { numbers.append(try argument.requireInt()) }
            return .string(try sequence(numbers).map(String.init).joined(separator: " "))
        }
        table["fail"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            throw TemplateFunctionError(try arguments[0].requireString())
        }
    }

    static func title(_ text: String) -> String {
        var result = ""
        var previous: Character = " "
        for character in text {
            let startsWord =
                previous.isWhitespace || !(previous.isLetter || previous.isNumber || previous == "_" || previous == "'")
            result += startsWord ? character.uppercased() : String(character)
            previous = character
        }
        return result
    }

    /// Go's `strings.SplitN` (`limit` < 0: all), matching bytes.
    static func goSplit(_ text: String, _ separator: String, limit: Int) -> [String] {
        if limit == 0 { return [] }
        if separator.isEmpty {
            let characters = text.unicodeScalars.map(String.init)
            if limit > 0, characters.count > limit {
                return Array(characters[..<(limit - 1)]) + [characters[(limit - 1)...].joined()]
            }
            return characters
        }
        let bytes = Array(text.utf8), needle = Array(separator.utf8)
        var parts: [String] = []
        var start = 0
        var index = 0
        while index + needle.count <= bytes.count, limit < 0 || parts.count < limit - 1 {
            if bytes[index] == needle[0], bytes[index..<index + needle.count].elementsEqual(needle) {
                parts.append(String(decoding: bytes[start..<index], as: UTF8.self))
                index += needle.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(String(decoding: bytes[start...], as: UTF8.self))
        return parts
    }

    static func sequence(_ numbers: [Int]) throws(TemplateFunctionError) -> [Int] {
        func until(_ start: Int, _ stop: Int, _ step: Int) throws(TemplateFunctionError) -> [Int] {
            guard step != 0 else { return [] }
            let count = (stop - start) / step
            guard count <= TextTemplate.listLimit else {
                throw TemplateFunctionError("more than kiln's limit of \(TextTemplate.listLimit) numbers")
            }
            if stop < start { return step >= 0 ? [] : Array(stride(from: start, to: stop, by: step)) }
            return step <= 0 ? [] : Array(stride(from: start, to: stop, by: step))
        }
        switch numbers.count {
        case 0: return []
        case 1:
            let increment = numbers[0] < 1 ? -1 : 1
            return try until(1, numbers[0] + increment, increment)
        case 2:
            let step = numbers[1] < numbers[0] ? -1 : 1
            return try until(numbers[0], numbers[1] + step, step)
        case 3:
            let increment = numbers[2] < numbers[0] ? -1 : 1
            if numbers[2] < numbers[0], numbers[1] > 0 { return [] }
            return try until(numbers[0], numbers[2] + increment, numbers[1])
        default: throw TemplateFunctionError("seq takes 0 to 3 arguments")
        }
    }

    // MARK: Lists

    static func listArgument(_ value: TemplateValue, _ function: String) throws(TemplateFunctionError)
        -> [TemplateValue]
    {
        switch value {
        case .list(let items): return items
        case .missing, .null:
            throw TemplateFunctionError("reflect: call of reflect.Value.Type on zero Value (\(function) of nil)")
        default: throw TemplateFunctionError("Cannot find \(function) on type \(value.goKindName)")
        }
    }

    static func registerLists(into table: inout Table) {
        table["list"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .list(arguments.map { $0 == .missing ? .null : $0 })
        }
        table["tuple"] = table["list"]
        for name in ["append", "push", "mustAppend", "mustPush"] {
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                .list(try listArgument(arguments[0], "push") + [arguments[1]])
            }
        }
        for name in ["prepend", "mustPrepend"] {
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                .list([arguments[1]] + (try listArgument(arguments[0], "prepend")))
            }
        }
        let listFunctions: [(String, @Sendable ([TemplateValue]) -> TemplateValue)] = [
            ("first", { items in items.first ?? .null }),
            ("last", { $0.last ?? .null }),
            ("rest", { $0.isEmpty ? .null : .list(Array($0.dropFirst())) }),
            ("initial", { $0.isEmpty ? .null : .list(Array($0.dropLast())) }),
            ("reverse", { .list($0.reversed()) }),
            ("compact", { .list($0.filter(\.isTruthy)) }),
            (
                "uniq",
                { items in
                    var seen: [TemplateValue] = []
                    for item in items where !seen.contains(item) { seen.append(item) }
                    return .list(seen)
                }
            ),
        ]
        for (name, body) in listFunctions {
            let function = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
                body(try listArgument(arguments[0], name))
            }
            table[name] = function
            table["must" + name.prefix(1).uppercased() + name.dropFirst()] = function
        }
        for name in ["without", "mustWithout"] {
            table[name] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
                let omitted = arguments.dropFirst()
                return .list(try listArgument(arguments[0], "without").filter { !omitted.contains($0) })
            }
        }
        for name in ["has", "mustHas"] {
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                if arguments[1] == .null || arguments[1] == .missing { return false }
                return .bool(try listArgument(arguments[1], "has").contains(arguments[0]))
            }
        }
        for name in ["slice", "mustSlice"] {
            table[name] = TemplateFunction(arguments: 1, to: 3) { arguments throws(TemplateFunctionError) in
                guard case .list(let items) = arguments[0] else {
                    throw TemplateFunctionError("list should be type of slice or array but \(arguments[0].goKindName)")
                }
                if items.isEmpty { return .null }
                let start = arguments.count > 1 ? arguments[1].sprigInt : 0
                let end = arguments.count > 2 ? arguments[2].sprigInt : items.count
                guard start >= 0, start <= end, end <= items.count else {
                    throw TemplateFunctionError("reflect: slice index out of range")
                }
                return .list(Array(items[start..<end]))
            }
        }
        table["concat"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var result: [TemplateValue] = []
            for argument in arguments {
                guard case .list(let items) = argument else {
                    throw TemplateFunctionError("Cannot concat type \(argument.goKindName) as list")
                }
                result += items
            }
            return .list(result)
        }
        for name in ["chunk", "mustChunk"] {
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                let size = try arguments[0].requireInt()
                let items = try listArgument(arguments[1], "chunk")
                guard size > 0 else { return .list([]) }
                return .list(
                    stride(from: 0, to: items.count, by: size).map {
                        .list(Array(items[$0..<min($0 + size, items.count)]))
                    }
                )
            }
        }
        table["until"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            let count = try arguments[0].requireInt()
            guard abs(count) <= TextTemplate.listLimit else {
                throw TemplateFunctionError("more than kiln's limit of numbers")
            }
            return .list(stride(from: 0, to: count, by: count < 0 ? -1 : 1).map(TemplateValue.int))
        }
        table["untilStep"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            let start = try arguments[0].requireInt(), stop = try arguments[1].requireInt(),
                step = try arguments[2].requireInt()
            guard step != 0, (stop < start) == (step < 0) else { return .list([]) }
            guard abs((stop - start) / step) <= TextTemplate.listLimit else {
                throw TemplateFunctionError("more than kiln's limit of numbers")
            }
            return .list(stride(from: start, to: stop, by: step).map(TemplateValue.int))
        }
    }

    // MARK: Maps

    static func registerMaps(into table: inout Table) {
        table["dict"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            var result: [String: TemplateValue] = [:]
            var index = 0
            while index < arguments.count {
                let key = arguments[index].sprigString
                result[key] = index + 1 < arguments.count ? arguments[index + 1] : ""
                index += 2
            }
            return .map(result)
        }
        table["get"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            try arguments[0].requireMap()[try arguments[1].requireString()] ?? ""
        }
        table["set"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            var entries = try arguments[0].requireMap()
            entries[try arguments[1].requireString()] = arguments[2]
            return .map(entries)
        }
        table["unset"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            var entries = try arguments[0].requireMap()
            entries[try arguments[1].requireString()] = nil
            return .map(entries)
        }
        table["hasKey"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(try arguments[0].requireMap()[try arguments[1].requireString()] != nil)
        }
        table["pluck"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            let key = try arguments[0].requireString()
            var result: [TemplateValue] = []
            for argument in arguments.dropFirst() {
                if let value = try argument.requireMap()[key] { result.append(value) }
            }
            return .list(result)
        }
        table["keys"] = TemplateFunction(arguments: 0, to: nil) { arguments throws(TemplateFunctionError) in
            var result: [TemplateValue] = []
            for argument in arguments { result += try argument.requireMap().keys.sorted().map(TemplateValue.string) }
            return .list(result)
        }
        table["values"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            let entries = try arguments[0].requireMap()
            return .list(entries.keys.sorted().map { entries[$0]! })
        }
        table["pick"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            let entries = try arguments[0].requireMap()
            var result: [String: TemplateValue] = [:]
            for key in arguments.dropFirst() {
                let name = try key.requireString()
                if let value = entries[name] { result[name] = value }
            }
            return .map(result)
        }
        table["omit"] = TemplateFunction(arguments: 1, to: nil) { arguments throws(TemplateFunctionError) in
            var entries = try arguments[0].requireMap()
            for key in arguments.dropFirst() { entries[try key.requireString()] = nil }
            return .map(entries)
        }
        table["dig"] = TemplateFunction(arguments: 3, to: nil) { arguments throws(TemplateFunctionError) in
            var current = try arguments[arguments.count - 1].requireMap()
            let fallback = arguments[arguments.count - 2]
            let keys = arguments[..<(arguments.count - 2)]
            for (position, key) in keys.enumerated() {
                guard let value = current[try key.requireString()] else { return fallback }
                if position == keys.count - 1 { return value }
                current = try value.requireMap()
            }
            return fallback
        }
        table["deepEqual"] = TemplateFunction(arguments: 2) { .bool($0[0] == $0[1]) }
        table["typeOf"] = TemplateFunction(arguments: 1) { .string($0[0].goTypeName) }
        table["typeIs"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(try arguments[0].requireString() == arguments[1].goTypeName)
        }
        table["typeIsLike"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let target = try arguments[0].requireString()
            return .bool(target == arguments[1].goTypeName || "*" + target == arguments[1].goTypeName)
        }
        table["kindOf"] = TemplateFunction(arguments: 1) { .string($0[0].goKindName) }
        table["kindIs"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .bool(try arguments[0].requireString() == arguments[1].goKindName)
        }
    }

    // MARK: Numbers

    static func registerNumbers(into table: inout Table) {
        table["add"] = TemplateFunction(arguments: 0, to: nil) { arguments in
            .int(arguments.reduce(0) { $0 &+ $1.sprigInt })
        }
        table["add1"] = TemplateFunction(arguments: 1) { .int($0[0].sprigInt &+ 1) }
        table["sub"] = TemplateFunction(arguments: 2) { .int($0[0].sprigInt &- $0[1].sprigInt) }
        table["mul"] = TemplateFunction(arguments: 1, to: nil) { arguments in
            .int(arguments.dropFirst().reduce(arguments[0].sprigInt) { $0 &* $1.sprigInt })
        }
        table["div"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let divisor = arguments[1].sprigInt
            guard divisor != 0 else { throw TemplateFunctionError("runtime error: integer divide by zero") }
            return .int(arguments[0].sprigInt / divisor)
        }
        table["mod"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let divisor = arguments[1].sprigInt
            guard divisor != 0 else { throw TemplateFunctionError("runtime error: integer divide by zero") }
            return .int(arguments[0].sprigInt % divisor)
        }
        table["max"] = TemplateFunction(arguments: 1, to: nil) { arguments in .int(arguments.map(\.sprigInt).max()!) }
        table["biggest"] = table["max"]
        table["min"] = TemplateFunction(arguments: 1, to: nil) { arguments in .int(arguments.map(\.sprigInt).min()!) }
        table["maxf"] = TemplateFunction(arguments: 1, to: nil) { arguments in
            .float(arguments.map(\.sprigFloat).max()!)
        }
        table["minf"] = TemplateFunction(arguments: 1, to: nil) { arguments in
            .float(arguments.map(\.sprigFloat).min()!)
        }
        table["floor"] = TemplateFunction(arguments: 1) { .float($0[0].sprigFloat.rounded(.down)) }
        table["ceil"] = TemplateFunction(arguments: 1) { .float($0[0].sprigFloat.rounded(.up)) }
        table["round"] = TemplateFunction(arguments: 2, to: 3) { arguments throws(TemplateFunctionError) in
            let roundOn = arguments.count > 2 ? arguments[2].sprigFloat : 0.5
            let power = pow(10, Double(try arguments[1].requireInt()))
            let digit = power * arguments[0].sprigFloat
            let fraction = digit - digit.rounded(.towardZero)
            return .float((fraction >= roundOn ? digit.rounded(.up) : digit.rounded(.down)) / power)
        }
        table["randInt"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            let low = try arguments[0].requireInt(), high = try arguments[1].requireInt()
            guard high > low else { throw TemplateFunctionError("invalid argument to Intn") }
            return .int(Int.random(in: low..<high))
        }
    }

    // MARK: Defaults and JSON

    static func registerDefaults(into table: inout Table) {
        table["default"] = TemplateFunction(arguments: 1, to: nil) { arguments in
            arguments.count < 2 || arguments[1].isEmpty ? arguments[0] : arguments[1]
        }
        table["empty"] = TemplateFunction(arguments: 1) { .bool($0[0].isEmpty) }
        table["coalesce"] = TemplateFunction(arguments: 0, to: nil) { $0.first(where: \.isTruthy) ?? .null }
        table["all"] = TemplateFunction(arguments: 0, to: nil) { .bool($0.allSatisfy(\.isTruthy)) }
        table["any"] = TemplateFunction(arguments: 0, to: nil) { .bool($0.contains(where: \.isTruthy)) }
        table["ternary"] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
            guard case .bool(let condition) = arguments[2] else {
                throw TemplateFunctionError("wrong type for value; expected bool; got \(arguments[2].goTypeName)")
            }
            return condition ? arguments[0] : arguments[1]
        }
        table["fromJson"] = string { (try? TemplateJSON.decode($0)) ?? .null }
        table["mustFromJson"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            try TemplateJSON.decode(try arguments[0].requireString())
        }
        table["toJson"] = TemplateFunction(arguments: 1) {
            .string(TemplateJSON.encode($0[0], escapesHTML: true, indent: nil))
        }
        table["mustToJson"] = table["toJson"]
        table["toPrettyJson"] = TemplateFunction(arguments: 1) {
            .string(TemplateJSON.encode($0[0], escapesHTML: true, indent: "  "))
        }
        table["mustToPrettyJson"] = table["toPrettyJson"]
        table["toRawJson"] = TemplateFunction(arguments: 1) {
            .string(TemplateJSON.encode($0[0], escapesHTML: false, indent: nil))
        }
        table["mustToRawJson"] = table["toRawJson"]
    }

    // MARK: Dates

    static func time(_ value: TemplateValue) -> TemplateTime {
        switch value {
        case .time(let time): time
        case .int(let seconds): TemplateTime.local(seconds: seconds)
        default: TemplateTime.now()
        }
    }

    static func inZone(_ time: TemplateTime, _ zone: String) -> TemplateTime {
        switch zone {
        case "Local": return TemplateTime.local(seconds: time.seconds, nanoseconds: time.nanoseconds)
        default: return TemplateTime(seconds: time.seconds, nanoseconds: time.nanoseconds, offset: 0, zone: "UTC")
        }
    }

    static func registerDates(into table: inout Table) {
        table["now"] = TemplateFunction(arguments: 0) { _ in .time(TemplateTime.now()) }
        table["date"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .string(inZone(time(arguments[1]), "Local").format(try arguments[0].requireString()))
        }
        for name in ["dateInZone", "date_in_zone"] {
            table[name] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
                .string(
                    inZone(time(arguments[1]), try arguments[2].requireString()).format(
                        try arguments[0].requireString()
                    )
                )
            }
        }
        table["htmlDate"] = TemplateFunction(arguments: 1) {
            .string(inZone(time($0[0]), "Local").format("2006-01-02"))
        }
        table["htmlDateInZone"] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
            .string(inZone(time(arguments[0]), try arguments[1].requireString()).format("2006-01-02"))
        }
        for name in ["toDate", "mustToDate"] {
            let must = name.hasPrefix("must")
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                let layout = try arguments[0].requireString(), text = try arguments[1].requireString()
                let local = TemplateTime.now()
                if let parsed = TemplateTime.parse(text, layout: layout, offset: local.offset, zone: local.zone) {
                    return .time(parsed)
                }
                if must {
                    throw TemplateFunctionError(
                        "parsing time \(GoFormat.quote(text)) as \(GoFormat.quote(layout)): cannot parse"
                    )
                }
                return .time(TemplateTime(seconds: -62_135_596_800))
            }
        }
        table["unixEpoch"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            guard case .time(let time) = arguments[0] else {
                throw TemplateFunctionError("wrong type for value; expected time.Time; got \(arguments[0].goTypeName)")
            }
            return .string(String(time.seconds))
        }
        for name in ["dateModify", "date_modify", "mustDateModify", "must_date_modify"] {
            let must = name.hasPrefix("must")
            table[name] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                guard case .time(var time) = arguments[1] else {
                    throw TemplateFunctionError(
                        "wrong type for value; expected time.Time; got \(arguments[1].goTypeName)"
                    )
                }
                guard let nanoseconds = GoDuration.parse(try arguments[0].requireString()) else {
                    if must {
                        throw TemplateFunctionError(
                            "time: invalid duration \(GoFormat.quote(try arguments[0].requireString()))"
                        )
                    }
                    return .time(time)
                }
                let total = time.nanoseconds + nanoseconds
                time.seconds += total / 1_000_000_000 - (total % 1_000_000_000 < 0 ? 1 : 0)
                time.nanoseconds = ((total % 1_000_000_000) + 1_000_000_000) % 1_000_000_000
                return .time(time)
            }
        }
        table["ago"] = TemplateFunction(arguments: 1) { arguments in
            let now = TemplateTime.now()
            return .string(GoDuration.format((now.seconds - time(arguments[0]).seconds) * 1_000_000_000))
        }
        table["duration"] = TemplateFunction(arguments: 1) { arguments in
            // sprig reads a string or an int64; a template's integers are Go ints, which it
            // reads as 0.
            let seconds: Int =
                switch arguments[0] {
                case .string(let text): Int(text) ?? 0
                default: 0
                }
            return .string(GoDuration.format(seconds &* 1_000_000_000))
        }
        table["durationRound"] = TemplateFunction(arguments: 1) { arguments in
            let nanoseconds: Int =
                switch arguments[0] {
                case .string(let text): GoDuration.parse(text) ?? 0
                case .int(let value): value
                case .time(let time): (TemplateTime.now().seconds - time.seconds) * 1_000_000_000
                default: 0
                }
            let magnitude = nanoseconds.magnitude
            let second: UInt = 1_000_000_000
            for (unit, suffix) in [
                (second * 86_400 * 365, "y"), (second * 86_400 * 30, "mo"), (second * 86_400, "d"),
                (second * 3600, "h"), (second * 60, "m"), (second, "s"),
            ]
            where magnitude > unit {
                return .string(String(magnitude / unit) + suffix)
            }
            return "0s"
        }
    }

    // MARK: Paths and encodings

    static func registerPathsAndEncodings(into table: inout Table) {
        table["base"] = string { .string(GoPath.base($0)) }
        table["dir"] = string { .string(GoPath.directory($0)) }
        table["clean"] = string { .string(GoPath.clean($0)) }
        table["ext"] = string { .string(GoPath.extension($0)) }
        table["isAbs"] = string { .bool($0.hasPrefix("/")) }
        table["osBase"] = table["base"]
        table["osDir"] = table["dir"]
        table["osClean"] = table["clean"]
        table["osExt"] = table["ext"]
        table["osIsAbs"] = table["isAbs"]
        table["b64enc"] = string { .string(Base64.encode(Array($0.utf8))) }
        table["b64dec"] = string { text in
            guard let bytes = Base64.decode(text) else { return .string("illegal base64 data at input byte 0") }
            return .string(String(decoding: bytes, as: UTF8.self))
        }
        table["b32enc"] = string { .string(Base32.encode(Array($0.utf8))) }
        table["b32dec"] = string { text in
            guard let bytes = Base32.decode(text) else { return .string("illegal base32 data at input byte 0") }
            return .string(String(decoding: bytes, as: UTF8.self))
        }
        table["adler32sum"] = string { text in
            var a: UInt32 = 1, b: UInt32 = 0
            for byte in text.utf8 {
                a = (a + UInt32(byte)) % 65_521
                b = (b + a) % 65_521
            }
            return .string(String(b << 16 | a))
        }
        table["getHostByName"] = SprigFunctions.string { .string(hostAddress($0)) }
        table["env"] = string { name in .string(getenv(name).map { String(cString: $0) } ?? "") }
        table["expandenv"] = string { .string(expandEnvironment($0)) }
        table["urlParse"] = string { .map(URLParts.parse($0)) }
        table["urlJoin"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            .string(URLParts.join(try arguments[0].requireMap()))
        }
    }

    /// The first IPv4 address `name` resolves to (`/etc/hosts` or DNS), or "" (sprig's
    /// `getHostByName`).
    static func hostAddress(_ name: String) -> String {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return "" }
        defer { freeaddrinfo(list) }
        guard let address = first.pointee.ai_addr else { return "" }
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
            var raw = pointer.pointee.sin_addr
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)) != nil else { return "" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `os.ExpandEnv`: `$NAME` and `${NAME}` replaced by the environment's values.
    static func expandEnvironment(_ text: String) -> String {
        var output = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            rest = rest[rest.index(after: dollar)...]
            // The shell's one-character names (`$*`, `$#`, `$1`, …) are names to os.ExpandEnv too.
            var name: Substring?
            if let first = rest.first, "*#$@!?-".contains(first) || first.isNumber {
                name = rest.prefix(1)
                rest = rest.dropFirst()
            } else {
                name = TextHelpers.dollarName(&rest)
            }
            guard let name else {
                output += "$"
                continue
            }
            output += getenv(String(name)).map { String(cString: $0) } ?? ""
        }
        return output + rest
    }

    // MARK: Regular expressions

    /// `pattern` compiled as Go's `regexp.Compile` does (``GoRegexp``).
    static func regex(_ pattern: String) throws(TemplateFunctionError) -> GoRegexp {
        do {
            return try GoRegexp(pattern)
        } catch {
            throw TemplateFunctionError("error parsing regexp: \(error)")
        }
    }

    static func registerRegularExpressions(into table: inout Table) {
        for must in [false, true] {
            func name(_ base: String) -> String {
                must ? "must" + base.prefix(1).uppercased() + base.dropFirst() : base
            }
            table[name("regexMatch")] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                let pattern = try arguments[0].requireString(), text = try arguments[1].requireString()
                // Only regexMatch takes a pattern Go can't compile as no match: sprig's other
                // functions compile with MustCompile, so a bad pattern fails them too.
                guard let expression = must ? try regex(pattern) : try? regex(pattern) else { return false }
                return .bool(try expression.firstMatch(in: Array(text.unicodeScalars)) != nil)
            }
            table[name("regexFindAll")] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
                let pattern = try arguments[0].requireString(), text = try arguments[1].requireString()
                let limit = try arguments[2].requireInt()
                let expression = try regex(pattern)
                let scalars = Array(text.unicodeScalars)
                return .list(
                    try expression.allMatches(in: scalars, limit: limit).map {
                        .string(GoRegexp.group(0, of: $0, in: scalars) ?? "")
                    }
                )
            }
            table[name("regexFind")] = TemplateFunction(arguments: 2) { arguments throws(TemplateFunctionError) in
                let pattern = try arguments[0].requireString(), text = try arguments[1].requireString()
                let expression = try regex(pattern)
                let scalars = Array(text.unicodeScalars)
                return .string(
                    try expression.firstMatch(in: scalars).flatMap { GoRegexp.group(0, of: $0, in: scalars) } ?? ""
                )
            }
            for literal in [false, true] {
                table[name(literal ? "regexReplaceAllLiteral" : "regexReplaceAll")] = TemplateFunction(arguments: 3) {
                    arguments throws(TemplateFunctionError) in
                    let pattern = try arguments[0].requireString(), text = try arguments[1].requireString()
                    let replacement = try arguments[2].requireString()
                    let expression = try regex(pattern)
                    let scalars = Array(text.unicodeScalars)
                    return .string(
                        try expression.replacingAll(in: scalars) { match in
                            literal
                                ? replacement
                                : expandReplacement(replacement, match: match, of: expression, in: scalars)
                        }
                    )
                }
            }
            table[name("regexSplit")] = TemplateFunction(arguments: 3) { arguments throws(TemplateFunctionError) in
                let pattern = try arguments[0].requireString(), text = try arguments[1].requireString()
                let limit = try arguments[2].requireInt()
                let expression = try regex(pattern)
                return try split(text, at: expression, limit: limit)
            }
        }
        table["regexQuoteMeta"] = string { text in
            .string(String(text.flatMap { "\\.+*?()|[]{}^$".contains($0) ? ["\\", $0] : [$0] }))
        }
    }

    /// Go's `Regexp.Split`: the pieces of `text` between matches, `limit` of them at most (`< 0`:
    /// all; `0`: none).
    static func split(_ text: String, at expression: GoRegexp, limit: Int) throws(TemplateFunctionError)
        -> TemplateValue
    {
        if limit == 0 { return .list([]) }
        let scalars = Array(text.unicodeScalars)
        func piece(_ range: Range<Int>) -> TemplateValue {
            .string(String(String.UnicodeScalarView(scalars[range])))
        }
        if scalars.isEmpty { return .list([.string("")]) }
        var pieces: [TemplateValue] = []
        var begin = 0
        var end = 0
        for match in try expression.allMatches(in: scalars, limit: limit) {
            guard let start = match[0], let matchEnd = match[1] else { continue }
            if limit > 0, pieces.count == limit - 1 { break }
            end = start
            if matchEnd != 0 { pieces.append(piece(begin..<end)) }
            begin = matchEnd
        }
        if end != scalars.count { pieces.append(piece(begin..<scalars.count)) }
        return .list(pieces)
    }

    /// Go's `Regexp.Expand` template: `$1`, `${1}`, `${name}`, `$$`.
    static func expandReplacement(
        _ template: String,
        match: GoRegexp.Match,
        of expression: GoRegexp,
        in text: [Unicode.Scalar]
    ) -> String {
        var output = ""
        var rest = Substring(template)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            rest = rest[rest.index(after: dollar)...]
            if rest.first == "$" {
                output += "$"
                rest.removeFirst()
                continue
            }
            let name = String(TextHelpers.dollarName(&rest) ?? "")
            // A number is that group; a name, the first group of that name that took part.
            let groups =
                Int(name).map { [$0] } ?? expression.groupNames.indices.filter { expression.groupNames[$0] == name }
            if let text = groups.lazy.compactMap({ GoRegexp.group($0, of: match, in: text) }).first { output += text }
        }
        return output + rest
    }
}

extension String {
    /// Go's `strings.HasPrefix`: bytes, not characters (`"\r\n"` ends with `"\n"`).
    func bytesHavePrefix(_ prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }

    /// Go's `strings.HasSuffix`.
    func bytesHaveSuffix(_ suffix: String) -> Bool { utf8.reversed().starts(with: suffix.utf8.reversed()) }

    /// Go's `strings.Contains`.
    func bytesContain(_ part: String) -> Bool {
        let needle = Array(part.utf8)
        guard !needle.isEmpty else { return true }
        let bytes = Array(utf8)
        guard bytes.count >= needle.count else { return false }
        return (0...(bytes.count - needle.count)).contains {
            bytes[$0] == needle[0] && bytes[$0..<$0 + needle.count].elementsEqual(needle)
        }
    }

    /// Go's `strings.TrimSpace`.
    func trimmingGoSpace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[first...last])
    }

    /// Go's `strings.Trim(s, cutset)`.
    func trimmingCharacters(in cutset: String) -> String {
        let set = Set(cutset.unicodeScalars)
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !set.contains($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !set.contains($0) })!
        return String(scalars[first...last])
    }
}
