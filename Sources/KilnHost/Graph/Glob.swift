import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// A directory a glob expansion read, and what `stat` said of it just before.
///
/// Threading: a value type.
struct VisitedDirectory: Sendable {
    /// Its absolute path.
    var path: String
    /// When it was looked at (`CLOCK_REALTIME`, ns).
    var seenAt: Int64
    /// Its status then; `nil` when it didn't exist.
    var stat: FileSignature?
    /// The fingerprint of the entries read then (``DirectoryListing/fingerprint(_:)``); `nil` when
    /// none were (it couldn't be opened, or a file was looked at: a `.gitignore`).
    var listing: ContentHash? = nil

    /// A directory looked at now: its status, then its entries, read once for the walk and (when
    /// `watched`: the first time a walk reads it) the fingerprint.
    static func read(_ path: String, watched: Bool = true) -> (
        visited: VisitedDirectory, entries: [DirectoryListing.Entry]
    ) {
        let seenAt = FileHasher.realTime()
        let stat = FileSignature.of(path)
        let entries = stat == nil ? nil : DirectoryListing.read(path)
        let listing = watched ? entries.map(DirectoryListing.fingerprint) : nil
        return (VisitedDirectory(path: path, seenAt: seenAt, stat: stat, listing: listing), entries ?? [])
    }
}

/// Expands `sources:` patterns into the files they match now, with go-task's meaning
/// (``GlobPattern``): paths are relative to a base directory, `!PATTERN` removes files, and no
/// walk enters `.git` or `.kiln`. Walks are iterative, and a symbolic link that leads back into
/// a directory being walked is not followed again.
///
/// Threading: stateless; safe from any thread.
enum Glob {
    /// The files `patterns` (a `sources:` list: `PATTERN` or `!PATTERN`, go-task's order rule)
    /// match under `base`, relative to it, sorted and unique. With `keepingMissingLiterals`, a
    /// plain path (no wildcard) is listed whether or not it exists, so a missing input is
    /// recorded as missing rather than dropped.
    static func files(
        matching patterns: [String],
        in base: String,
        keepingMissingLiterals: Bool = false,
        unmatched: ((Int) -> Void)? = nil
    ) -> [String] {
        var ignored: [VisitedDirectory] = []
        return files(
            matching: patterns,
            in: base,
            visited: &ignored,
            keepingMissingLiterals: keepingMissingLiterals,
            unmatched: unmatched
        )
    }

    /// ``files(matching:in:keepingMissingLiterals:)``, appending to `visited` every directory
    /// the expansion looked into (absolute), with its status taken *before* it was read (`nil`:
    /// it didn't exist). While none of them changes, the expansion can't change either: adding,
    /// removing or renaming an entry changes its directory's mtime and ctime.
    ///
    /// `unmatched`, when given, is called with the position of each wildcard pattern (not an
    /// exclusion) that matched no file: for a warning. (A plain path kept with
    /// `keepingMissingLiterals` is the caller's to judge, by its hash.)
    static func files(
        matching patterns: [String],
        in base: String,
        visited: inout [VisitedDirectory],
        keepingMissingLiterals: Bool = false,
        unmatched: ((Int) -> Void)? = nil
    ) -> [String] {
        var included: [String: Bool] = [:]
        let list = GlobList(patterns)
        for (position, entry) in list.entries.enumerated() {
            var found: [String] = []
            if keepingMissingLiterals, !entry.excludes, GlobList.isPlainPath(entry.text) {
                // Kept whether or not it exists; its hash says which (and so whether it matched).
                found = [entry.text]
            } else {
                for alternative in entry.alternatives {
                    found += files(matching: alternative, in: base, visited: &visited)
                }
                if let unmatched, !entry.excludes, found.isEmpty { unmatched(position) }
            }
            for file in found { included[file] = !entry.excludes }
        }
        let files = included.compactMap { $0.value ? $0.key : nil }.sorted()
        return list.usesGitignore ? Gitignore.filter(files, base: base, visited: &visited) : files
    }

    /// The files one compiled pattern matches under `base`, relative to `base`.
    static func files(matching pattern: GlobPattern, in base: String, visited: inout [VisitedDirectory]) -> [String] {
        switch pattern.form {
        case .recursiveName(let root, let name):
            if let found = filesBelow(root: root, named: name, in: base, visited: &visited) { return found }
            // A symbolic link to a directory below: go-task then expands the pattern as a shell
            // would, following links, and so does Kiln.
            return files(matching: pattern.shellSegments, in: base, visited: &visited)
        case .segments(let segments):
            return files(matching: segments, in: base, visited: &visited)
        }
    }

