import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// go-task's `use_gitignore: true` (3.52): the files a task's `sources:` match leave out what the
/// `.gitignore` files of the repository ignore — with go-git's rules, which go-task uses:
///
/// - Every `.gitignore` from the repository's root (the nearest directory above with a `.git`)
///   down to the file's directory counts; a deeper file's lines come after a shallower one's,
///   and the last line that matches decides (`!PATTERN` re-includes).
/// - A line applies below its own file's directory. Empty lines and `#` comments don't count;
///   trailing spaces are dropped unless escaped (`\ `).
/// - A pattern with no `/` but a trailing one matches a name at any depth; one with a `/`
///   elsewhere is anchored to its file's directory, and `**` stands for any number of
///   directories. A trailing `/` matches directories only.
/// - A file under an ignored directory stays ignored: a negation can't bring it back.
///
/// Outside a git repository nothing is left out. `.git/info/exclude` and the global excludes
/// file don't count (go-task reads neither).
///
/// Threading: stateless; safe from any thread.
enum Gitignore {
    /// `files` (relative to `base`, as ``Glob/files(matching:in:visited:keepingMissingLiterals:unmatched:)``
    /// lists them) without those the repository's `.gitignore` files ignore; every `.gitignore`
    /// consulted — or looked for — goes into `visited`, so that editing one makes a snapshot
    /// check the task again.
    static func filter(_ files: [String], base: String, visited: inout [VisitedDirectory]) -> [String] {
        guard !files.isEmpty, let root = repositoryRoot(above: base) else { return files }
        // Each file's path from the root, as segments (those outside the repository stay).
        var paths: [(file: String, segments: [String]?)] = []
        var directories = Set<String>()
        for file in files {
            let relative = Path.relative(Path.absolute(file, base: base), to: root)
            guard !relative.hasPrefix("/"), relative != "..", !relative.hasPrefix("../") else {
                paths.append((file, nil))
                continue
            }
            let segments = relative.split(separator: "/").map(String.init)
            paths.append((file, segments))
            for depth in 0..<segments.count { directories.insert(segments[..<depth].joined(separator: "/")) }
        }
        // Shallow first, so that deeper lines come later and win.
        let ordered = directories.sorted { left, right in
            let (l, r) = (
                left.isEmpty ? 0 : left.split(separator: "/").count,
                right.isEmpty ? 0 : right.split(separator: "/").count
            )
            return l != r ? l < r : left < right
        }
        var rules: [Rule] = []
        for directory in ordered {
            let path = directory.isEmpty ? root + "/.gitignore" : root + "/" + directory + "/.gitignore"
            visited.append(VisitedDirectory(path: path, seenAt: FileHasher.realTime(), stat: FileSignature.of(path)))
            guard let text = try? Files.readText(path) else { continue }
            let domain = directory.isEmpty ? [] : directory.split(separator: "/").map(String.init)
            rules += text.split(separator: "\n", omittingEmptySubsequences: false).compactMap {
                Rule(line: String($0), domain: domain)
            }
        }
        guard !rules.isEmpty else { return files }
        return paths.compactMap { file, segments in
            guard let segments else { return file }
            return isIgnored(segments, rules: rules) ? nil : file
        }
    }

    /// The nearest directory at or above `directory` holding a `.git` (a directory, or a file
    /// for a worktree); `nil` outside a repository.
    static func repositoryRoot(above directory: String) -> String? {
        var current = Path.absolute(directory, base: "/")
        while true {
            if access(current == "/" ? "/.git" : current + "/.git", F_OK) == 0 { return current }
            guard current != "/" else { return nil }
            current = Path.directory(of: current)
        }
    }

    /// Whether the file at `segments` (from the repository's root) is ignored: one of its
    /// directories is, or the last rule that matches it excludes it.
    static func isIgnored(_ segments: [String], rules: [Rule]) -> Bool {
        for depth in 1..<max(segments.count, 1) where verdict(segments[..<depth], isDirectory: true, rules: rules) {
            return true
        }
        return verdict(segments[...], isDirectory: false, rules: rules)
    }

