import KilnGit
import KilnGitFormat
import KilnHost
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// What a pre-commit hook's tasks see of partly staged files: their staged version, in place.
///
/// A commit holds the index, not the working tree. When a staged file also has unstaged edits,
/// its staged content is written to a file of this hook's own under `.kiln/hooks/staged-PID-*`,
/// and the hook's `kiln run` starts in a mount namespace of its own where that file is bind-mounted
/// over the working copy (``System/spawn(_:showing:)``). The tasks read the path they always read
/// and get what is being committed; what they write there goes to the copy. Nothing else sees the
/// view: the working tree, the index and the stash are never written, so a failure, Ctrl-C or
/// `kill -9` can't lose an edit — the view ends with the processes in it, and a later hook removes
/// the copies a killed one left. pre-commit's stash dance (pre-commit #1505) and lefthook's
/// `git checkout .` (lefthook #1480) can lose unstaged work in just these cases.
///
/// With no partly staged file, the common case, nothing is written and the tasks run as they
/// always do: the check costs a `stat` per staged file (the index vouches for an unchanged one).
///
/// Threading: used by one thread.
struct StagedView {
    /// Each staged version and the working-tree file it is shown at.
    let bindings: [(source: String, target: String)]
    /// The directory holding the staged versions.
    let directory: String

    /// A partly staged file kiln can't show its tasks as staged.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// The view of the staged versions of `stagedFiles` (absolute) that differ from their working
    /// copies, or `nil` when none does.
    ///
    /// - Throws: ``Refusal`` when a partly staged file can't be shown (deleted from the working
    ///   tree, a link whose target changed, a staged version that can't be read).
    static func make(layout: GitLayout, projectRoot: String, stagedFiles: [String]) throws(Refusal) -> StagedView? {
        guard !stagedFiles.isEmpty else { return nil }
        let index: GitIndex
        do {
            index = try GitIndex(path: layout.indexPath)
        } catch {
            throw Refusal(description: "can't read the index \(layout.indexPath) to find partly staged files: \(error)")
        }
        // The index just read vouches for unchanged files; the objects are opened once, when needed.
        let tracked = GitTrackedContent(index: index)
        var openedObjects: GitObjectDatabase?
        func objects() throws -> GitObjectDatabase {
            if let openedObjects { return openedObjects }
            let opened = try GitObjectDatabase(layout: layout)
            openedObjects = opened
            return opened
        }
        let top = layout.workingDirectory + "/"
        var partly: [(path: String, entry: GitIndex.Entry)] = []
        for path in stagedFiles where path.hasPrefix(top) {
            let relative = String(path.dropFirst(top.count))
            // Deleted: not in the commit.
            guard let entry = index.entry(for: relative), entry.stage == 0 else { continue }
            let kind = entry.mode & 0o170000
            guard kind == 0o100000 || kind == 0o120000 else { continue }  // a submodule: its own repository
            var info = stat()
            guard lstat(path, &info) == 0 else {
                throw Refusal(
                    description:
                        "\(relative) is staged but deleted from the working tree, so the hook's tasks can't be shown what is committed; restore it (git restore \(relative)) or stage its deletion"
                )
            }
            if kind == 0o120000 {
                // A link: the staged target against the working one.
                let target = Self.linkTarget(path)
                let staged = try? objects().read(entry.id).data
                guard let target, let staged, Array(target.utf8) == staged else {
                    throw Refusal(
                        description:
                            "\(relative) is a symbolic link staged with another target than it has now; stage it whole (git add \(relative)) or restore it"
                    )
                }
                continue
            }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw Refusal(
                    description:
                        "\(relative) is staged as a file but is no longer one in the working tree; stage it whole or restore it"
                )
            }
            let executable = info.st_mode & 0o100 != 0
            if executable == (entry.mode & 0o100 != 0) {
                if let status = FileSignature.of(path), tracked.contentID(of: relative, status: status) != nil {
                    continue
                }  // the index vouches
                if let id = tracked.computeContentID(of: path), id.high == entry.id.prefix128.high,
                    id.low == entry.id.prefix128.low
                {
                    continue
                }
            }
            partly.append((path, entry))
        }
        guard !partly.isEmpty else { return nil }

        let kiln = KilnDirectory(root: projectRoot)
        let made = kiln.createHooks()
        if made != 0 { throw Refusal(description: "can't make \(kiln.hooks): \(String(cString: strerror(made)))") }
        var template = Array((kiln.hooks + "/staged-\(getpid())-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw Refusal(
                description: "can't make a directory under \(kiln.hooks): \(String(cString: strerror(errno)))"
            )
        }
        let directory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var view = StagedView(bindings: [], directory: directory)
        let database: GitObjectDatabase
        do {
            database = try objects()
        } catch {
            view.remove()
            throw Refusal(description: "can't open the repository's objects to read staged versions: \(error)")
        }
        var bindings: [(source: String, target: String)] = []
        for (number, (path, entry)) in partly.enumerated() {
            let copy = directory + "/\(number)"
            do {
                let data = try database.read(entry.id).data
                try Self.write(data, to: copy, mode: entry.mode & 0o100 != 0 ? 0o755 : 0o644)
            } catch {
                view.remove()
                throw Refusal(
                    description:
                        "can't write the staged version of \(String(path.dropFirst(top.count))) to \(copy): \(error)"
                )
            }
            bindings.append((copy, path))
        }
        view = StagedView(bindings: bindings, directory: directory)
        return view
    }

    /// The partly staged files, relative to the repository's top, for messages.
    func files(relativeTo top: String) -> [String] {
        bindings.map { $0.target.hasPrefix(top + "/") ? String($0.target.dropFirst(top.count + 1)) : $0.target }
    }

    /// Removes the staged versions.
    func remove() {
        for name in HookFileLists.names(in: directory) { unlink(directory + "/" + name) }
        rmdir(directory)
    }

    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func write(_ data: [UInt8], to path: String, mode: mode_t) throws(Refusal) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw Refusal(description: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        let failure = data.withUnsafeBytes { Files.writeAll(descriptor, $0) }
        guard failure == 0 else { throw Refusal(description: String(cString: strerror(failure))) }
        fchmod(descriptor, mode)
    }
}
