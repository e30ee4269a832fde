#if canImport(Glibc)
    import Glibc
#endif

/// One `sources:` pattern, compiled: what go-task 3 means by it, so a Taskfile's globs match the
/// same files under both tools. The one definition the host's expansion, `kiln affected` and the
/// hook launcher share, so they can't disagree about a file.
///
/// go-task expands a pattern in one of two ways, and so does Kiln:
/// - **`ROOT/**/NAME`** — one `**` segment, a literal root before it, and a last segment without
///   `/` or braces after it — is *every file below ROOT whose name matches NAME*, at any depth,
///   hidden directories included, and a `*` in NAME matches a leading dot too (``Form/recursiveName``).
/// - **anything else** is a shell glob with `globstar`, segment by segment: `*`, `?` and `[…]`
///   within a name never match a leading dot; `**` as a whole segment is any number of
///   directories (none hidden), and as the last segment every file below (none hidden); braces
///   `{a,b}` are expanded first (``Form/segments``).
///
/// Kiln differs in one way, on purpose: its walks never enter `.git` or `.kiln` (``skippedNames``).
///
/// Threading: a value type; any thread.
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    /// One segment of a shell-style pattern.
    public enum Segment: Sendable, Hashable {
        /// A name without wildcards, matched exactly (it may be hidden, or `..`).
        case literal(String)
        /// A name with `*`, `?` or `[…]`, matched by `fnmatch` with `FNM_PERIOD`.
        case wildcard(String)
        /// `**`: any number of directories whose names don't start with a dot.
        case globstar
    }

    /// How a pattern matches.
    public enum Form: Sendable, Hashable {
        /// Every file at any depth below `root` whose name matches `name` (`fnmatch` without
        /// `FNM_PERIOD`: `*` matches a leading dot), through hidden directories too.
        case recursiveName(root: [String], name: String)
        /// Segment by segment, as a shell with `globstar` does.
        case segments([Segment])
    }

    /// Directory names no walk enters: git's and kiln's own state.
    public static let skippedNames: Set<String> = [".git", ".kiln"]

    /// How this pattern matches.
    public let form: Form

    /// The pattern's text, normalized (one alternative of a brace expansion).
    public var description: String {
        switch form {
        case .recursiveName(let root, let name): return (root + ["**", name]).joined(separator: "/")
        case .segments(let segments):
            return segments.map { segment in
                switch segment {
                case .literal(let text), .wildcard(let text): return text
                case .globstar: return "**"
                }
            }.joined(separator: "/")
        }
    }

    /// The alternatives `pattern` stands for: one, or one per brace alternative. A `ROOT/**/NAME`
    /// pattern is never brace-expanded (go-task only expands braces in shell-style patterns, and
    /// a pattern with braces in NAME is one).
    public static func compile(_ pattern: String) -> [GlobPattern] {
        let segments = normalizedSegments(pattern)
        if let form = recursiveNameForm(segments) { return [GlobPattern(form: form)] }
        return BraceExpansion.expand(pattern).map { alternative in
            GlobPattern(form: .segments(normalizedSegments(alternative).map(segment)))
        }
    }

    /// Whether `text` is a pattern rather than a plain path: it has `*`, `?` or `[`, or braces
    /// that expand to several alternatives.
    public static func isMagic(_ text: String) -> Bool {
        // Bytes, not characters: it runs for every input of every job checked.
        var hasBrace = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "[") { return true }
            if byte == UInt8(ascii: "{") { hasBrace = true }
        }
        return hasBrace && BraceExpansion.expand(text) != [text]
    }

    /// Whether `path` (relative to the pattern's base, `/`-separated) is a file this pattern
    /// would find.
    public func matches(_ path: String) -> Bool {
        let names = Self.normalizedSegments(path)
        switch form {
        case .recursiveName(let root, let name):
            guard names.count > root.count, names.starts(with: root) else { return false }
            let below = names[root.count...]
            if below.dropLast().contains(where: Self.skippedNames.contains) { return false }
            return fnmatch(name, below.last!, 0) == 0
        case .segments(let segments):
            return Self.match(segments[...], names[...])
        }
    }

    /// Whether the name `name` matches the wildcard segment `segment` (leading dots only when
    /// named).
    public static func segmentMatches(_ segment: String, _ name: String) -> Bool {
        fnmatch(segment, name, FNM_PERIOD) == 0
    }

    /// The pattern as a shell glob, segment by segment: what go-task falls back to for
    /// `ROOT/**/NAME` when the walk meets a symbolic link to a directory.
    public var shellSegments: [Segment] {
        switch form {
        case .recursiveName(let root, let name): return root.map(Segment.literal) + [.globstar, Self.segment(name)]
        case .segments(let segments): return segments
        }
    }

    /// Whether `name` matches the `NAME` of a ``Form/recursiveName`` pattern.
    public static func nameMatches(_ pattern: String, _ name: String) -> Bool {
        fnmatch(pattern, name, 0) == 0
    }

    // MARK: - Compiling

    /// The segments of a `/`-separated path or pattern, without empty ones and `.`.
    static func normalizedSegments(_ text: String) -> [String] {
        // Split on the UTF-8 bytes: `/` and `.` are ASCII, so each piece is whole characters.
        var segments: [String] = []
        let utf8 = text.utf8
        var start = utf8.startIndex
        var index = start
        func take() {
            let piece = utf8[start..<index]
            if !piece.isEmpty, !(piece.count == 1 && piece.first == UInt8(ascii: ".")) {
                segments.append(String(Substring(piece)))
            }
        }
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                take()
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        take()
        return segments
    }

    private static func segment(_ text: String) -> Segment {
        if text == "**" { return .globstar }
        return isMagic(text) ? .wildcard(text) : .literal(text)
    }

    /// `ROOT/**/NAME` with a literal ROOT, no second `**` segment, and a NAME without braces.
    private static func recursiveNameForm(_ segments: [String]) -> Form? {
        guard let star = segments.firstIndex(of: "**"), star == segments.count - 2 else { return nil }
        let root = Array(segments[..<star])
        let name = segments[star + 1]
        let rootIsLiteral = root.allSatisfy { !$0.containsText("**") && !$0.contains(where: "*?[]{}".contains) }
        guard rootIsLiteral, !name.contains("{"), !name.contains("}") else { return nil }
        return .recursiveName(root: root, name: name)
    }

    // MARK: - Matching shell-style segments

    private static func match(_ pattern: ArraySlice<Segment>, _ path: ArraySlice<String>) -> Bool {
        guard let segment = pattern.first else { return path.isEmpty }
        guard let name = path.first else { return false }
        switch segment {
        case .literal(let text):
            return text == name && match(pattern.dropFirst(), path.dropFirst())
        case .wildcard(let text):
            return segmentMatches(text, name) && match(pattern.dropFirst(), path.dropFirst())
        case .globstar:
            if name.hasPrefix(".") {
                // `**` crosses no hidden name; only what follows it may name one.
                return match(pattern.dropFirst(), path)
            }
            if pattern.count == 1 { return path.allSatisfy { !$0.hasPrefix(".") } }
            // Zero directories, or one more and `**` again.
            return match(pattern.dropFirst(), path) || (path.count > 1 && match(pattern, path.dropFirst()))
        }
    }
}

