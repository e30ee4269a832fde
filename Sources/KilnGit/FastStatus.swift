import CGit2
import KilnGitFormat
import KilnHost
import KilnPaths
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension GitRepository {
    /// The working tree and the index against HEAD — what ``workingTreeChanges()`` finds — the
    /// way git itself is fast about it:
    ///
    /// - the index read with ``GitIndex`` (one pass, no hash map);
    /// - staged changes from its cache-tree (``stagedChanges(in:)``): unchanged directories are
    ///   skipped whole;
    /// - each entry's recorded `stat` data compared with the file's, on every core, resolving
    ///   each name against its directory's descriptor; only a file whose data differ, or whose
    ///   mtime isn't older than the index (racily clean), is hashed and compared with its blob id;
    /// - untracked files from one walk of the working tree. A directory holding exactly as many
    ///   files as the index has present there has no untracked file, so its names aren't looked
    ///   at; elsewhere only names the index doesn't know are checked against `.gitignore`.
    ///
    /// Submodules and entries marked skip-worktree are left out, as in ``workingTreeChanges()``.
    /// An index this reader doesn't know (a split index) falls back to libgit2.
    public func fastWorkingTreeChanges() throws(GitError) -> [GitChange] {
        let index: GitIndex
        do {
            index = try self.index()
        } catch  where error.code == .unsupportedIndex {
            return try workingTreeChanges()
        }
        var changes = try stagedChanges(in: index)
        let (modified, present) = compareWorkingTree(with: index)
        changes += modified
        changes += untracked(index: index, present: present)
        return GitChange.uniqueSorted(changes)
    }

    /// The entries whose files differ from the index, and for each entry whether its file is
    /// there as a file or link (what the untracked walk counts).
    private func compareWorkingTree(with index: GitIndex) -> ([GitChange], [Bool]) {
        let entries = index.entries
        let root = workingDirectory
        let rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if rootDescriptor >= 0 { close(rootDescriptor) } }
        let base = rootDescriptor >= 0 ? rootDescriptor : AT_FDCWD
        let indexTime = index.modified
        let found = HostMutex<[GitChange]>([])
        var present = [Bool](repeating: false, count: entries.count)
        let chunk = 1024
        present.withUnsafeMutableBufferPointer { presentBuffer in
            nonisolated(unsafe) let presentFlags = presentBuffer  // each iteration writes its own positions
            parallelLoop(iterations: (entries.count + chunk - 1) / chunk) { part in
                var local: [GitChange] = []
                var info = stat()
                // The directory of the previous entry, open: most entries share their neighbour's.
                var directory = (start: UInt32(0), length: UInt32.max, descriptor: Int32(-1))
                defer { if directory.descriptor >= 0, directory.descriptor != base { close(directory.descriptor) } }
                for position in part * chunk..<min(entries.count, (part + 1) * chunk) {
                    let entry = entries[position]
                    guard entry.stage == 0, entry.mode != 0o160000, !entry.skipsWorktree else { continue }
                    if entry.directoryLength != directory.length
                        || !index.sameDirectory(entry, startingAt: directory.start)
                    {
                        if directory.descriptor >= 0, directory.descriptor != base { close(directory.descriptor) }
                        directory = (
                            entry.nameStart, entry.directoryLength,
                            entry.directoryLength == 0 ? base : index.openDirectory(of: entry, in: base)
                        )
                    }
                    let status = index.withPath(of: entry) { path in
                        directory.descriptor >= 0
                            ? fstatat(
                                directory.descriptor,
                                path + Int(entry.directoryLength),
                                &info,
                                AT_SYMLINK_NOFOLLOW
                            )
                            : fstatat(base, path, &info, AT_SYMLINK_NOFOLLOW)
                    }
                    guard status == 0 else {
                        local.append(GitChange(path: index.path(of: entry), kind: .deleted))
                        continue
                    }
                    let kind = info.st_mode & S_IFMT
                    if kind != S_IFREG, kind != S_IFLNK {
                        // A directory where a file was: the file is gone (what is inside is untracked).
                        local.append(
                            GitChange(path: index.path(of: entry), kind: kind == S_IFDIR ? .deleted : .typeChanged)
                        )
                        continue
                    }
                    presentFlags[position] = true
                    let mode: UInt32 = kind == S_IFLNK ? 0o120000 : (info.st_mode & 0o100 != 0 ? 0o100755 : 0o100644)
                    if mode != entry.mode {
                        let typeChanged = entry.mode == 0o120000 || mode == 0o120000
                        local.append(
                            GitChange(path: index.path(of: entry), kind: typeChanged ? .typeChanged : .modified)
                        )
                        continue
                    }
                    let sameStat =
                        UInt32(truncatingIfNeeded: info.st_size) == entry.size
                        && UInt32(truncatingIfNeeded: info.st_mtim.tv_sec) == entry.modified.seconds
                        && UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec) == entry.modified.nanoseconds
                        && UInt32(truncatingIfNeeded: info.st_ino) == entry.inode
                    let racy =
                        Int64(entry.modified.seconds) * 1_000_000_000 + Int64(entry.modified.nanoseconds) >= indexTime
                    if sameStat, !racy { continue }
                    if UInt32(truncatingIfNeeded: info.st_size) != entry.size, kind == S_IFREG {
                        local.append(GitChange(path: index.path(of: entry), kind: .modified))
                        continue
                    }
                    // The stat data can't tell: the content decides (as a blob, the way git hashes it).
                    let file = root + "/" + index.path(of: entry)
                    let id = kind == S_IFLNK ? Self.symlinkBlobID(file) : GitObjectID.blob(ofFileAt: file)
                    if id != entry.id { local.append(GitChange(path: index.path(of: entry), kind: .modified)) }
                }
                if !local.isEmpty { found.withLock { $0 += local } }
            }
        }
        return (found.withLock { $0 }, present)
    }

    /// Untracked files: one walk of the working tree (on this thread: `.gitignore` checks go
    /// through the repository, which is not thread-safe).
    private func untracked(index: GitIndex, present: [Bool]) -> [GitChange] {
        var changes: [GitChange] = []
        var names: [UInt8] = []  // one directory's file names, NUL-separated, reused
        var pending: [(path: String, range: Range<Int>)] = [("", index.entries.indices)]
        while let next = pending.popLast() {
            let (directory, range) = next
            let absolute = directory.isEmpty ? workingDirectory : workingDirectory + "/" + directory.dropLast()
            guard let handle = opendir(absolute) else { continue }
            names.removeAll(keepingCapacity: true)
            var fileCount = 0
            var subdirectories: [String] = []
            while let item = readdir(handle) {
                let isDot = withUnsafeBytes(of: item.pointee.d_name) { name in
                    name[0] == UInt8(ascii: ".")
                        && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0)
                            || (name[1] == UInt8(ascii: "g") && name[2] == UInt8(ascii: "i")
                                && name[3] == UInt8(ascii: "t") && name[4] == 0))
                }
                if isDot { continue }  // ".", "..", and any ".git"
                var isDirectory = item.pointee.d_type == UInt8(DT_DIR)
                if item.pointee.d_type == UInt8(DT_UNKNOWN) {
                    var info = stat()
                    let name = withUnsafeBytes(of: item.pointee.d_name) {
                        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    isDirectory = lstat(absolute + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
                }
                withUnsafeBytes(of: item.pointee.d_name) { name in
                    let bytes = name.prefix { $0 != 0 }
                    if isDirectory {
                        subdirectories.append(String(decoding: bytes, as: UTF8.self))
                    } else {
                        fileCount += 1
                        names.append(contentsOf: bytes)
                        names.append(0)
                    }
                }
            }
            closedir(handle)

            // The files the index has here, and whether each is there: if as many files are here
            // as it has present, they are those files, and none is untracked.
            let depth = directory.utf8.count
            var trackedHere = 0
            var countable = true
            var trackedNames: Set<String>?
            for position in range where Int(index.entries[position].directoryLength) == depth {
                let entry = index.entries[position]
                if entry.stage != 0 || entry.skipsWorktree || entry.mode == 0o160000 { countable = false }
                if present[position] { trackedHere += 1 }
            }
            if !countable || trackedHere != fileCount {
                var known = Set<String>()
                for position in range where Int(index.entries[position].directoryLength) == depth {
                    known.insert(
                        index.pathBytes(
                            of: index.entries[position],
                            from: depth,
                            count: Int(index.entries[position].nameLength) - depth
                        )
                    )
                }
                trackedNames = known
            }
            if let trackedNames {
                for name in names.split(separator: 0) {
                    let name = String(decoding: name, as: UTF8.self)
                    if !trackedNames.contains(name), !isIgnored(directory + name) {
                        changes.append(GitChange(path: directory + name, kind: .untracked))
                    }
                }
            }
            for name in subdirectories {
                let path = directory + name
                let inside = index.range(ofPrefix: path + "/", in: range)
                if !inside.isEmpty {
                    pending.append((path + "/", inside))
                } else if let position = index.position(of: path), index.entries[position].mode == 0o160000 {
                    continue  // a submodule: its own repository
                } else if !isIgnored(path + "/") {
                    // Another repository inside this one is listed as a directory, not walked (as git does).
                    var info = stat()
                    if lstat(workingDirectory + "/" + path + "/.git", &info) == 0 {
                        changes.append(GitChange(path: path + "/", kind: .untracked))
                    } else {
                        pending.append((path + "/", inside))
                    }
                }
            }
        }
        return changes
    }

    private func isIgnored(_ path: String) -> Bool {
        var ignored: Int32 = 0
        return kiln_git_ignore_path_is_ignored(&ignored, repository, path) == 0 && ignored != 0
    }

    /// A symbolic link's blob id: the hash of its target, as git stores links.
    private static func symlinkBlobID(_ file: String) -> GitObjectID? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(file, &buffer, buffer.count)
        guard count >= 0 else { return nil }
        return buffer.withUnsafeBytes { GitObjectID.blob(of: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
}

/// `O_PATH` (Linux; Glibc's module doesn't export it): a descriptor only for `*at` calls, which
/// needs no read permission and does no access check.
private let pathOnly: Int32 = 0o10000000

extension GitIndex {
    /// Whether an entry's directory is the one of the path starting at `start` in the names
    /// (of the same directory length).
    func sameDirectory(_ entry: Entry, startingAt start: UInt32) -> Bool {
        withNames { raw in
            memcmp(raw.baseAddress! + Int(entry.nameStart), raw.baseAddress! + Int(start), Int(entry.directoryLength))
                == 0
        }
    }

    /// Opens an entry's directory (for `fstatat`), relative to `base`; -1 when it can't be.
    func openDirectory(of entry: Entry, in base: Int32) -> Int32 {
        var directory = withNames { buffer in
            Array(buffer[Int(entry.nameStart)..<Int(entry.nameStart + entry.directoryLength)])
        }
        directory.append(0)
        return directory.withUnsafeBufferPointer { path in
            path.withMemoryRebound(to: CChar.self) { openat(base, $0.baseAddress!, pathOnly | O_DIRECTORY | O_CLOEXEC) }
        }
    }
}
