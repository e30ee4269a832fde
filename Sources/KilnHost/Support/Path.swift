import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// POSIX path arithmetic on strings: no file system access, no Foundation.
///
/// Threading: stateless.
enum Path {
    /// `a/b` for `a` and `b`; `b` itself if it is absolute.
    static func join(_ base: String, _ path: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    /// The directory part: `/a/b` → `/a`, `b` → `.`, `/a` → `/`.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last component: `/a/b.c` → `b.c`.
    static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The last component without its extension: `src/a.tar.gz` → `a.tar`.
    static func stem(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Resolves `.` and `..` and repeated slashes, lexically; relative paths stay relative.
    static func normalize(_ path: String) -> String {
        if isNormal(path) { return path }
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == "..", let last = parts.last, last != ".." {
                parts.removeLast()
                continue
            }
            if part == "..", absolute { continue }
            parts.append(part)
        }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// Whether `path` is plainly normal, so ``normalize(_:)`` returns it as it is: not empty, and
    /// no empty, `.` or `..` component (so no repeated or trailing slash), `/` itself aside. One
    /// byte scan, no allocation: most paths kiln meets are already normal.
    static func isNormal(_ path: String) -> Bool {
        var path = path
        return path.withUTF8(isNormal(bytes:))
    }

    private static func isNormal(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let slash = UInt8(ascii: "/")
        let dot = UInt8(ascii: ".")
        guard !bytes.isEmpty else { return false }
        if bytes.count == 1, bytes[0] == slash { return true }
        var start = bytes[0] == slash ? 1 : 0
        var index = start
        while true {
            if index == bytes.count || bytes[index] == slash {
                let length = index - start
                if length == 0 { return false }
                if bytes[start] == dot, length == 1 || (length == 2 && bytes[start + 1] == dot) { return false }
                if index == bytes.count { return true }
                start = index + 1
            }
            index += 1
        }
    }

    /// `path` made absolute against `base` and normalized.
    static func absolute(_ path: String, base: String) -> String {
        normalize(join(base, path))
    }

    /// Whether a path has a `..` component (a byte scan; no normalizing).
    static func hasParentReference(_ path: String) -> Bool {
        var previous: UInt8 = 0
        for byte in path.utf8 {
            if byte == UInt8(ascii: "."), previous == UInt8(ascii: ".") { return true }
            previous = byte
        }
        return false
    }

    /// Whether `path` (normalized) is `root` or inside it.
    static func isInside(_ path: String, root: String) -> Bool {
        let normalized = normalize(path)
        return normalized == root || normalized.hasPrefix(root == "/" ? "/" : root + "/")
    }

    /// `path` relative to `base`: `.` for `base` itself, the rest after `base/` for a path inside
    /// it, and `path` unchanged (absolute) otherwise. No normalizing: both are as kiln made them.
    static func relative(_ path: String, to base: String) -> String {
        if path == base { return "." }
        // By bytes: counting and dropping Characters walks the prefix with grapheme breaking
        // (~2,900 instructions for a path in a project, several times a job).
        let bytes = path.utf8
        let prefix = base.utf8
        if bytes.count > prefix.count, bytes.starts(with: prefix),
            bytes[bytes.index(bytes.startIndex, offsetBy: prefix.count)] == UInt8(ascii: "/")
        {
            return String(Substring(bytes.dropFirst(prefix.count + 1)))
        }
        // The same Characters in other bytes (another Unicode normalization): as Swift compares.
        return path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : path
    }

    /// The process's current directory.
    static var currentDirectory: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
