import KilnPaths

/// go-task's `secret: true` variables, as kiln hides them: their values, each replaced by `*****`
/// in the text kiln itself prints — a job's commands in the status and failure lines, a failure's
/// reason, `--dry-run`, `--json`, `kiln list --summary`. What the commands print is theirs, and
/// left alone (as go-task leaves it).
///
/// It masks values, not variables: a secret copied into another variable, or written into a
/// command by hand, is masked too (go-task masks only where the variable is printed).
///
/// Threading: a value type; safe to pass between threads.
public struct SecretMask: Sendable, Hashable {
    /// The values, the longest first, so a secret inside another is masked as part of it.
    public private(set) var values: [String] = []

    /// What replaces a secret.
    public static let replacement = "*****"

    /// No secrets.
    public init() {}

    /// Masks `values` (empty ones mean nothing to hide, and are dropped).
    public init(values: some Sequence<String>) {
        self.values = Set(values).filter { !$0.isEmpty }.sorted { ($0.utf8.count, $0) > ($1.utf8.count, $1) }
    }

    /// Whether there is nothing to mask.
    public var isEmpty: Bool { values.isEmpty }

    /// `text` with every secret in it replaced by `*****`.
    public func masking(_ text: String) -> String {
        guard !values.isEmpty else { return text }
        var result = text
        for value in values where result.containsText(value) {
            result = result.replacingText(value, with: Self.replacement)
        }
        return result
    }
}
