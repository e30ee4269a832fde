/// Runs a parsed template: Go's `text/template` execution rules over ``TemplateValue``s.
///
/// Threading: a value used by one thread for one render.
struct TemplateEvaluator {
    let template: TextTemplate
    let root: TemplateValue
    let missing: TextTemplate.MissingValues
    var output = ""
    /// `$variables`, innermost last; `$` is the data.
    private var variables: [(name: String, value: TemplateValue)]
    private var iterations = 0
    private var nesting = 0

    init(template: TextTemplate, data: TemplateValue, missing: TextTemplate.MissingValues) {
        self.template = template
        self.root = data
        self.missing = missing
        variables = [("$", data)]
    }

    /// What ended a list early.
    private enum Flow { case normal, breakLoop, continueLoop }

    mutating func run(_ nodes: [TemplateNode]) throws(TemplateError) {
        _ = try run(nodes, dot: root)
    }

    /// The value of one pipeline with the data as dot.
    mutating func value(of pipeline: TemplatePipeline) throws(TemplateError) -> TemplateValue {
        try evaluate(pipeline, dot: root)
    }

    private mutating func run(_ nodes: [TemplateNode], dot: TemplateValue) throws(TemplateError) -> Flow {
        for node in nodes {
            switch node {
            case .text(let text):
                output += text
                guard output.utf8.count <= TextTemplate.outputLimit else {
                    throw TemplateError(
                        "the template's output is over kiln's limit of \(TextTemplate.outputLimit) bytes",
                        at: 0
                    )
                }
            case .action(let pipeline):
                let value = try evaluate(pipeline, dot: dot)
                if pipeline.variables.isEmpty { try print(value, at: pipeline.offset) }
            case .conditional(let kind, let pipeline, let body, let otherwise):
                let mark = variables.count
                defer { variables.removeLast(variables.count - mark) }
                let value = try evaluate(pipeline, dot: dot)
                let flow: Flow
                if value.isTruthy {
                    flow = try run(body, dot: kind == .with ? value : dot)
                } else if let otherwise {
                    flow = try run(otherwise, dot: dot)
                } else {
                    flow = .normal
                }
                if flow != .normal { return flow }
            case .range(let pipeline, let body, let otherwise):
                let flow = try runRange(pipeline, body: body, otherwise: otherwise, dot: dot)
                if flow != .normal { return flow }
            case .loopControl(let breaks, _):
                return breaks ? .breakLoop : .continueLoop
            case .include(let name, let pipeline, let offset):
                guard let body = template.definitions[name] else {
                    throw TemplateError("no such template \"\(name)\"", at: offset)
                }
                guard nesting < TextTemplate.nestingLimit else {
                    throw TemplateError("templates nested more than \(TextTemplate.nestingLimit) deep", at: offset)
                }
                let value =
                    try pipeline.map { pipeline throws(TemplateError) in try evaluate(pipeline, dot: dot) } ?? .null
                let saved = variables
                variables = [("$", value)]
                nesting += 1
                _ = try run(body, dot: value)
                nesting -= 1
                variables = saved
            }
        }
        return .normal
    }

    private mutating func runRange(
        _ pipeline: TemplatePipeline,
        body: [TemplateNode],
        otherwise: [TemplateNode]?,
        dot: TemplateValue
    )
        throws(TemplateError) -> Flow
    {
        let mark = variables.count
        defer { variables.removeLast(variables.count - mark) }
        // The pipeline's value, without declaring: range declares its own per element.
        var plain = pipeline
        plain.variables = []
        let value = try evaluate(plain, dot: dot)
        // The elements, produced one at a time: `range 9000000` must not build a list of them.
        let count: Int
        let element: (Int) -> (key: TemplateValue, value: TemplateValue)
        switch value {
        case .list(let items):
            count = items.count
            element = { (.int($0), items[$0]) }
        case .map(let entries):
            let keys = entries.keys.sorted()
            count = keys.count
            element = { (.string(keys[$0]), entries[keys[$0]]!) }
        case .int(let number):
            guard pipeline.variables.count < 2 else {
                throw TemplateError("can't use two variables when ranging over an integer", at: pipeline.offset)
            }
            guard number <= TextTemplate.iterationLimit else {
                throw TemplateError(
                    "range over \(number): more than kiln's limit of \(TextTemplate.iterationLimit) iterations",
                    at: pipeline.offset
                )
            }
            count = max(0, number)
            element = { (.int($0), .int($0)) }
        case .missing, .null:
            count = 0
            element = { _ in (.null, .null) }
        default:
            throw TemplateError("range can't iterate over \(value.printed)", at: pipeline.offset)
        }
        if count == 0 {
            if let otherwise { return try run(otherwise, dot: dot) }
            return .normal
        }
        for position in 0..<count {
            iterations += 1
            guard iterations <= TextTemplate.iterationLimit else {
                throw TemplateError(
                    "more than kiln's limit of \(TextTemplate.iterationLimit) loop iterations",
                    at: pipeline.offset
                )
            }
            let (key, item) = element(position)
            let inner = variables.count
            switch pipeline.variables.count {
            case 1: variables.append((pipeline.variables[0], item))
            case 2:
                variables.append((pipeline.variables[0], key))
                variables.append((pipeline.variables[1], item))
            default: break
            }
            let flow = try run(body, dot: item)
            variables.removeLast(variables.count - inner)
            if flow == .breakLoop { break }
        }
        return .normal
    }

