/// A function a template can call.
///
/// Threading: immutable; its body may run on any thread, concurrently.
public struct TemplateFunction: Sendable {
    enum Evaluation: Sendable { case eager, and, or }

    let evaluation: Evaluation
    let minimum: Int
    let maximum: Int?
    let body: @Sendable ([TemplateValue]) throws(TemplateFunctionError) -> TemplateValue

    /// A function taking `minimum` to `maximum` arguments (`nil`: any number more).
    public init(
        arguments minimum: Int,
        to maximum: Int?,
        _ body: @escaping @Sendable ([TemplateValue]) throws(TemplateFunctionError) -> TemplateValue
    ) {
        self.evaluation = .eager
        self.minimum = minimum
        self.maximum = maximum
        self.body = body
    }

    /// A function taking exactly `count` arguments.
    public init(
        arguments count: Int,
        _ body: @escaping @Sendable ([TemplateValue]) throws(TemplateFunctionError) -> TemplateValue
    ) {
        self.init(arguments: count, to: count, body)
    }

    init(shortCircuit evaluation: Evaluation) {
        self.evaluation = evaluation
        minimum = 1
        maximum = nil
        body = { arguments in arguments.last ?? .missing }
    }

    /// Calls the function (the template engine checks the argument count first).
    public func call(_ arguments: [TemplateValue]) throws(TemplateFunctionError) -> TemplateValue {
        try body(arguments)
    }

    /// The message when `count` arguments is wrong for it, as Go words it.
    func arityProblem(_ count: Int, name: String) -> String? {
        if count < minimum || maximum.map({ count > $0 }) == true {
            let want =
                maximum == minimum ? "\(minimum)" : maximum == nil ? "at least \(minimum)" : "\(minimum) to \(maximum!)"
            return "wrong number of args for \(name): want \(want) got \(count)"
        }
        return nil
    }
}

/// A function's failure: the evaluator adds the function's name and the place.
///
/// Threading: a value type; safe to pass between threads.
public struct TemplateFunctionError: Error, Sendable {
    /// What went wrong.
    public var message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }
}

/// The functions templates can call, by name.
///
/// ``standard`` holds Go's built-ins (`and or not len index slice printf print println eq ne lt
/// le gt ge html js urlquery call`), slim-sprig's (the set go-task ships) and go-task's own
/// (`OS ARCH numCPU exeExt shellQuote splitArgs joinPath relPath merge …`). The host adds the
/// ones that need its libraries (YAML, hashes) with ``adding(_:)``.
///
/// Threading: a value type; safe to pass between threads.
public struct TemplateFunctions: Sendable {
    private var table: [String: TemplateFunction]

    /// Every function kiln's templates know.
    public static let standard: TemplateFunctions = {
        var table: [String: TemplateFunction] = [:]
        GoBuiltins.register(into: &table)
        SprigFunctions.register(into: &table)
        TaskFunctions.register(into: &table)
        return TemplateFunctions(table: table)
    }()

    /// These functions and `functions` (theirs win on a shared name).
    public func adding(_ functions: [String: TemplateFunction]) -> TemplateFunctions {
        TemplateFunctions(table: table.merging(functions) { _, new in new })
    }

    /// Every name.
    public var names: [String] { table.keys.sorted() }

    /// The function called `name`.
    public subscript(name: String) -> TemplateFunction? { table[name] }

    /// The known name closest to `name`, for "did you mean".
    func suggestion(for name: String) -> String? {
        TextHelpers.closest(to: name, among: table.keys, ignoringCase: true)
    }
}

// MARK: Argument conversion, with Go's messages

extension TemplateValue {
    /// A string argument, as Go passes one to a `string` parameter.
    func requireString() throws(TemplateFunctionError) -> String {
        switch self {
        case .string(let value): return value
        case .missing: throw TemplateFunctionError("invalid value; expected string")
        case .null: throw TemplateFunctionError("wrong type for value; expected string; got interface {}")
        default: throw TemplateFunctionError("expected string; found \(printed)")
        }
    }

    /// An `int` argument.
    func requireInt() throws(TemplateFunctionError) -> Int {
        switch self {
        case .int(let value): return value
        case .missing: throw TemplateFunctionError("invalid value; expected int")
        case .null: throw TemplateFunctionError("wrong type for value; expected int; got interface {}")
        default: throw TemplateFunctionError("expected integer; found \(printed)")
        }
    }

    /// A list argument (Go's `[]any` or `[]string`).
    func requireList(_ function: String) throws(TemplateFunctionError) -> [TemplateValue] {
        switch self {
        case .list(let items): return items
        default: throw TemplateFunctionError("cannot find \(function) on type \(goTypeName)")
        }
    }

    /// A map argument.
    func requireMap() throws(TemplateFunctionError) -> [String: TemplateValue] {
        switch self {
        case .map(let entries): return entries
        case .missing: throw TemplateFunctionError("invalid value; expected map[string]interface {}")
        default:
            throw TemplateFunctionError("wrong type for value; expected map[string]interface {}; got \(goTypeName)")
        }
    }

    /// sprig's `strval`: a string as is, anything else as `%v` prints it (nil is `<nil>`).
    var sprigString: String {
        switch self {
        case .string(let value): value
        case .missing, .null: "<nil>"
        default: printed
        }
    }

    /// sprig's `toInt64` (spf13/cast): numbers truncated, strings parsed, `true` is 1, else 0.
    var sprigInt: Int {
        switch self {
        case .int(let value): value
        case .float(let value): value.isFinite && abs(value) < 9.2e18 ? Int(value) : 0
        case .bool(let value): value ? 1 : 0
        case .string(let text): Int(text) ?? 0
        default: 0
        }
    }

    /// sprig's `toFloat64`.
    var sprigFloat: Double {
        switch self {
        case .int(let value): Double(value)
        case .float(let value): value
        case .bool(let value): value ? 1 : 0
        case .string(let text): Double(text) ?? 0
        default: 0
        }
    }

    /// sprig's `strslice`: a list's items as strings (nil items dropped), or the value alone.
    var sprigStrings: [String] {
        switch self {
        case .list(let items): items.compactMap { item in item == .null || item == .missing ? nil : item.sprigString }
        case .missing, .null: []
        default: [sprigString]
        }
    }
}