    /// Every file below `base/root` named like `name`, hidden directories included; `nil` when
    /// the walk meets a symbolic link to a directory.
    private static func filesBelow(
        root: [String],
        named name: String,
        in base: String,
        visited: inout [VisitedDirectory]
    ) -> [String]? {
        let prefix = root.map { $0 + "/" }.joined()
        var pending: [(absolute: String, relative: String)] = [(Path.join(base, prefix), prefix)]
        var results: [String] = []
        var walked: [VisitedDirectory] = []
        while let (directory, relative) = pending.popLast() {
            let (visited, entries) = VisitedDirectory.read(directory)
            walked.append(visited)
            for entry in entries {
                if entry.kind == .directory {
                    if entry.isLink { return nil }
                    pending.append((directory + "/" + entry.name, relative + entry.name + "/"))
                } else if entry.kind == .file, GlobPattern.nameMatches(name, entry.name) {
                    results.append(relative + entry.name)
                }
            }
        }
        visited += walked
        return results
    }

    /// Where a shell-style walk stands: a directory, the segment to match in it, and the
    /// directories (inodes) above it, so a link back into one of them isn't followed again.
    private struct Position {
        var absolute: String
        var relative: String
        var segment: Int
        var ancestors: [UInt64]
    }

    /// The files a shell-style pattern matches under `base`, walked segment by segment.
    private static func files(
        matching segments: [GlobPattern.Segment],
        in base: String,
        visited: inout [VisitedDirectory]
    ) -> [String] {
        guard !segments.isEmpty else { return [] }
        var results: Set<String> = []
        var pending = [Position(absolute: base, relative: "", segment: 0, ancestors: [])]
        var seen: Set<String> = []
        while let position = pending.popLast() {
            let last = position.segment == segments.count - 1
            let directory = position.absolute
            var ancestors = position.ancestors
            var entries: [DirectoryListing.Entry] = []
            if case .literal = segments[position.segment] {
                // Only a lookup here, not a read: the directory isn't watched for it.
            } else {
                // This directory is read: watch it, and don't walk into it again through a link.
                let first = seen.insert(directory).inserted
                let read = VisitedDirectory.read(directory, watched: first)
                if first { visited.append(read.visited) }
                guard let stat = read.visited.stat, !ancestors.contains(stat.inode) else { continue }
                ancestors.append(stat.inode)
                entries = read.entries
            }
            func descend(_ name: String, segment: Int) {
                pending.append(
                    Position(
                        absolute: directory + "/" + name,
                        relative: position.relative + name + "/",
                        segment: segment,
                        ancestors: ancestors
                    )
                )
            }
            switch segments[position.segment] {
            case .literal(let name):
                let path = directory + "/" + name
                let kind = DirectoryListing.kind(of: path)
                if kind == .missing, seen.insert(path).inserted {
                    // Watched as absent, so its creation is noticed.
                    visited.append(VisitedDirectory(path: path, seenAt: FileHasher.realTime(), stat: nil))
                }
                if last {
                    if kind == .file { results.insert(position.relative + name) }
                } else if kind == .directory {
                    descend(name, segment: position.segment + 1)
                }
            case .wildcard(let pattern):
                for entry in entries where GlobPattern.segmentMatches(pattern, entry.name) {
                    if last {
                        if entry.kind == .file { results.insert(position.relative + entry.name) }
                    } else if entry.kind == .directory {
                        descend(entry.name, segment: position.segment + 1)
                    }
                }
            case .globstar:
                if !last {
                    // Zero directories here: the next segment is matched in this one.
                    pending.append(
                        Position(
                            absolute: directory,
                            relative: position.relative,
                            segment: position.segment + 1,
                            ancestors: position.ancestors
                        )
                    )
                }
                for entry in entries where !entry.name.hasPrefix(".") {
                    if entry.kind == .directory {
                        descend(entry.name, segment: position.segment)
                    } else if last, entry.kind == .file {
                        results.insert(position.relative + entry.name)
                    }
                }
            }
        }
        return Array(results)
    }
}
