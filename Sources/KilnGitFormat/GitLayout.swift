#if canImport(Glibc)
    import Glibc
#endif

/// Where a repository's parts are, found the way git finds them, without libgit2 (whose start-up
/// costs more than a hook that has nothing to do): `$GIT_DIR` (with `$GIT_WORK_TREE`), else the
/// first `.git` upwards — a directory, or a file saying `gitdir: PATH` (a worktree, a submodule).
///
/// Threading: a value type.
public struct GitLayout: Sendable, Equatable {
    /// The working directory (absolute, no trailing `/`).
    public var workingDirectory: String
    /// The git directory: `.git`, or a worktree's own directory under the main one's `worktrees/`.
    public var gitDirectory: String
    /// The directory shared by every worktree (`commondir` says where): objects, most references,
    /// the configuration, hooks. The git directory itself outside a linked worktree.
    public var commonDirectory: String
    /// The index git uses: `$GIT_INDEX_FILE` when set (git sets it for the hooks of a commit made
    /// with a temporary index, `git commit -a` or `git commit PATH`), else `index` in the git
    /// directory.
    public var indexPath: String

    /// The repository holding `directory` (absolute), or `nil` when there is none.
    public static func locate(from directory: String) -> GitLayout? {
        if let gitDirectory = gitVariable("GIT_DIR") {
            let current = currentDirectory()
            let absolute = gitDirectory.hasPrefix("/") ? gitDirectory : current + "/" + gitDirectory
            return GitLayout(gitDirectory: absolute, workingDirectory: gitVariable("GIT_WORK_TREE") ?? current)
        }
        var current = directory
        while true {
            var info = stat()
            let dotGit = current + "/.git"
            if stat(dotGit, &info) == 0 {
                if info.st_mode & S_IFMT == S_IFDIR {
                    return GitLayout(gitDirectory: dotGit, workingDirectory: current)
                }
                guard let text = readSmallFile(dotGit).map({ String(decoding: $0, as: UTF8.self) }),
                    text.hasPrefix("gitdir: ")
                else {
                    return nil
                }
                let gitDirectory = String(text.dropFirst("gitdir: ".count).prefix { $0 != "\n" && $0 != "\r" })
                return GitLayout(
                    gitDirectory: gitDirectory.hasPrefix("/") ? gitDirectory : current + "/" + gitDirectory,
                    workingDirectory: current
                )
            }
            guard let slash = current.lastIndex(of: "/"), current != "/" else { return nil }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
        }
    }

    private init(gitDirectory: String, workingDirectory: String) {
        var gitDirectory = gitDirectory
        while gitDirectory.count > 1, gitDirectory.hasSuffix("/") { gitDirectory.removeLast() }
        self.gitDirectory = gitDirectory
        self.workingDirectory = workingDirectory
        if let line = readSmallFile(gitDirectory + "/commondir").map({ String(decoding: $0, as: UTF8.self) }) {
            let common = String(line.prefix { $0 != "\n" && $0 != "\r" })
            commonDirectory = common.hasPrefix("/") ? common : gitDirectory + "/" + common
        } else {
            commonDirectory = gitDirectory
        }
        // Relative: to the directory git runs us in, as git means it.
        indexPath = gitVariable("GIT_INDEX_FILE") ?? gitDirectory + "/index"
    }

    /// The objects directory: `$GIT_OBJECT_DIRECTORY`, else `objects` in the common directory.
    public var objectsDirectory: String {
        gitVariable("GIT_OBJECT_DIRECTORY") ?? commonDirectory + "/objects"
    }
}

/// An environment variable git reads, `nil` when unset or empty (as git treats both).
package func gitVariable(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

/// The current directory, absolute (`/` when it can't be read).
package func currentDirectory() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard getcwd(&buffer, buffer.count) != nil else { return "/" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The bytes of a small file (a reference, `HEAD`, a `.git` file), or `nil` when it can't be read.
package func readSmallFile(_ path: String) -> [UInt8]? {
    // Regular files only, opened without blocking: never wait on a FIFO planted at the path.
    let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size < 1 << 30 else { return nil }
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0, errno == EINTR { continue }
        if count < 0 { return nil }
        if count == 0 { return result }
        result += buffer[0..<count]
    }
}

/// A whole file mapped read-only, unmapped when released.
///
/// Threading: immutable; any thread.
package final class MappedFile: Sendable {
    /// The file's bytes.
    package var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: count)
    }
    /// The file's modification time when mapped, ns since the epoch.
    package let modified: Int64
    private let address: Int
    private let count: Int

    /// Maps `path`; `nil` (with `errno` set) when it can't be opened or mapped. An empty file maps
    /// to no bytes.
    package init?(path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        count = Int(info.st_size)
        guard count > 0 else {
            address = 0
            return
        }
        guard let mapped = mmap(nil, count, PROT_READ, MAP_PRIVATE, descriptor, 0), mapped != MAP_FAILED else {
            return nil
        }
        address = Int(bitPattern: mapped)
    }

    deinit {
        if count > 0 { munmap(UnsafeMutableRawPointer(bitPattern: address), count) }
    }
}