    /// The last matching rule's say: `true` when it ignores the path.
    private static func verdict(_ path: ArraySlice<String>, isDirectory: Bool, rules: [Rule]) -> Bool {
        for rule in rules.reversed() where rule.matches(path, isDirectory: isDirectory) { return !rule.negated }
        return false
    }

    /// One line of a `.gitignore`.
    ///
    /// Threading: a value type.
    struct Rule: Sendable {
        /// `!PATTERN`: what it matches is not ignored.
        var negated: Bool
        /// A trailing `/`: it matches directories only.
        var directoriesOnly: Bool
        /// The directory of its `.gitignore`, from the repository's root: it applies below it.
        var domain: [String]
        /// With a `/` in it: the segments, anchored to `domain` (a leading `/` leaves an empty
        /// first one). Without: one name, matched at any depth.
        var segments: [String]
        var anchored: Bool

        /// The rule a line makes; `nil` for an empty line or a comment.
        init?(line: String, domain: [String]) {
            var text = Substring(line)
            if text.hasSuffix("\r") { text = text.dropLast() }
            guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
            negated = text.hasPrefix("!")
            if negated { text = text.dropFirst() }
            if !text.hasSuffix("\\ ") {
                while text.hasSuffix(" ") { text = text.dropLast() }
            }
            directoriesOnly = text.hasSuffix("/")
            if directoriesOnly { text = text.dropLast() }
            anchored = text.contains("/")
            segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            self.domain = domain
        }

        /// Whether it matches `path` (segments from the repository's root), a directory or not.
        func matches(_ path: ArraySlice<String>, isDirectory: Bool) -> Bool {
            guard path.count > domain.count, path.prefix(domain.count).elementsEqual(domain) else { return false }
            let below = path.dropFirst(domain.count)
            return anchored
                ? matchesAnchored(below, isDirectory: isDirectory) : matchesName(below, isDirectory: isDirectory)
        }

        /// A pattern without `/`: the first segment of the path it matches decides — a
        /// directory above the file matches even a directories-only pattern.
        private func matchesName(_ path: ArraySlice<String>, isDirectory: Bool) -> Bool {
            guard let name = segments.first else { return false }
            guard let found = path.firstIndex(where: { Self.segment(name, matches: $0) }) else { return false }
            return !(directoriesOnly && !isDirectory && found == path.index(before: path.endIndex))
        }

        /// A pattern with `/`: its segments in order from the start of `path` (`**` skipping
        /// any number of them); what is left of the path after a match is inside a matched
        /// directory.
        private func matchesAnchored(_ path: ArraySlice<String>, isDirectory: Bool) -> Bool {
            var rest = path
            var matched = false
            var skipping = false
            for (position, pattern) in segments.enumerated() {
                if pattern.isEmpty {
                    skipping = false
                    continue
                }
                if pattern == "**" {
                    // A trailing `**` takes everything below what matched so far.
                    if position == segments.count - 1 { break }
                    skipping = true
                    continue
                }
                if pattern.containsText("**") { return false }
                guard !rest.isEmpty else { return false }
                if skipping {
                    skipping = false
                    matched = false
                    while let name = rest.popFirst() {
                        if Self.segment(pattern, matches: name) {
                            matched = true
                            break
                        }
                    }
                } else {
                    guard Self.segment(pattern, matches: rest.removeFirst()) else { return false }
                    matched = true
                }
            }
            if matched, directoriesOnly, !isDirectory, rest.isEmpty { return false }
            return matched
        }

        /// Go's `path.Match` for one segment: `*`, `?`, `[…]`, `\` escapes; a leading dot is
        /// an ordinary character.
        static func segment(_ pattern: String, matches name: String) -> Bool {
            fnmatch(pattern, name, 0) == 0
        }
    }
}