/// Shell brace expansion, as bash does it before globbing: `{a,b}` (nested, possibly empty
/// alternatives) and sequences `{1..5}`, `{a..e}`; a brace group without a comma or a valid
/// sequence stays literal, and `\{` is never a group.
///
/// Threading: stateless; any thread.
enum BraceExpansion {
    /// The most alternatives one pattern may expand to; past it the text is kept as it is.
    static let limit = 4096

    static func expand(_ text: String) -> [String] {
        // No brace, no group: most patterns. Splitting into Characters is the costly part.
        guard text.utf8.contains(UInt8(ascii: "{")) else { return [text] }
        let characters = Array(text)
        var results: [String] = []
        expand(characters[...], into: &results)
        return results.count > limit ? [text] : results
    }

    private static func expand(_ text: ArraySlice<Character>, into results: inout [String]) {
        guard let group = firstGroup(text) else {
            results.append(String(text))
            return
        }
        let prefix = String(text[text.startIndex..<group.open])
        let suffix = text[(group.close + 1)...]
        var tails: [String] = []
        expand(suffix, into: &tails)
        for alternative in group.alternatives {
            var heads: [String] = []
            expand(alternative[...], into: &heads)
            for head in heads {
                for tail in tails {
                    results.append(prefix + head + tail)
                    if results.count > limit { return }
                }
            }
        }
    }

