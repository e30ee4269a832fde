import CKilnZlib
import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// A repository's objects read directly, as git stores them: loose objects (`objects/xx/…`,
/// zlib), pack files through their version-2 indexes (with offset and reference deltas), and
/// the object directories `objects/info/alternates` names.
///
/// It reads the few trees a hook compares with the index without libgit2, whose start-up alone
/// (about 7 ms: Debian's build parses the system's CA certificates) is a third of a hook's
/// budget. Anything it doesn't know — a SHA-256 repository, a version-1 pack index, an object it
/// can't find — is a ``GitError`` `.unsupportedRepository`: read through libgit2 then.
///
/// Threading: not thread-safe (it caches pack files and delta bases); use it from one thread.
public final class GitObjectDatabase {
    /// An object's type, numbered as in pack files.
    public enum Kind: UInt8, Sendable {
        /// A commit: its tree, parents, author, message.
        case commit = 1
        /// A directory listing: names, modes and ids.
        case tree = 2
        /// A file's content.
        case blob = 3
        /// An annotated tag.
        case tag = 4
    }

    /// The object directories: the repository's, then its alternates'.
    private let directories: [String]
    /// The repository's layout, when made from one: where HEAD is.
    let layout: GitLayout?
    /// The pack files, found on the first object that isn't loose.
    private var packs: [GitPack]?
    /// Decoded delta bases, by pack and offset: a chain of tree deltas shares its bases.
    private var bases: [BaseKey: (Kind, [UInt8])] = [:]
    private var basesSize = 0

    private struct BaseKey: Hashable {
        var pack: Int
        var offset: Int
    }