    private mutating func print(_ value: TemplateValue, at offset: Int) throws(TemplateError) {
        switch value {
        case .missing:
            if missing == .fail { throw TemplateError("no value to print: the variable or key isn't set", at: offset) }
        case .null:
            break
        default:
            value.print(into: &output)
        }
        guard output.utf8.count <= TextTemplate.outputLimit else {
            throw TemplateError(
                "the template's output is over kiln's limit of \(TextTemplate.outputLimit) bytes",
                at: offset
            )
        }
    }

    // MARK: Pipelines

    private mutating func evaluate(_ pipeline: TemplatePipeline, dot: TemplateValue) throws(TemplateError)
        -> TemplateValue
    {
        var value: TemplateValue?
        for command in pipeline.commands {
            value = try evaluate(command, dot: dot, piped: value)
        }
        let result = value ?? .missing
        if pipeline.assigns {
            for name in pipeline.variables {
                if let index = variables.lastIndex(where: { $0.name == name }) { variables[index].value = result }
            }
        } else {
            for name in pipeline.variables { variables.append((name, result)) }
        }
        return result
    }

    private mutating func evaluate(_ command: TemplateCommand, dot: TemplateValue, piped: TemplateValue?)
        throws(TemplateError)
        -> TemplateValue
    {
        guard case .function(let name, let offset) = command.operands[0] else {
            // A single operand (the parser refused arguments and piped values for it).
            return try evaluate(command.operands[0], dot: dot)
        }
        let function = template.functions[name]!
        switch function.evaluation {
        case .and, .or:
            // Short-circuit: stop at the first falsy (and) or truthy (or) argument.
            var last: TemplateValue = .missing
            let stopsWhenTruthy = function.evaluation == .or
            for operand in command.operands.dropFirst() {
                last = try evaluate(operand, dot: dot)
                if last.isTruthy == stopsWhenTruthy { return last }
            }
            if let piped { last = piped }
            return last
        case .eager:
            var arguments: [TemplateValue] = []
            arguments.reserveCapacity(command.operands.count)
            for operand in command.operands.dropFirst() { arguments.append(try evaluate(operand, dot: dot)) }
            if let piped { arguments.append(piped) }
            do {
                return try function.call(arguments)
            } catch {
                throw TemplateError("error calling \(name): \(error.message)", at: offset)
            }
        }
    }

    private mutating func evaluate(_ operand: TemplateOperand, dot: TemplateValue) throws(TemplateError)
        -> TemplateValue
    {
        switch operand {
        case .dot: return dot
        case .field(let names, let offset): return try fields(names, of: dot, at: offset)
        case .variable(let name, let fields, let offset):
            guard let value = variables.last(where: { $0.name == name })?.value else {
                throw TemplateError("undefined variable \"\(name)\"", at: offset)
            }
            return try self.fields(fields, of: value, at: offset)
        case .literal(let value, _): return value
        case .null: return .null
        case .function(let name, let offset):
            // A function as an argument is called with no arguments (`{{print OS}}`).
            let function = template.functions[name]!
            if let message = function.arityProblem(0, name: name) { throw TemplateError(message, at: offset) }
            do {
                return try function.call([])
            } catch {
                throw TemplateError("error calling \(name): \(error.message)", at: offset)
            }
        case .pipeline(let pipeline, let fields, let offset):
            let mark = variables.count
            let value = try evaluate(pipeline, dot: dot)
            variables.removeLast(variables.count - mark)
            return try self.fields(fields, of: value, at: offset)
        }
    }

    /// `.A.B` of `value`: map keys; a missing key gives ``TemplateValue/missing``, and so does any
    /// field of a missing value, as in Go.
    private func fields(_ names: [String], of value: TemplateValue, at offset: Int) throws(TemplateError)
        -> TemplateValue
    {
        var current = value
        for name in names {
            switch current {
            case .map(let entries): current = entries[name] ?? .missing
            case .missing, .null: current = .missing
            case .time(let time) where Self.timeMethod(name, of: time) != nil:
                current = Self.timeMethod(name, of: time) ?? .missing
            default:
                throw TemplateError(
                    "can't read field \(name) of \(current.goTypeName) \(current.printed.debugQuoted)",
                    at: offset
                )
            }
        }
        return current
    }
}

extension TemplateEvaluator {
    /// Go's `time.Time` methods that take no argument, as `{{.TIMESTAMP.Unix}}` calls them.
    static func timeMethod(_ name: String, of time: TemplateTime) -> TemplateValue? {
        func number(_ layout: String) -> TemplateValue { .int(Int(time.format(layout)) ?? 0) }
        switch name {
        case "Unix": return .int(time.seconds)
        case "UnixMilli": return .int(time.seconds * 1000 + time.nanoseconds / 1_000_000)
        case "UnixMicro": return .int(time.seconds * 1_000_000 + time.nanoseconds / 1000)
        case "UnixNano": return .int(time.seconds * 1_000_000_000 + time.nanoseconds)
        case "Nanosecond": return .int(time.nanoseconds)
        case "Year": return number("2006")
        case "Day": return number("2")
        case "Hour": return number("15")
        case "Minute": return number("4")
        case "Second": return number("5")
        case "Month": return .string(time.format("January"))
        case "Weekday": return .string(time.format("Monday"))
        case "String": return .string(time.description)
        case "UTC": return .time(TemplateTime(seconds: time.seconds, nanoseconds: time.nanoseconds))
        case "Local": return .time(TemplateTime.local(seconds: time.seconds, nanoseconds: time.nanoseconds))
        default: return nil
        }
    }
}

extension String {
    /// The string in double quotes, shortened past 40 characters.
    var debugQuoted: String {
        let short = count > 40 ? String(prefix(40)) + "…" : self
        return "\"" + short + "\""
    }
}
