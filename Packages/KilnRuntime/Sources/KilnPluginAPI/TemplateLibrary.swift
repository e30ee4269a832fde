import KilnJobs
@_exported import KilnTemplate

/// The templates of a Taskfile: the functions they may call, and each distinct template's text
/// parsed once and kept, whichever job renders it.
///
/// The host makes one per run (Go's and go-task's functions, plus those that need the host's
/// libraries) and hands it to every ``JobRequest``; plugins render through it with
/// ``JobRequest/render(_:at:)``.
///
/// Threading: thread-safe; `render` may run on any thread, concurrently.
public final class TemplateLibrary: Sendable {
    /// The functions templates may call.
    public let functions: TemplateFunctions
    private let parsed = EngineLock<[String: Result<TextTemplate, TemplateError>]>([:])
    private let locate: @Sendable (_ scalar: SourceLocation, _ text: String, _ offset: Int) -> SourceLocation

    /// Creates a library.
    ///
    /// - Parameters:
    ///   - functions: What templates may call.
    ///   - locate: Where the byte at `offset` of a template written at `scalar` is in its file
    ///     (the host reads the file; only errors ask).
    public init(
        functions: TemplateFunctions = .standard,
        locate: @escaping @Sendable (_ scalar: SourceLocation, _ text: String, _ offset: Int) -> SourceLocation = {
            scalar,
            _,
            _ in scalar
        }
    ) {
        self.functions = functions
        self.locate = locate
    }

    /// How many parsed templates are kept.
    static let memoLimit = 1 << 16

    /// Go's, sprig's and go-task's functions, errors located at the template's start.
    public static let standard = TemplateLibrary()

    /// `text` parsed (once: later calls share the result).
    ///
    /// - Throws: ``TemplateError`` with the offset of the mistake.
    public func template(_ text: String) throws(TemplateError) -> TextTemplate {
        if let known = parsed.withLock({ $0[text] }) { return try known.get() }
        let result: Result<TextTemplate, TemplateError>
        do {
            result = .success(try TextTemplate(text, functions: functions))
        } catch {
            result = .failure(error)
        }
        // Bounded: a long-lived process (a test run, a future server) must not keep every text
        // it ever saw; past the bound a template is parsed each time it is asked for.
        parsed.withLock { table in
            if table.count < Self.memoLimit { table[text] = result }
        }
        return try result.get()
    }

    /// `text` rendered with `variables`; text without `{{` is returned as it is.
    ///
    /// - Parameter location: Where `text` is written, to locate an error.
    /// - Throws: ``TemplateRenderError`` with the file, line and column of the action that failed.
    public func render(_ text: String, variables: [String: TemplateValue], at location: SourceLocation?)
        throws(TemplateRenderError)
        -> String
    {
        guard TextTemplate.hasActions(text) else { return text }
        do {
            return try template(text).render(.map(variables))
        } catch {
            throw TemplateRenderError(
                message: error.message,
                template: text,
                location: location.map { locate($0, text, error.offset) }
            )
        }
    }

    /// Where the byte at `offset` of `text`, written at `scalar`, is in its file.
    public func location(of offset: Int, in text: String, writtenAt scalar: SourceLocation) -> SourceLocation {
        locate(scalar, text, offset)
    }
}

/// A template that could not be rendered: why, and where.
///
/// Threading: a value type; safe to pass between threads.
public struct TemplateRenderError: Error, Sendable, CustomStringConvertible {
    /// What went wrong (`function "x" not defined`, `no value to print: …`).
    public var message: String
    /// The template's text.
    public var template: String
    /// Where the failing action is, when the template's place is known.
    public var location: SourceLocation?

    /// Creates an error.
    public init(message: String, template: String, location: SourceLocation?) {
        self.message = message
        self.template = template
        self.location = location
    }

    /// `FILE:LINE:COLUMN: template: MESSAGE`.
    public var description: String {
        (location.map { "\($0): " } ?? "") + "template: " + message
    }
}
