import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// What the last plan's project-boundary check (``ProjectBoundary``: every `dir:`, `generates:`
/// and `depfile:` inside the root, links resolved) rested on, so a plan of the same Taskfile over
/// the same directories needn't check 10,000 outputs again. Saved as `.kiln/boundary` when the
/// check found nothing outside.
///
/// The verdict depends on the paths checked — fixed by the Taskfile's contents
/// (``Taskfile/contentIdentity``) and the root — and on the links on the way. Those can only change
/// by changing a directory: every directory the check resolved, and each one between it and the
/// root, is recorded with its `lstat` signature (or as missing). A link planted anywhere on the
/// way, a directory replaced by a link, a directory made where there was none: each changes the
/// signature of a recorded directory (its own, or its parent's), and the memo no longer vouches.
/// A signature is trusted only by the one racy rule (``FileSignature/isSettled(at:)``).
///
/// **Keep the key whole.** The paths checked are rendered from the Taskfile's variables, which
/// today come from the Taskfile alone, so its content identity fixes them. If variables ever come
/// from elsewhere (the environment, `sh:` commands, the command line), key the memo on the
/// rendered paths too, or it could vouch for paths it never checked.
///
/// Threading: a value type; its files are written atomically.
struct BoundaryMemo {
    static let magic = Array("KILNBND\u{1}".utf8)

    let root: String
    let identity: UInt64

    /// Whether the memo vouches that the plan's paths are inside the root.
    func vouches(resolvedRoot: String) -> Bool {
        let path = KilnDirectory(root: root).boundaryMemo
        guard let bytes = Files.readSealed(path, magic: Self.magic) else { return false }
        var reader = BinaryReader(bytes: bytes)
        guard reader.readBytes(count: Self.magic.count) == Self.magic, reader.readUInt64() == identity,
            reader.readString() == root, reader.readString() == resolvedRoot, let seenAt = reader.readUInt64(),
            let count = reader.readInteger(), count >= 0, count <= bytes.count
        else { return false }
        for _ in 0..<count {
            guard let directory = reader.readString(), let present = reader.readBool() else { return false }
            let now = Self.signature(directory)
            if !present {
                guard now == nil else { return false }
                continue
            }
            guard let device = reader.readUInt64(), let inode = reader.readUInt64(), let size = reader.readUInt64(),
                let modified = reader.readUInt64(), let changed = reader.readUInt64(), let now
            else { return false }
            let recorded = FileSignature(
                device: device,
                inode: inode,
                size: Int64(bitPattern: size),
                modified: Int64(bitPattern: modified),
                changed: Int64(bitPattern: changed)
            )
            guard now == recorded, recorded.isSettled(at: Int64(bitPattern: seenAt)) else { return false }
        }
        return true
    }

    /// Records what a check that found nothing outside rested on: `directories` (as the boundary
    /// named them) and each directory between them and the root.
    func save(directories: [String], resolvedRoot: String) {
        var all = Set<String>()
        let prefix = root == "/" ? "/" : root + "/"
        for directory in directories where directory == root || directory.hasPrefix(prefix) {
            var current = directory
            while all.insert(current).inserted, current != root, current.count > root.count {
                current = Path.directory(of: current)
            }
        }
        all.insert(root)
        var writer = BinaryWriter()
        writer.append(Self.magic)
        writer.write(UInt64(identity))
        writer.write(root)
        writer.write(resolvedRoot)
        writer.write(UInt64(bitPattern: FileSignature.now()))
        writer.write(all.count)
        for directory in all.sorted() {
            writer.write(directory)
            guard let signature = Self.signature(directory) else {
                writer.write(false)
                continue
            }
            writer.write(true)
            writer.write(signature.device)
            writer.write(signature.inode)
            writer.write(UInt64(bitPattern: signature.size))
            writer.write(UInt64(bitPattern: signature.modified))
            writer.write(UInt64(bitPattern: signature.changed))
        }
        FileChecksum.seal(&writer.bytes)
        let kiln = KilnDirectory(root: root)
        guard kiln.create() == 0 else { return }
        Files.writeAtomically(kiln.boundaryMemo, bytes: writer.bytes)
    }

    /// Forgets the memo (a check found a path outside).
    func remove() {
        unlink(KilnDirectory(root: root).boundaryMemo)
    }

    /// The `lstat` signature of `path` (a link is itself, not what it points to).
    private static func signature(_ path: String) -> FileSignature? {
        FileSignature.of(path, relativeTo: AT_FDCWD, followingLinks: false)
    }
}
