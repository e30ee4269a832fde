import CGit2

extension GitRepository {
    /// The index against HEAD — what a commit would record now — from an index read with
    /// ``GitIndex``, the way `git diff --cached` finds it: a directory whose cache-tree id is
    /// HEAD's tree for it is skipped whole, so a commit touching a few directories reads only
    /// their trees. Renames are paired when the content is identical (both paths count either
    /// way); an edited and moved file is a deletion and an addition.
    ///
    /// - Throws: ``GitError`` when HEAD or a tree can't be read.
    public func stagedChanges(in index: GitIndex) throws(GitError) -> [GitChange] {
        var headTree: OpaquePointer?
        var object: OpaquePointer?
        let status = git_revparse_single(&object, repository, "HEAD^{tree}")
        if status == 0 {
            headTree = object
        } else if git_repository_head_unborn(repository) != 1 {
            throw GitError.last(status, doing: "can't read HEAD's tree")
        }
        defer { if let headTree { git_object_free(headTree) } }
        var found = StagedDiff()
        try compare(headTree, with: index, range: index.entries.indices, directory: "", cache: index.cacheTree, into: &found)
        return Self.unique(found.changes())
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
            for (path, _) in deleted where !renamedFrom.contains(path) { result.append(GitChange(path: path, kind: .deleted)) }
            return result
        }
    }

    /// A tree entry: its mode, id and whether it is a tree.
    private struct TreeItem {
        var mode: UInt32
        var id: GitObjectID
        var oid: git_oid
        var isTree: Bool
    }

    private func items(of tree: OpaquePointer?) -> [String: TreeItem] {
        guard let tree else { return [:] }
        var result: [String: TreeItem] = [:]
        let count = git_tree_entrycount(tree)
        result.reserveCapacity(count)
        for position in 0..<count {
            guard let entry = git_tree_entry_byindex(tree, position), let name = git_tree_entry_name(entry) else { continue }
            let oid = git_tree_entry_id(entry).pointee
            result[String(cString: name)] = TreeItem(
                mode: git_tree_entry_filemode(entry).rawValue, id: GitObjectID(oid), oid: oid,
                isTree: git_tree_entry_type(entry) == GIT_OBJECT_TREE
            )
        }
        return result
    }

    private func lookupTree(_ oid: git_oid) throws(GitError) -> OpaquePointer {
        var id = oid
        var tree: OpaquePointer?
        let status = git_tree_lookup(&tree, repository, &id)
        guard status == 0, let tree else { throw GitError.last(status, doing: "can't read a tree of HEAD") }
        return tree
    }

    /// Compares a directory of HEAD (`tree`, `nil` when HEAD has none) with the index entries
    /// under it (`range`, whose paths start with `directory`).
    private func compare(
        _ tree: OpaquePointer?, with index: GitIndex, range: Range<Int>, directory: String, cache: GitIndex.CacheTree?,
        into found: inout StagedDiff
    ) throws(GitError) {
        if let tree, let cached = cache?.id, cached == GitObjectID(git_tree_id(tree).pointee) { return }
        var head = items(of: tree)
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
                    let subtree = try lookupTree(item.oid)
                    defer { git_tree_free(subtree) }
                    try compare(subtree, with: index, range: group, directory: path + "/", cache: cache?.children[name], into: &found)
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
            while next < range.upperBound, index.entries[next].nameLength == entry.nameLength, index.path(of: index.entries[next]) == path {
                next += 1
            }
            let item = head.removeValue(forKey: name)
            if entry.stage != 0 || next - position > 1 {
                found.other.append(GitChange(path: path, kind: .modified))
            } else if entry.isIntentToAdd {
                // Not staged yet (`git add -N`): git diff --cached leaves it out.
                if let item { try deleted(item, at: path, into: &found) }
            } else if let item, item.isTree {
                try deleted(item, at: path, into: &found)
                found.added.append((path, entry.id))
            } else if let item {
                if Self.kindOfMode(item.mode) != Self.kindOfMode(entry.mode) {
                    found.other.append(GitChange(path: path, kind: .typeChanged))
                } else if item.mode != entry.mode || item.id != entry.id {
                    found.other.append(GitChange(path: path, kind: .modified))
                }
            } else {
                found.added.append((path, entry.id))
            }
            position = next
        }
        for (name, item) in head { try deleted(item, at: directory + name, into: &found) }
    }

    /// A path of HEAD the index no longer has: a file, or every file under a directory.
    private func deleted(_ item: TreeItem, at path: String, into found: inout StagedDiff) throws(GitError) {
        guard item.isTree else {
            found.deleted.append((path, item.id))
            return
        }
        let tree = try lookupTree(item.oid)
        defer { git_tree_free(tree) }
        for (name, inner) in items(of: tree) { try deleted(inner, at: path + "/" + name, into: &found) }
    }

    /// Regular file (either mode), symbolic link, or submodule.
    private static func kindOfMode(_ mode: UInt32) -> UInt32 {
        mode & 0o170000
    }
}
