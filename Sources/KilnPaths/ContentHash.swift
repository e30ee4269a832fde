import CXXHash

#if canImport(Glibc)
    import Glibc
#endif

/// A 128-bit content fingerprint: XXH3-128 of a file's bytes (or of a job's signature parts).
///
/// A fast, non-cryptographic hash: it detects change, it doesn't resist attack. The build state
/// records ``algorithm`` with every hash, so it can change later; a remote cache (which wants
/// SHA-256 digests) computes its own digests beside it.
///
/// Threading: a value type; safe to pass between threads.
public struct ContentHash: Hashable, Sendable, CustomStringConvertible {
    /// The name recorded in the build state: `xxh3-128`.
    public static let algorithm = "xxh3-128"

    /// High and low 64 bits.
    public var high: UInt64
    /// Low 64 bits.
    public var low: UInt64

    /// Creates a hash from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// 32 lowercase hex digits.
    public var description: String {
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(high) + hex(low)
    }

    /// The hash of `bytes`.
    public static func of<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> ContentHash {
        if let hash = bytes.withContiguousStorageIfAvailable({ buffer in
            ContentHash(XXH3_128bits(buffer.baseAddress, buffer.count))
        }) {
            return hash
        }
        return of(Array(bytes))
    }

    /// The hash of a string's UTF-8.
    public static func of(_ text: String) -> ContentHash {
        var text = text
        text.makeContiguousUTF8()
        return text.utf8.withContiguousStorageIfAvailable { ContentHash(XXH3_128bits($0.baseAddress, $0.count)) }!
    }

    /// A 64-bit hash of `text`'s UTF-8 for a table in memory (XXH3, seeded once a process at
    /// random, so names chosen to collide can't slow a table down): a fifth of what `hashValue`
    /// costs for a short path, which a snapshot's table of 20k paths pays for each of them.
    package static func tableHash(_ text: String) -> UInt64 {
        var text = text
        return text.withUTF8 { XXH3_64bits_withSeed($0.baseAddress, $0.count, tableSeed) }
    }

    private static let tableSeed = UInt64.random(in: .min ... .max)

    package init(_ raw: XXH128_hash_t) {
        high = raw.high64
        low = raw.low64
    }
}

/// Which algorithm produced a file's hash. The build state records it beside every file hash,
/// so a hash is only ever compared with one made the same way.
///
/// Threading: a value type.
public enum HashAlgorithm: UInt8, Sendable, CustomStringConvertible {
    /// XXH3-128 of the file's bytes, computed by reading it.
    case xxh3 = 0
    /// The file's git blob id (SHA-1 of `blob SIZE\0` and the bytes), first 128 bits: read from
    /// the git index for a tracked file that is clean, so the file isn't read at all.
    case gitBlob = 1

    /// The name `kiln explain` prints.
    public var description: String {
        switch self {
        case .xxh3: "xxh3-128"
        case .gitBlob: "git-blob"
        }
    }
}

/// A file's hash and the algorithm that produced it.
///
/// Threading: a value type.
public struct FileDigest: Hashable, Sendable, CustomStringConvertible {
    /// The hash.
    public var hash: ContentHash
    /// How it was made.
    public var algorithm: HashAlgorithm

    /// Creates a value.
    public init(_ hash: ContentHash, _ algorithm: HashAlgorithm = .xxh3) {
        self.hash = hash
        self.algorithm = algorithm
    }

    /// The digest of a file that doesn't exist (or can't be read): zero.
    public static let absent = FileDigest(ContentHash(high: 0, low: 0))

    /// `algorithm:hash`.
    public var description: String { "\(algorithm):\(hash)" }
}

/// Feeds several parts into one hash (a job signature: its definition, inputs, dependencies).
/// Each part is length-prefixed, so `("ab", "c")` and `("a", "bc")` differ.
///
/// Threading: a single owner at a time.
public struct ContentHasher: ~Copyable {
    private let state: OpaquePointer

    /// Starts an empty hash.
    public init() {
        state = XXH3_createState()
        XXH3_128bits_reset(state)
    }

    deinit { XXH3_freeState(state) }

    /// Adds raw bytes (no length prefix).
    public mutating func combineRaw(_ buffer: UnsafeRawBufferPointer) {
        XXH3_128bits_update(state, buffer.baseAddress, buffer.count)
    }

    /// Adds a string, length-prefixed.
    public mutating func combine(_ text: String) {
        var text = text
        text.makeContiguousUTF8()
        var length = UInt64(text.utf8.count)
        withUnsafeBytes(of: &length) { combineRaw($0) }
        text.utf8.withContiguousStorageIfAvailable { combineRaw(UnsafeRawBufferPointer($0)) }
    }

    /// Adds another hash.
    public mutating func combine(_ hash: ContentHash) {
        var parts = (hash.high, hash.low)
        withUnsafeBytes(of: &parts) { combineRaw($0) }
    }

    /// Adds a file's digest: its algorithm, then its hash.
    public mutating func combine(_ digest: FileDigest) {
        var algorithm = digest.algorithm.rawValue
        withUnsafeBytes(of: &algorithm) { combineRaw($0) }
        combine(digest.hash)
    }

    /// The hash of everything added.
    public consuming func finalize() -> ContentHash {
        ContentHash(XXH3_128bits_digest(state))
    }
}

/// Reading and hashing files.
///
/// Threading: stateless; safe from any thread.
public enum FileContent {
    /// A file that can't be hashed: its path and the system's reason, as any file kiln can't
    /// read.
    public typealias Failure = Files.ReadError

    /// XXH3-128 of the file's contents. Large files are mapped into memory, not copied.
    ///
    /// - Throws: ``Failure`` if the file can't be opened or read.
    public static func hash(_ path: String) throws(Failure) -> ContentHash {
        var hasher = ContentHasher()
        try read(path, size: { _ in }, bytes: { hasher.combineRaw($0) })
        return hasher.finalize()
    }

    /// Reads the regular file at `path`: its size from the open descriptor, then its bytes, in
    /// order — mapped in one piece from 1 MiB on, else read in pieces of up to 64 KiB. What
    /// hashes a file's content, whatever the hash, reads it here.
    ///
    /// - Throws: ``Failure`` if the file can't be opened or read, or isn't a regular file.
    /// Threading: any thread, concurrently; `size` and `bytes` run on the caller's thread.
    public static func read(
        _ path: String,
        size: (Int) -> Void,
        bytes: (UnsafeRawBufferPointer) -> Void
    ) throws(Failure) {
        // Non-blocking, and regular files only: a FIFO among the inputs must not stop the run.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(path: path, reason: "not a regular file") }
        let length = Int(info.st_size)
        size(length)
        if length >= 1 << 20, let mapped = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor, 0),
            mapped != MAP_FAILED
        {
            defer { munmap(mapped, length) }
            _ = madvise(mapped, length, MADV_SEQUENTIAL)
            bytes(UnsafeRawBufferPointer(start: mapped, count: length))
            return
        }
        // Sized to the file (one read and the one that finds its end), and never zeroed: zeroing
        // 64 KiB for every small file was most of the cost of hashing it.
        try withUnsafeTemporaryAllocation(byteCount: min(length + 1, 1 << 16), alignment: 16) {
            buffer throws(Failure) in
            while true {
                let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR { continue }
                    throw Failure(path: path, reason: String(cString: strerror(errno)))
                }
                if count == 0 { break }
                bytes(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }
}
