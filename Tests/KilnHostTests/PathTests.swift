import Testing

@testable import KilnHost

@Suite("Path arithmetic")
struct PathTests {
    /// Lexical normalization as POSIX describes it, written plainly: the reference the fast path
    /// (``Path/isNormal(_:)``, which skips the work for paths already normal) must agree with.
    static func reference(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [String] = []
        for part in path.split(separator: "/").map(String.init) where part != "." {
            if part == ".." {
                if let last = parts.last, last != ".." {
                    parts.removeLast()
                    continue
                }
                if absolute { continue }
            }
            parts.append(part)
        }
        let joined = parts.joined(separator: "/")
        return absolute ? "/" + joined : (joined.isEmpty ? "." : joined)
    }

    @Test(
        "normalize agrees with the plain algorithm on every path of up to four components from a set with . .. and empty ones"
    )
    func normalizeMatchesReference() {
        let pieces = ["", ".", "..", "a", "b.c", ".d", "..e", "f..", "é"]
        var paths: Set<String> = ["", "/", "//", "./", "../", "/.", "/.."]
        var layer = [""]
        for _ in 0..<4 {
            layer = layer.flatMap { prefix in pieces.map { prefix.isEmpty ? $0 : prefix + "/" + $0 } }
            for path in layer {
                paths.insert(path)
                paths.insert("/" + path)
                paths.insert(path + "/")
            }
        }
        for path in paths {
            let normalized = Path.normalize(path)
            #expect(normalized == Self.reference(path), "\(path)")
            #expect(Path.isNormal(normalized) || normalized == "." || normalized.hasPrefix(".."), "\(path)")
            #expect(
                Path.isNormal(path)
                    == (Self.reference(path) == path && path != "." && !path.split(separator: "/").contains("..")),
                "\(path)"
            )
        }
    }

    @Test(
        "relative agrees with the Character-by-Character reference for bases and paths built from plain, combining and differently normalized names"
    )
    func relativeMatchesReference() {
        func reference(_ path: String, _ base: String) -> String {
            if path == base { return "." }
            return path.hasPrefix(base + "/") ? String(path.dropFirst(base.count + 1)) : path
        }
        // "é" precomposed and decomposed are the same Character; "e\u{301}x" ends in a combining mark.
        let names = ["a", "ab", "é", "e\u{301}", "e\u{301}x", "😀", "a b", ""]
        var paths: [String] = ["/", ""]
        for first in names {
            paths.append("/" + first)
            for second in names {
                paths.append("/" + first + "/" + second)
                for third in names.prefix(4) { paths.append("/" + first + "/" + second + "/" + third) }
            }
        }
        for base in paths {
            for path in paths {
                #expect(Path.relative(path, to: base) == reference(path, base), "\(path) to \(base)")
            }
        }
    }
}
