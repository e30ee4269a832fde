/// Reads HEAD's trees for ``StagedChanges``: this module's ``GitObjectDatabase``, or libgit2.
///
/// Threading: as the conforming type says; ``StagedChanges`` calls it on the caller's thread.
public protocol GitTreeReading {
    /// HEAD's root tree, or `nil` when HEAD has no commit yet.
    func headTree() throws(GitError) -> GitObjectID?
    /// A tree's entries.
    func entries(ofTree id: GitObjectID) throws(GitError) -> [GitTreeEntry]
}

/// The index against HEAD — what a commit would record now — the way `git diff --cached` finds
/// it: a directory whose cache-tree id is HEAD's tree for it is skipped whole (its tree isn't
/// even read), so a commit touching a few directories reads only their trees. Renames are paired
/// when the content is identical (both paths count either way); an edited and moved file is a
/// deletion and an addition.
///
/// Threading: stateless; calls `trees` on the caller's thread.
public enum StagedChanges {
    /// The changes from HEAD (read through `trees`) to `index`, sorted by path.
    ///
    /// - Throws: ``GitError`` when HEAD or a tree can't be read.
    public static func between(_ index: GitIndex, andHeadOf trees: some GitTreeReading) throws(GitError) -> [GitChange]
    {
        var found = StagedDiff()
        try compare(
            trees.headTree(),
            with: index,
            range: index.entries.indices,
            directory: "",
            cache: index.cacheTree,
            trees: trees,
            into: &found
        )
        return GitChange.uniqueSorted(found.changes())
    }

    /// Additions and deletions with their ids, paired into renames at the end.
    private struct StagedDiff {
        var other: [GitChange] = []
        var added: [(path: String, id: GitObjectID)] = []
        var deleted: [(path: String, id: GitObjectID)] = []

        func changes() -> [GitChange] {
            var deletedByID: [GitObjectID: [String]] = [:]
            for (path, id) in deleted { deletedByID[id, default: []].append(path) }
            var result = other
            var renamedFrom = Set<String>()
            for (path, id) in added {
                if let old = deletedByID[id]?.popLast() {
                    renamedFrom.insert(old)
                    result.append(GitChange(path: path, kind: .renamed, oldPath: old))
                } else {
                    result.append(GitChange(path: path, kind: .added))
                }
            }
            for (path, _) in deleted where !renamedFrom.contains(path) {
                result.append(GitChange(path: path, kind: .deleted))
            }
            return result
        }
    }

    /// Compares a directory of HEAD (`tree`, `nil` when HEAD has none) with the index entries
    /// under it (`range`, whose paths start with `directory`).
    private static func compare(
        _ tree: GitObjectID?,
        with index: GitIndex,
        range: Range<Int>,
        directory: String,
        cache: GitIndex.CacheTree?,
        trees: some GitTreeReading,
        into found: inout StagedDiff
    ) throws(GitError) {
        if let tree, let cached = cache?.id, cached == tree { return }
        var head: [String: GitTreeEntry] = [:]
        if let tree {
            for entry in try trees.entries(ofTree: tree) { head[entry.name] = entry }
        }
        let prefixLength = directory.utf8.count
        var position = range.lowerBound
        while position < range.upperBound {
            let entry = index.entries[position]
            let (length, isDirectory) = index.component(of: entry, after: prefixLength)
            let name = index.pathBytes(of: entry, from: prefixLength, count: length)
            let path = directory + name
            if isDirectory {
                let group = index.range(ofPrefix: path + "/", in: position..<range.upperBound)
                if let item = head.removeValue(forKey: name), item.isTree {
                    try compare(
                        item.id,
                        with: index,
                        range: group,
                        directory: path + "/",
                        cache: cache?.children[name],
                        trees: trees,
                        into: &found
                    )
                } else {
                    if let item = head[name] { found.deleted.append((path, item.id)) }
                    head[name] = nil
                    var previous: String?  // conflict stages of one path sit together: add it once
                    for inner in group {
                        let innerPath = index.path(of: index.entries[inner])
                        if innerPath != previous { found.added.append((innerPath, index.entries[inner].id)) }
                        previous = innerPath
                    }
                }
                position = group.upperBound
                continue
            }
            // A file: all its stages sit together; a conflict is a change of the path.
            var next = position + 1
            while next < range.upperBound, index.entries[next].nameLength == entry.nameLength,
                index.path(of: index.entries[next]) == path
            {
                next += 1
            }
            let item = head.removeValue(forKey: name)
            if entry.stage != 0 || next - position > 1 {
                found.other.append(GitChange(path: path, kind: .modified))
            } else if entry.isIntentToAdd {
                // Not staged yet (`git add -N`): git diff --cached leaves it out.
                if let item { try deleted(item, at: path, trees: trees, into: &found) }
            } else if let item, item.isTree {
                try deleted(item, at: path, trees: trees, into: &found)
                found.added.append((path, entry.id))
            } else if let item {
                if kindOfMode(item.mode) != kindOfMode(entry.mode) {
                    found.other.append(GitChange(path: path, kind: .typeChanged))
                } else if item.mode != entry.mode || item.id != entry.id {
                    found.other.append(GitChange(path: path, kind: .modified))
                }
            } else {
                found.added.append((path, entry.id))
            }
            position = next
        }
        for (name, item) in head { try deleted(item, at: directory + name, trees: trees, into: &found) }
    }

    /// A path of HEAD the index no longer has: a file, or every file under a directory.
    private static func deleted(
        _ item: GitTreeEntry,
        at path: String,
        trees: some GitTreeReading,
        into found: inout StagedDiff
    ) throws(GitError) {
        guard item.isTree else {
            found.deleted.append((path, item.id))
            return
        }
        for inner in try trees.entries(ofTree: item.id) {
            try deleted(inner, at: path + "/" + inner.name, trees: trees, into: &found)
        }
    }

    /// Regular file (either mode), symbolic link, or submodule.
    private static func kindOfMode(_ mode: UInt32) -> UInt32 {
        mode & 0o170000
    }
}

extension GitObjectDatabase: GitTreeReading {
    /// HEAD's root tree, as the references under `layout` say.
    public func headTree() throws(GitError) -> GitObjectID? {
        guard let layout else {
            throw GitError(code: .failed, message: "an object database made from a directory has no HEAD")
        }
        return try layout.headCommit().map { commit throws(GitError) in try treeOfCommit(commit) }
    }

    /// A tree's entries.
    public func entries(ofTree id: GitObjectID) throws(GitError) -> [GitTreeEntry] {
        try tree(id)
    }
}

extension GitLayout {
    /// The files a commit would change now — the index against HEAD (``StagedChanges``), both
    /// paths of a rename — absolute, read without libgit2; `nil` when the index or the objects are
    /// in a format this module doesn't read (then ask libgit2).
    public func stagedFiles() -> [String]? {
        guard let index = try? GitIndex(path: indexPath, decoding: .onDemand),
            let objects = try? GitObjectDatabase(layout: self),
            let changes = try? StagedChanges.between(index, andHeadOf: objects)
        else { return nil }
        return changes.flatMap(\.paths).map { workingDirectory + "/" + $0 }
    }
}
