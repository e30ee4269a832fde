import CGit2
import KilnGitFormat
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension GitError {
    /// An error from the last libgit2 call, which returned `status` (read on the calling thread,
    /// right after the call).
    static func last(_ status: Int32, doing what: String, code: Code = .failed) -> GitError {
        let detail =
            kiln_git_error_last().flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "error \(status)"
        return GitError(code: code, message: "\(what): \(detail)")
    }
}

/// A git repository, through libgit2.
///
/// libgit2 objects are not thread-safe: a repository is confined to one thread at a time. Use an
/// instance from one thread (or serialize calls yourself); every method here runs on the caller's
/// thread, and reads `kiln_git_error_last()` on it right after a failing call.
///
/// Threading: not thread-safe; `@unchecked Sendable` so it can be handed to another thread, which
/// then owns it.
public final class GitRepository: @unchecked Sendable {
    let repository: OpaquePointer
    /// The working directory (absolute, without a trailing `/`).
    public let workingDirectory: String

    /// libgit2 opened (`kiln_git2_load`) and `git_libgit2_init` called, once per process; the
    /// message when the library can't be opened.
    private static let initialized: String? = {
        var message = [CChar](repeating: 0, count: 512)
        guard kiln_git2_load(&message, message.count) == 0 else {
            return String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        kiln_git_libgit2_init()
        return nil
    }()

    /// Starts libgit2 on another thread: `git_libgit2_init` takes about 7 ms (Debian's libgit2
    /// parses the system's CA certificates then), which a caller can spend reading the index or
    /// a Taskfile. The first ``init(containing:)`` waits for it.
    ///
    /// Threading: any thread, any number of times.
    public static func startLibgit2() {
        HostThread.start { _ = initialized }
    }

    /// Opens and initialises libgit2 if ``startLibgit2()`` hasn't, or waits for it to finish.
    ///
    /// - Throws: ``GitError`` when the library can't be opened (not installed, or another version).
    /// Threading: any thread, any number of times.
    static func ensureLibgit2() throws(GitError) {
        if let failure = initialized { throw GitError(code: .failed, message: failure) }
    }

    /// Opens the repository that holds `path` (searching upwards, like git).
    ///
    /// - Throws: ``GitError`` `.notARepository` when there is none, or libgit2's failure.
    public init(containing path: String) throws(GitError) {
        try Self.ensureLibgit2()
        var opened: OpaquePointer?
        let status = kiln_git_repository_open_ext(&opened, path, 0, nil)
        if status == GIT_ENOTFOUND.rawValue {
            throw GitError(code: .notARepository, message: "\(path) is not inside a git repository")
        }
        guard status == 0, let opened else {
            throw GitError.last(status, doing: "can't open the git repository at \(path)")
        }
        guard let workdir = kiln_git_repository_workdir(opened) else {
            kiln_git_repository_free(opened)
            throw GitError(
                code: .notARepository,
                message: "the git repository holding \(path) is bare: it has no working directory"
            )
        }
        var directory = String(cString: workdir)
        while directory.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        repository = opened
        workingDirectory = directory
    }

    deinit {
        kiln_git_repository_free(repository)
    }

    // MARK: Hooks

    /// Where git runs hooks from: `core.hooksPath` when set (relative to the working directory),
    /// otherwise `hooks` in the common git directory (shared by every worktree).
    public func hooksDirectory() throws(GitError) -> String {
        var snapshot: OpaquePointer?
        let status = kiln_git_repository_config_snapshot(&snapshot, repository)
        guard status == 0, let snapshot else { throw GitError.last(status, doing: "can't read the git configuration") }
        defer { kiln_git_config_free(snapshot) }
        var value: UnsafePointer<CChar>?
        if kiln_git_config_get_string(&value, snapshot, "core.hooksPath") == 0, let value {
            let path = String(cString: value)
            return path.hasPrefix("/") ? path : workingDirectory + "/" + path
        }
        var common = String(cString: kiln_git_repository_commondir(repository))
        while common.count > 1, common.hasSuffix("/") { common.removeLast() }
        return common + "/hooks"
    }

    /// The changes a hook is about: `pre-push` reads its refs from standard input; `post-merge`
    /// compares ORIG_HEAD with HEAD; `post-checkout` the two commits git passes.
    ///
    /// - Parameters:
    ///   - hook: The hook's name.
    ///   - arguments: What git passed it.
    ///   - input: Its standard input (pre-push's ref lines).
    public func hookChanges(_ hook: String, arguments: [String], input: String) throws(GitError) -> [GitChange] {
        switch hook {
        case "pre-commit", "commit-msg":
            return try fastStagedChanges()
        case "pre-push":
            // `<local ref> <local sha> <remote ref> <remote sha>` per line (githooks(5)).
            var changes: [GitChange] = []
            for line in input.split(separator: "\n") {
                let fields = line.split(separator: " ").map(String.init)
                // A deleted ref (all-zero local id) pushes nothing.
                guard fields.count == 4, fields[1].contains(where: { $0 != "0" }) else { continue }
                let local = fields[1]
                let remote = fields[3]
                if remote.contains(where: { $0 != "0" }), (try? commit(named: remote)) != nil {
                    changes += try self.changes(base: remote, head: local)
                } else {
                    // A new branch: what it has that no remote-tracking branch has.
                    changes += try changesNotOnAnyRemote(local)
                }
            }
            return GitChange.uniqueSorted(changes)
        case "post-merge":
            return (try? commit(named: "ORIG_HEAD")) == nil ? [] : try diff(from: "ORIG_HEAD", to: "HEAD")
        case "post-checkout":
            // `<previous HEAD> <new HEAD> <flag>`; the previous HEAD is all zeros for a new
            // worktree or a clone: then every file of the new HEAD is new.
            guard arguments.count >= 2, arguments[0] != arguments[1] else { return [] }
            if !arguments[0].contains(where: { $0 != "0" }) { return try everything(in: arguments[1]) }
            return try diff(from: arguments[0], to: arguments[1])
        default:
            return []
        }
    }

    /// From the merge base of `head` with the newest remote-tracking branch it shares history
    /// with (every file of `head`'s tree when it shares none).
    private func changesNotOnAnyRemote(_ head: String) throws(GitError) -> [GitChange] {
        var iterator: OpaquePointer?
        guard kiln_git_branch_iterator_new(&iterator, repository, GIT_BRANCH_REMOTE) == 0, let iterator else {
            return try everything(in: head)
        }
        defer { kiln_git_branch_iterator_free(iterator) }
        var reference: OpaquePointer?
        var type = GIT_BRANCH_REMOTE
        while kiln_git_branch_next(&reference, &type, iterator) == 0, let current = reference {
            defer { kiln_git_reference_free(current) }
            if let name = kiln_git_reference_name(current).map({ String(cString: $0) }),
                let changes = try? changes(base: name, head: head)
            {
                return changes
            }
        }
        return try everything(in: head)
    }

    /// Every file of a commit's tree, as added.
    private func everything(in revision: String) throws(GitError) -> [GitChange] {
        let tree = try tree(of: try commit(named: revision))
        defer { kiln_git_tree_free(tree) }
        return try treeChanges(from: nil, to: tree, describing: "list \(revision)")
    }

    /// What changed from one commit to another (no merge base: the two trees as they are).
    private func diff(from old: String, to new: String) throws(GitError) -> [GitChange] {
        let oldTree = try tree(of: try commit(named: old))
        defer { kiln_git_tree_free(oldTree) }
        let newTree = try tree(of: try commit(named: new))
        defer { kiln_git_tree_free(newTree) }
        return try treeChanges(from: oldTree, to: newTree, describing: "compare \(old) with \(new)")
    }

    /// The changes from one tree (`nil`: the empty tree) to another, with renames detected.
    private func treeChanges(from oldTree: OpaquePointer?, to newTree: OpaquePointer, describing what: String)
        throws(GitError) -> [GitChange]
    {
        var diff: OpaquePointer?
        let status = kiln_git_diff_tree_to_tree(&diff, repository, oldTree, newTree, nil)
        guard status == 0, let diff else { throw GitError.last(status, doing: "can't \(what)") }
        defer { kiln_git_diff_free(diff) }
        var find = git_diff_find_options()
        kiln_git_diff_find_options_init(&find, UInt32(GIT_DIFF_FIND_OPTIONS_VERSION))
        find.flags = GIT_DIFF_FIND_RENAMES.rawValue
        let renames = kiln_git_diff_find_similar(diff, &find)
        guard renames == 0 else { throw GitError.last(renames, doing: "can't find renames to \(what)") }
        var changes: [GitChange] = []
        for index in 0..<kiln_git_diff_num_deltas(diff) {
            if let delta = kiln_git_diff_get_delta(diff, index)?.pointee,
                let change = Self.change(delta, untracked: false)
            {
                changes.append(change)
            }
        }
        return GitChange.uniqueSorted(changes)
    }

    // MARK: Changed files

    /// The working tree and the index against HEAD: staged and unstaged changes, and untracked
    /// files (ignored ones left out, as `.gitignore` says). Renames count under both paths. In a
    /// repository without commits, everything is added or untracked.
    public func workingTreeChanges() throws(GitError) -> [GitChange] {
        try status(show: GIT_STATUS_SHOW_INDEX_AND_WORKDIR)
    }

    /// The index against HEAD, asked of the `git` executable (`git diff --cached --name-status
    /// -M -z`): inside a hook, git is the one running us, and its own diff skips every directory
    /// the index's cache-tree says is unchanged — on 100k files about 15 ms, where libgit2
    /// compares every entry (about 150 ms). `nil` when `git` can't be run; then use
    /// ``stagedChanges()``.
    public func stagedChangesFromGit(executable: String = "/usr/bin/git") -> [GitChange]? {
        var pipe: [Int32] = [0, 0]
        guard pipe.withUnsafeMutableBufferPointer({ Glibc.pipe($0.baseAddress!) }) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = [
            executable, "-C", workingDirectory, "diff", "--cached", "--name-status", "-M", "-z", "--no-ext-diff",
        ]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(pipe[1])
        defer { close(pipe[0]) }
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(pipe[0], &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        guard status == 0 else { return nil }
        // Records: STATUS \0 PATH \0, or for renames and copies STATUS \0 OLD \0 NEW \0.
        let fields = output.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        var changes: [GitChange] = []
        var index = 0
        while index + 1 < fields.count, !fields[index].isEmpty {
            let code = fields[index].first ?? "M"
            switch code {
            case "R", "C":
                guard index + 2 < fields.count else { return nil }
                let kind: GitChange.Kind = code == "R" ? .renamed : .added
                changes.append(
                    GitChange(path: fields[index + 2], kind: kind, oldPath: code == "R" ? fields[index + 1] : nil)
                )
                index += 3
            default:
                let kind: GitChange.Kind =
                    switch code {
                    case "A": .added
                    case "D": .deleted
                    case "T": .typeChanged
                    default: .modified
                    }
                changes.append(GitChange(path: fields[index + 1], kind: kind))
                index += 2
            }
        }
        return GitChange.uniqueSorted(changes)
    }

    /// The index against HEAD, fast: from the index read directly and its cache-tree
    /// (``stagedChanges(in:)``), honouring `$GIT_INDEX_FILE` as git does for a hook; from the
    /// `git` executable, then libgit2, for an index that reader doesn't know.
    public func fastStagedChanges() throws(GitError) -> [GitChange] {
        do throws(GitError) {
            return try stagedChanges(in: try self.index(decoding: .onDemand))
        } catch  where error.code == .unsupportedIndex {
            if let changes = stagedChangesFromGit() { return changes }
            return try stagedChanges()
        }
    }

    /// The index against HEAD: what a commit would record now.
    public func stagedChanges() throws(GitError) -> [GitChange] {
        try status(show: GIT_STATUS_SHOW_INDEX_ONLY)
    }

    private func status(show: git_status_show_t) throws(GitError) -> [GitChange] {
        var options = git_status_options()
        kiln_git_status_options_init(&options, UInt32(GIT_STATUS_OPTIONS_VERSION))
        options.show = show
        options.flags =
            GIT_STATUS_OPT_INCLUDE_UNTRACKED.rawValue | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS.rawValue
            | GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX.rawValue | GIT_STATUS_OPT_RENAMES_INDEX_TO_WORKDIR.rawValue
            | GIT_STATUS_OPT_EXCLUDE_SUBMODULES.rawValue
        var list: OpaquePointer?
        let status = kiln_git_status_list_new(&list, repository, &options)
        guard status == 0, let list else { throw GitError.last(status, doing: "can't read the git status") }
        defer { kiln_git_status_list_free(list) }
        var changes: [GitChange] = []
        for index in 0..<kiln_git_status_list_entrycount(list) {
            guard let entry = kiln_git_status_byindex(list, index)?.pointee else { continue }
            let flags = entry.status.rawValue
            // The staged side, then the unstaged side: a file can change in both.
            if let delta = entry.head_to_index?.pointee, let change = Self.change(delta, untracked: false) {
                changes.append(change)
            }
            if let delta = entry.index_to_workdir?.pointee,
                let change = Self.change(delta, untracked: flags & GIT_STATUS_WT_NEW.rawValue != 0)
            {
                changes.append(change)
            }
        }
        return GitChange.uniqueSorted(changes)
    }

    /// What changed between two revisions, the way `git diff A...B` sees it: from their merge
    /// base to `head`. Renames are detected and count under both paths.
    ///
    /// - Throws: ``GitError`` `.unknownRevision` for a name that isn't a commit.
    public func changes(base: String, head: String) throws(GitError) -> [GitChange] {
        let baseCommit = try commit(named: base)
        let headCommit = try commit(named: head)
        var mergeBase = git_oid()
        var baseID = baseCommit
        var headID = headCommit
        let found = kiln_git_merge_base(&mergeBase, repository, &baseID, &headID)
        guard found == 0 else {
            throw GitError.last(found, doing: "\(base) and \(head) have no common ancestor")
        }
        let oldTree = try tree(of: mergeBase)
        defer { kiln_git_tree_free(oldTree) }
        let newTree = try tree(of: headCommit)
        defer { kiln_git_tree_free(newTree) }
        return try treeChanges(from: oldTree, to: newTree, describing: "compare \(base)...\(head)")
    }

    private func commit(named name: String) throws(GitError) -> git_oid {
        var object: OpaquePointer?
        let status = kiln_git_revparse_single(&object, repository, name)
        guard status == 0, let object else {
            throw GitError.last(status, doing: "'\(name)' does not name a commit", code: .unknownRevision)
        }
        defer { kiln_git_object_free(object) }
        var peeled: OpaquePointer?
        let peel = kiln_git_object_peel(&peeled, object, GIT_OBJECT_COMMIT)
        guard peel == 0, let peeled else {
            throw GitError.last(peel, doing: "'\(name)' does not name a commit", code: .unknownRevision)
        }
        defer { kiln_git_object_free(peeled) }
        return kiln_git_object_id(peeled).pointee
    }

    private func tree(of commitID: git_oid) throws(GitError) -> OpaquePointer {
        var id = commitID
        var commit: OpaquePointer?
        let status = kiln_git_commit_lookup(&commit, repository, &id)
        guard status == 0, let commit else { throw GitError.last(status, doing: "can't read a commit") }
        defer { kiln_git_commit_free(commit) }
        var tree: OpaquePointer?
        let treeStatus = kiln_git_commit_tree(&tree, commit)
        guard treeStatus == 0, let tree else { throw GitError.last(treeStatus, doing: "can't read a commit's tree") }
        return tree
    }

    private static func change(_ delta: git_diff_delta, untracked: Bool) -> GitChange? {
        let newPath = delta.new_file.path.map { String(cString: $0) }
        let oldPath = delta.old_file.path.map { String(cString: $0) }
        let kind: GitChange.Kind
        switch delta.status {
        case GIT_DELTA_ADDED: kind = .added
        case GIT_DELTA_DELETED: kind = .deleted
        case GIT_DELTA_MODIFIED: kind = .modified
        case GIT_DELTA_RENAMED: kind = .renamed
        case GIT_DELTA_TYPECHANGE: kind = .typeChanged
        case GIT_DELTA_UNTRACKED: kind = .untracked
        case GIT_DELTA_COPIED: kind = .added
        default: return nil
        }
        guard let path = kind == .deleted ? (oldPath ?? newPath) : (newPath ?? oldPath) else { return nil }
        return GitChange(
            path: path,
            kind: untracked ? .untracked : kind,
            oldPath: kind == .renamed && oldPath != path ? oldPath : nil
        )
    }
}

// MARK: Staged changes

extension GitRepository: GitTreeReading {
    /// The index against HEAD from an index read with ``GitIndex`` (``StagedChanges``): HEAD's
    /// trees read directly (``GitObjectDatabase``), or through libgit2 for a repository that
    /// reader doesn't know.
    ///
    /// - Throws: ``GitError`` when HEAD or a tree can't be read either way.
    public func stagedChanges(in index: GitIndex) throws(GitError) -> [GitChange] {
        if let layout = GitLayout.locate(from: workingDirectory), let objects = try? GitObjectDatabase(layout: layout),
            let changes = try? StagedChanges.between(index, andHeadOf: objects)
        {
            return changes
        }
        return try StagedChanges.between(index, andHeadOf: self)
    }

    /// The index git would use: `$GIT_INDEX_FILE` when set (git sets it for hooks of a commit
    /// made with a temporary index, `git commit -a` or `git commit PATH`), else the repository's.
    ///
    /// - Parameter decoding: When its entries are decoded (``GitIndex/Decoding``).
    /// - Throws: ``GitError`` from ``GitIndex/init(path:decoding:)``.
    public func index(decoding: GitIndex.Decoding = .upFront) throws(GitError) -> GitIndex {
        if let path = gitVariable("GIT_INDEX_FILE") {
            return try GitIndex(path: path, decoding: decoding)  // relative: to the directory git runs us in
        }
        return try GitIndex(path: String(cString: kiln_git_repository_path(repository)) + "index", decoding: decoding)
    }

    /// HEAD's root tree through libgit2; `nil` when HEAD has no commit yet.
    public func headTree() throws(GitError) -> GitObjectID? {
        var object: OpaquePointer?
        let status = kiln_git_revparse_single(&object, repository, "HEAD^{tree}")
        guard status == 0, let object else {
            if kiln_git_repository_head_unborn(repository) == 1 { return nil }
            throw GitError.last(status, doing: "can't read HEAD's tree")
        }
        defer { kiln_git_object_free(object) }
        return GitObjectID(kiln_git_object_id(object).pointee)
    }

    /// A tree's entries through libgit2.
    public func entries(ofTree id: GitObjectID) throws(GitError) -> [GitTreeEntry] {
        var oid = git_oid()
        id.withBytes { raw in withUnsafeMutableBytes(of: &oid.id) { $0.copyMemory(from: raw) } }
        var tree: OpaquePointer?
        let status = kiln_git_tree_lookup(&tree, repository, &oid)
        guard status == 0, let tree else { throw GitError.last(status, doing: "can't read tree \(id)") }
        defer { kiln_git_tree_free(tree) }
        return (0..<kiln_git_tree_entrycount(tree)).compactMap { position in
            guard let entry = kiln_git_tree_entry_byindex(tree, position), let name = kiln_git_tree_entry_name(entry)
            else {
                return nil
            }
            return GitTreeEntry(
                name: String(cString: name),
                mode: kiln_git_tree_entry_filemode(entry).rawValue,
                id: GitObjectID(kiln_git_tree_entry_id(entry).pointee)
            )
        }
    }
}

extension GitObjectID {
    /// The id libgit2 holds in `oid`.
    init(_ oid: git_oid) {
        var oid = oid
        self = withUnsafeBytes(of: &oid.id) { GitObjectID($0.baseAddress!) }
    }
}
