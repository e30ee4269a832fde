/// One entry of a tree object: a name, a mode and an id.
///
/// Threading: a value type.
public struct GitTreeEntry: Sendable, Equatable {
    /// The entry's name (one path component).
    public var name: String
    /// `0o40000` (a tree), `0o100644`, `0o100755`, `0o120000` (symbolic link) or `0o160000`
    /// (submodule).
    public var mode: UInt32
    /// The blob's, tree's or (for a submodule) commit's id.
    public var id: GitObjectID

    /// An entry named `name`.
    public init(name: String, mode: UInt32, id: GitObjectID) {
        self.name = name
        self.mode = mode
        self.id = id
    }

    /// Whether it is a directory.
    public var isTree: Bool { mode & 0o170000 == 0o040000 }

    /// The entries of a tree object's content: `MODE NAME\0` and 20 bytes of id, repeated.
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` for content that isn't a tree.
    static func parse(_ data: [UInt8], id: GitObjectID) throws(GitError) -> [GitTreeEntry] {
        var entries: [GitTreeEntry] = []
        var position = 0
        let complete = data.withUnsafeBytes { raw -> Bool in
            while position < raw.count {
                var mode: UInt32 = 0
                while position < raw.count, raw[position] != UInt8(ascii: " ") {
                    let digit = raw[position] &- UInt8(ascii: "0")
                    guard digit < 8 else { return false }
                    mode = mode << 3 | UInt32(digit)
                    position += 1
                }
                let nameStart = position + 1
                var nameEnd = nameStart
                while nameEnd < raw.count, raw[nameEnd] != 0 { nameEnd += 1 }
                guard nameEnd + 21 <= raw.count else { return false }
                entries.append(
                    GitTreeEntry(
                        name: String(
                            decoding: UnsafeRawBufferPointer(rebasing: raw[nameStart..<nameEnd]),
                            as: UTF8.self
                        ),
                        mode: mode,
                        id: GitObjectID(raw.baseAddress! + nameEnd + 1)
                    )
                )
                position = nameEnd + 21
            }
            return true
        }
        guard complete else { throw GitError(code: .unsupportedRepository, message: "tree \(id) is damaged") }
        return entries
    }
}