    /// The first brace group that expands: its braces' positions and its alternatives.
    private static func firstGroup(
        _ text: ArraySlice<Character>
    ) -> (open: Int, close: Int, alternatives: [[Character]])? {
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "\\" {
                index += 2
                continue
            }
            if character == "{", let group = group(text, openingAt: index) { return group }
            index += 1
        }
        return nil
    }

    private static func group(
        _ text: ArraySlice<Character>,
        openingAt open: Int
    ) -> (open: Int, close: Int, alternatives: [[Character]])? {
        var depth = 0
        var commas: [Int] = []
        var index = open
        while index < text.endIndex {
            switch text[index] {
            case "\\": index += 1
            case "{": depth += 1
            case "}":
                depth -= 1
                if depth == 0 {
                    if !commas.isEmpty {
                        var alternatives: [[Character]] = []
                        var start = open + 1
                        for comma in commas + [index] {
                            alternatives.append(Array(text[start..<comma]))
                            start = comma + 1
                        }
                        return (open, index, alternatives)
                    }
                    if let sequence = sequence(String(text[(open + 1)..<index])) {
                        return (open, index, sequence.map(Array.init))
                    }
                    return nil
                }
            case "," where depth == 1: commas.append(index)
            default: break
            }
            index += 1
        }
        return nil
    }

    /// `{1..5}`, `{5..1}`, `{a..e}`: the values; `nil` when `body` is no sequence.
    private static func sequence(_ body: String) -> [String]? {
        guard let dots = body.firstRange(ofText: ".."), !body[dots.upperBound...].containsText("..") else { return nil }
        let parts = [String(body[..<dots.lowerBound]), String(body[dots.upperBound...])]
        if let first = Int(parts[0]), let last = Int(parts[1]) {
            guard (first - last).magnitude < UInt(limit) else { return nil }
            return (first <= last ? Array(first...last) : Array((last...first).reversed())).map(String.init)
        }
        guard parts[0].count == 1, parts[1].count == 1, let first = parts[0].unicodeScalars.first,
            let last = parts[1].unicodeScalars.first, first.isASCII, last.isASCII,
            first.properties.isAlphabetic, last.properties.isAlphabetic
        else { return nil }
        let range =
            first.value <= last.value ? Array(first.value...last.value) : Array((last.value...first.value).reversed())
        return range.compactMap { Unicode.Scalar($0).map { String(Character($0)) } }
    }
}

/// A list of `sources:` (or `generates:`) patterns as go-task reads it: in order, each pattern
/// adds the files it matches, or, for an exclusion, removes them; a file's fate is decided by the
/// last pattern that matches it. An exclusion — `- exclude: PATTERN` in a Taskfile — is written
/// `!PATTERN` here (the Taskfile loader refuses patterns that start with `!`, so the form is
/// unambiguous).
///
/// Threading: a value type; any thread.
public struct GlobList: Sendable {
    /// One pattern of the list.
    public struct Entry: Sendable {
        /// Whether it removes what it matches (`!PATTERN`).
        public var excludes: Bool
        /// Its alternatives.
        public var alternatives: [GlobPattern]
        /// Its text, without the `!`.
        public var text: String
    }

    /// The patterns, in order.
    public var entries: [Entry]
    /// Whether the list holds ``gitignoreMarker``: go-task's `use_gitignore: true`, under which
    /// the files it matches leave out what the repository's `.gitignore` files ignore.
    public var usesGitignore = false

    /// Written as the last entry of a task's `sources:` list when `use_gitignore: true` applies
    /// to it, so that every expansion of the list — one place — leaves the ignored files out.
    /// An exclusion (`!`) that names no file: whatever reads the list without knowing of it
    /// adds nothing for it.
    public static let gitignoreMarker = "!\u{0}use_gitignore"

    /// The list `patterns` (each `PATTERN` or `!PATTERN`, or ``gitignoreMarker``).
    public init(_ patterns: [String]) {
        entries = []
        entries.reserveCapacity(patterns.count)
        for pattern in patterns {
            if pattern == Self.gitignoreMarker {
                usesGitignore = true
                continue
            }
            let excludes = pattern.hasPrefix("!")
            let text = excludes ? String(pattern.dropFirst()) : pattern
            entries.append(Entry(excludes: excludes, alternatives: GlobPattern.compile(text), text: text))
        }
    }

    /// Whether `path` (relative) is one of the list's files, judging by names alone.
    public func matches(_ path: String) -> Bool {
        for entry in entries.reversed() where entry.alternatives.contains(where: { $0.matches(path) }) {
            return !entry.excludes
        }
        return false
    }

    /// Whether `pattern` is an exclusion (`!PATTERN`).
    public static func isExclusion(_ pattern: String) -> Bool { pattern.hasPrefix("!") }

    /// Whether `pattern` names one path: neither an exclusion nor a wildcard pattern. Such an
    /// entry is a file that must exist, not a set that may be empty.
    public static func isPlainPath(_ pattern: String) -> Bool { !isExclusion(pattern) && !GlobPattern.isMagic(pattern) }
}
