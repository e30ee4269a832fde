/// The parsed form of a template: Go's `text/template/parse` tree, with byte offsets into the
/// template's text so every error can point at its place.
///
/// Threading: value types; safe to pass between threads.
indirect enum TemplateNode: Sendable {
    /// Text outside actions, after trim markers have removed spaces.
    case text(String)
    /// `{{pipeline}}`: the pipeline's value is printed, unless it only declares variables.
    case action(TemplatePipeline)
    /// `{{if}}`, `{{with}}`: the body when the pipeline is truthy (`with` also sets dot), else the
    /// `else` branch (which holds an `else if` / `else with` as a nested block).
    case conditional(
        kind: ConditionalKind,
        pipeline: TemplatePipeline,
        body: [TemplateNode],
        otherwise: [TemplateNode]?
    )
    /// `{{range}}`: the body per element, else the `else` branch when there are none.
    case range(pipeline: TemplatePipeline, body: [TemplateNode], otherwise: [TemplateNode]?)
    /// `{{break}}`, `{{continue}}` inside a `range`.
    case loopControl(breaks: Bool, offset: Int)
    /// `{{template "name" pipeline}}` (and the call a `{{block}}` makes).
    case include(name: String, pipeline: TemplatePipeline?, offset: Int)

    enum ConditionalKind: Sendable { case `if`, with }
}

/// A pipeline: optional variable declarations, then commands joined by `|`.
struct TemplatePipeline: Sendable {
    /// The variables it declares (`$x :=`) or assigns (`$x =`); two for `range $i, $v :=`.
    var variables: [String]
    /// Whether it assigns existing variables (`=`) rather than declaring new ones (`:=`).
    var assigns: Bool
    /// The commands, in order; each one's result is the last argument of the next.
    var commands: [TemplateCommand]
    /// Where the pipeline starts.
    var offset: Int
}

/// One command of a pipeline: a function and its arguments, or a single operand.
struct TemplateCommand: Sendable {
    var operands: [TemplateOperand]
    var offset: Int
}

/// An operand.
indirect enum TemplateOperand: Sendable {
    /// `.` — the current value.
    case dot(offset: Int)
    /// `.A.B` — fields of dot.
    case field([String], offset: Int)
    /// `$x.A` — a variable and its fields (`$` alone is the data the template was given).
    case variable(String, fields: [String], offset: Int)
    /// A function's name.
    case function(String, offset: Int)
    /// A literal: string, number, boolean, character.
    case literal(TemplateValue, offset: Int)
    /// `nil`.
    case null(offset: Int)
    /// `(pipeline).A` — a parenthesized pipeline and its fields.
    case pipeline(TemplatePipeline, fields: [String], offset: Int)

    var offset: Int {
        switch self {
        case .dot(let offset), .field(_, let offset), .variable(_, _, let offset), .function(_, let offset),
            .literal(_, let offset), .null(let offset), .pipeline(_, _, let offset):
            offset
        }
    }
}
