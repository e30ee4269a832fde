import CGit2
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension GitRepository {
    /// The working tree and the index against HEAD — what ``workingTreeChanges()`` finds — the
    /// way git itself is fast about it:
    ///
    /// - staged changes from `git diff --cached` (the index's cache-tree skips unchanged
    ///   directories), or libgit2 when `git` can't be run;
    /// - each index entry's recorded `stat` data compared with the file's, on every core; only a
    ///   file whose data differ, or whose mtime isn't older than the index (racily clean), is
    ///   hashed and compared with its blob id;
    /// - untracked files from one walk of the working tree, checking only files the index doesn't
    ///   know against `.gitignore`.
    ///
    /// Submodules and entries marked skip-worktree are left out, as in ``workingTreeChanges()``.
    public func fastWorkingTreeChanges() throws(GitError) -> [GitChange] {
        var changes: [GitChange]
        if let staged = stagedChangesFromGit() { changes = staged } else { changes = try stagedChanges() }

        var index: OpaquePointer?
        let status = git_repository_index(&index, repository)
        guard status == 0, let index else { throw GitError.last(status, doing: "can't read the git index") }
        defer { git_index_free(index) }

        struct Entry: Sendable {
            var path: String
            var size: UInt32
            var mtime: (Int32, UInt32)
            var ino: UInt32
            var mode: UInt32
            var id: git_oid
        }
        var entries: [Entry] = []
        let count = git_index_entrycount(index)
        entries.reserveCapacity(count)
        var tracked = Set<String>(minimumCapacity: count)
        var trackedDirectories: Set<String> = [""]
        var submodules = Set<String>()
        for position in 0..<count {
            guard let raw = git_index_get_byindex(index, position)?.pointee, let cPath = raw.path else { continue }
            let path = String(cString: cPath)
            tracked.insert(path)
            var directory = Substring(path)
            while let slash = directory.lastIndex(of: "/") {
                directory = directory[..<slash]
                if !trackedDirectories.insert(String(directory)).inserted { break }
            }
            let skipWorktree = UInt32(raw.flags_extended) & GIT_INDEX_ENTRY_SKIP_WORKTREE.rawValue != 0
            let stage = (UInt32(raw.flags) & 0x3000) >> 12
            if raw.mode == 0o160000 { submodules.insert(path) }
            guard raw.mode != 0o160000, !skipWorktree, stage == 0 else { continue }  // submodules, sparse, conflicts
            entries.append(Entry(
                path: path, size: raw.file_size, mtime: (raw.mtime.seconds, raw.mtime.nanoseconds), ino: raw.ino, mode: raw.mode,
                id: raw.id
            ))
        }

        // The index file's own mtime: an entry modified at or after it may have changed since it
        // was recorded without its stat data showing it (racily clean).
        var indexStat = stat()
        let gitDirectory = String(cString: git_repository_path(repository))
        stat(gitDirectory + "index", &indexStat)
        let indexTime = (Int(indexStat.st_mtim.tv_sec), Int(indexStat.st_mtim.tv_nsec))

        let root = workingDirectory
        let allEntries = entries
        let chunk = 1024
        let found = Mutex<[GitChange]>([])
        // Paths resolved against the working directory's descriptor: fewer components for the
        // kernel to walk, and no string to build per file.
        let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if rootDescriptor >= 0 { close(rootDescriptor) } }
        let base = rootDescriptor >= 0 ? rootDescriptor : AT_FDCWD
        DispatchQueue.concurrentPerform(iterations: (allEntries.count + chunk - 1) / chunk) { part in
            var local: [GitChange] = []
            var info = stat()
            for position in part * chunk..<min(allEntries.count, (part + 1) * chunk) {
                let entry = allEntries[position]
                let present = base == AT_FDCWD
                    ? lstat(root + "/" + entry.path, &info) == 0 : fstatat(base, entry.path, &info, AT_SYMLINK_NOFOLLOW) == 0
                guard present else {
                    local.append(GitChange(path: entry.path, kind: .deleted))
                    continue
                }
                let kind = info.st_mode & S_IFMT
                let mode: UInt32 = kind == S_IFLNK ? 0o120000 : (info.st_mode & 0o100 != 0 ? 0o100755 : 0o100644)
                if kind != S_IFREG, kind != S_IFLNK {
                    // A directory where a file was: the file is gone (what is inside is untracked).
                    local.append(GitChange(path: entry.path, kind: kind == S_IFDIR ? .deleted : .typeChanged))
                    continue
                }
                if mode != entry.mode {
                    local.append(GitChange(path: entry.path, kind: entry.mode == 0o120000 || mode == 0o120000 ? .typeChanged : .modified))
                    continue
                }
                let sameStat = UInt32(truncatingIfNeeded: info.st_size) == entry.size
                    && Int32(truncatingIfNeeded: info.st_mtim.tv_sec) == entry.mtime.0
                    && UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec) == entry.mtime.1
                    && UInt32(truncatingIfNeeded: info.st_ino) == entry.ino
                let racy = (Int(entry.mtime.0), Int(entry.mtime.1)) >= indexTime
                if sameStat, !racy { continue }
                if UInt32(truncatingIfNeeded: info.st_size) != entry.size, kind == S_IFREG {
                    local.append(GitChange(path: entry.path, kind: .modified))
                    continue
                }
                // The stat data can't tell: the content decides (as a blob, the way git hashes it).
                let file = root + "/" + entry.path
                var id = git_oid()
                let hashed = kind == S_IFLNK ? Self.symlinkBlobID(file, into: &id) : git_odb_hashfile(&id, file, GIT_OBJECT_BLOB) == 0
                var recorded = entry.id
                if !hashed || git_oid_equal(&id, &recorded) == 0 { local.append(GitChange(path: entry.path, kind: .modified)) }
            }
            if !local.isEmpty { found.withLock { $0 += local } }
        }
        changes += found.withLock { $0 }

        // Untracked: one walk of the working tree; only files the index doesn't know are checked
        // against .gitignore (on this thread: the repository is not thread-safe).
        var pending = [""]
        while let directory = pending.popLast() {
            let absolute = directory.isEmpty ? root : root + "/" + directory
            guard let handle = opendir(absolute) else { continue }
            var names: [(String, Bool)] = []
            while let item = readdir(handle) {
                let name = withUnsafeBytes(of: item.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." || (directory.isEmpty && name == ".git") { continue }
                var isDirectory = item.pointee.d_type == UInt8(DT_DIR)
                if item.pointee.d_type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    isDirectory = lstat(absolute + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
                }
                names.append((name, isDirectory))
            }
            closedir(handle)
            for (name, isDirectory) in names {
                let path = directory.isEmpty ? name : directory + "/" + name
                if isDirectory {
                    if submodules.contains(path) { continue }
                    if trackedDirectories.contains(path) || !isIgnored(path + "/") { pending.append(path) }
                } else if !tracked.contains(path), !isIgnored(path) {
                    changes.append(GitChange(path: path, kind: .untracked))
                }
            }
        }
        return Self.unique(changes)
    }

    private func isIgnored(_ path: String) -> Bool {
        var ignored: Int32 = 0
        return git_ignore_path_is_ignored(&ignored, repository, path) == 0 && ignored != 0
    }

    /// A symbolic link's blob id: the hash of its target, as git stores links.
    private static func symlinkBlobID(_ file: String, into id: inout git_oid) -> Bool {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(file, &buffer, buffer.count)
        guard count >= 0 else { return false }
        return buffer.withUnsafeBytes { git_odb_hash(&id, $0.baseAddress, count, GIT_OBJECT_BLOB) } == 0
    }
}
