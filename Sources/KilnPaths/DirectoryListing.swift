import CXXHash

#if canImport(Glibc)
    import Glibc
#endif

/// A directory's entries as kiln's globs read them, and a fingerprint of them.
///
/// A snapshot watches every directory a glob read by its status, which changes when an entry is
/// added, removed or renamed. A status taken less than ``FileSignature/racyWindow`` after the
/// directory last changed can't vouch for it (a change in the same clock tick leaves it as it
/// was); the fingerprint of the entries it listed then lets a later look read the directory
/// again and vouch for it if the same entries are there — as a file that was just written is
/// read again and compared by its hash. Every build writes into the directories its outputs
/// are in, so without it the first no-op after a build couldn't be answered from the snapshot.
///
/// Threading: stateless; safe from any thread.
package enum DirectoryListing {
    /// What an entry is, symbolic links followed.
    package enum Kind: UInt8, Sendable {
        case file, directory, other, missing
    }

    /// One entry of a directory.
    ///
    /// Threading: a value type.
    package struct Entry: Sendable {
        /// Its name.
        package var name: String
        /// What it is, links followed.
        package var kind: Kind
        /// Whether it is a symbolic link.
        package var isLink: Bool

        package init(name: String, kind: Kind, isLink: Bool) {
            self.name = name
            self.kind = kind
            self.isLink = isLink
        }
    }

    /// The entries of `directory` but `.`, `..` and ``GlobPattern/skippedNames``, in the order
    /// the system lists them; `nil` when it can't be opened.
    package static func read(_ directory: String) -> [Entry]? {
        guard let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        var result: [Entry] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." || GlobPattern.skippedNames.contains(name) { continue }
            let type = entry.pointee.d_type
            let kind: Kind
            switch Int32(type) {
            case Int32(DT_DIR): kind = .directory
            case Int32(DT_REG): kind = .file
            case Int32(DT_LNK), Int32(DT_UNKNOWN): kind = Self.kind(of: directory + "/" + name)
            default: kind = .other
            }
            result.append(Entry(name: name, kind: kind, isLink: type == UInt8(DT_LNK)))
        }
        return result
    }

    /// ``read(_:)``, with no entries for a directory that can't be opened.
    package static func entries(of directory: String) -> [Entry] {
        read(directory) ?? []
    }

    /// What `path` is, links followed.
    package static func kind(of path: String) -> Kind {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        default: return .other
        }
    }

    /// The fingerprint of `entries`: their names, kinds and links, in any order (the system's
    /// order may differ between two reads of the same entries). Never the zero hash, which a
    /// snapshot's directory without one holds.
    package static func fingerprint(_ entries: [Entry]) -> ContentHash {
        // Each entry's own hash, summed: names in a directory are unique, so the sum is of a set.
        var high: UInt64 = 0
        var low: UInt64 = 0
        for entry in entries {
            var name = entry.name
            name.makeContiguousUTF8()
            let seed = UInt64(entry.kind.rawValue) << 1 | (entry.isLink ? 1 : 0)
            let hash = name.utf8.withContiguousStorageIfAvailable {
                XXH3_128bits_withSeed($0.baseAddress, $0.count, seed)
            }!
            high &+= hash.high64
            low &+= hash.low64
        }
        var hasher = ContentHasher()
        var parts = (UInt64(entries.count), high, low)
        withUnsafeBytes(of: &parts) { hasher.combineRaw($0) }
        return hasher.finalize()
    }
}
