#if canImport(Glibc)
    import Glibc
#endif

extension GitLayout {
    /// The commit HEAD names, read the way git reads references: `HEAD` in the git directory, a
    /// symbolic reference followed through loose reference files (per-worktree ones in the git
    /// directory, the rest in the common one) and then `packed-refs`. `nil` when HEAD names a
    /// branch with no commit yet (a new repository).
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` for the reftable store or a reference this
    ///   reader can't follow.
    public func headCommit() throws(GitError) -> GitObjectID? {
        var info = stat()
        if stat(commonDirectory + "/reftable", &info) == 0 {
            throw GitError(
                code: .unsupportedRepository,
                message: "the repository at \(workingDirectory) keeps its references in a reftable"
            )
        }
        var name = "HEAD"
        var packed: [UInt8]?
        for _ in 0..<10 {
            let perWorktree =
                name == "HEAD" || name.hasPrefix("refs/bisect/") || name.hasPrefix("refs/worktree/")
                || name.hasPrefix("refs/rewritten/")
            var value = readSmallFile((perWorktree ? gitDirectory : commonDirectory) + "/" + name)
            if value == nil, !perWorktree {
                if packed == nil { packed = readSmallFile(commonDirectory + "/packed-refs") ?? [] }
                value = Self.packedReference(name, in: packed!)
            }
            guard var text = value else { return nil }  // a branch without commits yet
            while let last = text.last,
                last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") || last == UInt8(ascii: " ")
            { text.removeLast() }
            if text.starts(with: Array("ref: ".utf8)) {
                name = String(decoding: text.dropFirst(5), as: UTF8.self)
                continue
            }
            guard let id = GitObjectID(hex: text) else {
                throw GitError(
                    code: .unsupportedRepository,
                    message: "reference \(name) of \(workingDirectory) is not an object id"
                )
            }
            return id
        }
        throw GitError(
            code: .unsupportedRepository,
            message: "HEAD of \(workingDirectory) is a chain of more than 10 symbolic references"
        )
    }

    /// The id `packed-refs` gives `name` (lines `HEX NAME`; `#` and `^` lines are comments and
    /// peeled tags), as its 40 hex digits.
    private static func packedReference(_ name: String, in packed: [UInt8]) -> [UInt8]? {
        let wanted = Array(name.utf8)
        for line in packed.split(separator: UInt8(ascii: "\n")) where line.count == 41 + wanted.count {
            guard line.first != UInt8(ascii: "#"), line.first != UInt8(ascii: "^"),
                line[line.startIndex + 40] == UInt8(ascii: " ")
            else { continue }
            if line.dropFirst(41).elementsEqual(wanted) { return Array(line.prefix(40)) }
        }
        return nil
    }
}