    /// The objects of the repository laid out as `layout`.
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` for a SHA-256 repository.
    public convenience init(layout: GitLayout) throws(GitError) {
        if let config = readSmallFile(layout.commonDirectory + "/config"),
            String(decoding: config, as: UTF8.self).lowercased().containsText("objectformat")
        {
            throw GitError(
                code: .unsupportedRepository,
                message: "the repository at \(layout.workingDirectory) sets extensions.objectFormat"
            )
        }
        self.init(objectsDirectory: layout.objectsDirectory, layout: layout)
    }

    /// The objects under `objectsDirectory` and its alternates.
    public convenience init(objectsDirectory: String) {
        self.init(objectsDirectory: objectsDirectory, layout: nil)
    }

    private init(objectsDirectory: String, layout: GitLayout?) {
        self.layout = layout
        var directories: [String] = []
        func add(_ directory: String, depth: Int) {
            guard depth < 5, !directories.contains(directory) else { return }
            directories.append(directory)
            guard let text = readSmallFile(directory + "/info/alternates").map({ String(decoding: $0, as: UTF8.self) })
            else { return }
            for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
                let path = String(line)
                add(path.hasPrefix("/") ? path : directory + "/" + path, depth: depth + 1)
            }
        }
        add(objectsDirectory, depth: 0)
        self.directories = directories
    }

    /// An object's type and content.
    ///
    /// - Throws: ``GitError`` `.unsupportedRepository` when the object isn't found or can't be
    ///   decoded.
    public func read(_ id: GitObjectID) throws(GitError) -> (kind: Kind, data: [UInt8]) {
        let hex = id.description
        for directory in directories {
            let path = directory + "/" + hex.prefix(2) + "/" + hex.dropFirst(2)
            if let compressed = readSmallFile(path) {
                return try Self.looseObject(compressed, id: hex)
            }
        }
        for (number, pack) in loadPacks().enumerated() {
            if let offset = pack.offset(of: id) { return try object(in: pack, number: number, at: offset) }
        }
        throw GitError(code: .unsupportedRepository, message: "object \(hex) not found")
    }

    /// A tree's entries, in the tree's order.
    ///
    /// - Throws: ``GitError`` when the object can't be read or isn't a tree.
    public func tree(_ id: GitObjectID) throws(GitError) -> [GitTreeEntry] {
        let (kind, data) = try read(id)
        guard kind == .tree else { throw GitError(code: .failed, message: "object \(id) is a \(kind), not a tree") }
        return try GitTreeEntry.parse(data, id: id)
    }

    /// The root tree of a commit.
    ///
    /// - Throws: ``GitError`` when the object can't be read or isn't a commit.
    public func treeOfCommit(_ id: GitObjectID) throws(GitError) -> GitObjectID {
        let (kind, data) = try read(id)
        guard kind == .commit else { throw GitError(code: .failed, message: "object \(id) is a \(kind), not a commit") }
        // `tree HEX\n` is a commit's first line.
        guard data.count >= 46, data.starts(with: Array("tree ".utf8)), let tree = GitObjectID(hex: data[5..<45]) else {
            throw GitError(code: .failed, message: "commit \(id) has no tree line")
        }
        return tree
    }

    // MARK: Loose objects

    /// `TYPE SIZE\0CONTENT`, deflated.
    private static func looseObject(_ compressed: [UInt8], id: String) throws(GitError) -> (kind: Kind, data: [UInt8]) {
        let inflated = try compressed.withUnsafeBytes { raw in
            Result { () throws(GitError) in try inflate(raw, size: nil, what: "object \(id)") }
        }.get()
        guard let space = inflated.firstIndex(of: UInt8(ascii: " ")), let nul = inflated[space...].firstIndex(of: 0),
            let size = Int(String(decoding: inflated[(space + 1)..<nul], as: UTF8.self)),
            inflated.count - nul - 1 == size
        else {
            throw GitError(code: .unsupportedRepository, message: "object \(id) has no valid header")
        }
        let kind: Kind
        switch String(decoding: inflated[..<space], as: UTF8.self) {
        case "commit": kind = .commit
        case "tree": kind = .tree
        case "blob": kind = .blob
        case "tag": kind = .tag
        default: throw GitError(code: .unsupportedRepository, message: "object \(id) has an unknown type")
        }
        return (kind, Array(inflated[(nul + 1)...]))
    }

    // MARK: Packs

    private func loadPacks() -> [GitPack] {
        if let packs { return packs }
        var found: [GitPack] = []
        for directory in directories {
            guard let stream = opendir(directory + "/pack") else { continue }
            defer { closedir(stream) }
            var names: [String] = []
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                if name.hasSuffix(".idx") { names.append(name) }
            }
            // Newest first is what git does; any order finds the same objects.
            for name in names.sorted() {
                if let pack = GitPack(indexPath: directory + "/pack/" + name) { found.append(pack) }
            }
        }
        packs = found
        return found
    }

    /// The object at `offset` of a pack, its deltas applied.
    private func object(in pack: GitPack, number: Int, at offset: Int) throws(GitError) -> (kind: Kind, data: [UInt8]) {
        // Walk down the delta chain to a base (or a cached one), then apply the deltas upwards.
        var deltas: [[UInt8]] = []
        var current = offset
        var result: (Kind, [UInt8])
        while true {
            if let cached = bases[BaseKey(pack: number, offset: current)] {
                result = cached
                break
            }
            let entry = try pack.entry(at: current)
            switch entry.type {
            case 1...4:
                result = (Kind(rawValue: entry.type)!, try pack.inflate(at: entry.dataOffset, size: entry.size))
            case 6:  // offset delta
                deltas.append(try pack.inflate(at: entry.dataOffset, size: entry.size))
                current = entry.baseOffset
                continue
            case 7:  // reference delta: the base is named by id, in this pack or another
                guard let baseID = entry.baseID else {
                    throw GitError(
                        code: .unsupportedRepository,
                        message: "pack \(pack.path) has a delta without a base at \(current)"
                    )
                }
                deltas.append(try pack.inflate(at: entry.dataOffset, size: entry.size))
                if let base = pack.offset(of: baseID) {
                    current = base
                    continue
                }
                result = try read(baseID)
            default:
                throw GitError(
                    code: .unsupportedRepository,
                    message: "pack \(pack.path) has an object of type \(entry.type) at \(current)"
                )
            }
            break
        }
        if !deltas.isEmpty { remember(result, pack: number, offset: current) }
        for delta in deltas.reversed() {
            result = (result.0, try GitDelta.apply(delta, to: result.1, what: "an object of \(pack.path)"))
        }
        return result
    }

    /// Keeps a delta base, within 32 MiB.
    private func remember(_ base: (Kind, [UInt8]), pack: Int, offset: Int) {
        if basesSize + base.1.count > 32 << 20 {
            bases.removeAll()
            basesSize = 0
        }
        bases[BaseKey(pack: pack, offset: offset)] = base
        basesSize += base.1.count
    }
}

@available(*, unavailable, message: "GitObjectDatabase caches as it reads; use it from one thread")
extension GitObjectDatabase: Sendable {}

/// zlib's inflate over `input`: `size` bytes expected (then exactly that many), or as many as
/// the stream holds.
package func inflate(_ input: UnsafeRawBufferPointer, size: Int?, what: @autoclosure () -> String) throws(GitError)
    -> [UInt8]
{
    var stream = z_stream()
    guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
        throw GitError(code: .failed, message: "zlib can't start")
    }
    defer { inflateEnd(&stream) }
    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.avail_in = UInt32(min(input.count, Int(UInt32.max)))
    // One spare byte: the stream's end is then seen with room left, and more would be damage.
    var output = [UInt8](repeating: 0, count: max((size ?? input.count * 3) + 1, 64))
    var produced = 0
    while true {
        let status = output.withUnsafeMutableBytes { buffer in
            stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self) + produced
            stream.avail_out = UInt32(buffer.count - produced)
            let status = CKilnZlib.inflate(&stream, Z_NO_FLUSH)
            produced = buffer.count - Int(stream.avail_out)
            return status
        }
        if status == Z_STREAM_END { break }
        guard status == Z_OK || status == Z_BUF_ERROR, stream.avail_out == 0, size == nil else {
            throw GitError(code: .unsupportedRepository, message: "\(what()) is damaged (zlib \(status))")
        }
        output += [UInt8](repeating: 0, count: output.count)
    }
    if let size, produced != size {
        throw GitError(code: .unsupportedRepository, message: "\(what()) is damaged (\(produced) bytes, not \(size))")
    }
    output.removeLast(output.count - produced)
    return output
}
