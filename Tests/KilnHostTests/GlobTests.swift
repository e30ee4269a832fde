import Foundation
import KilnPaths
import KilnTestSupport
import Testing

@testable import KilnHost

/// The two readings of a `sources:` list — expanding it on disk (``Glob``) and judging a path by
/// its name (``GlobList/matches(_:)``, what `kiln affected` and the hook launcher use) — agree,
/// and no expansion loops. What the patterns mean is checked against go-task itself in
/// `GlobDifferentialTests`.
@Suite struct GlobTests {
    static let tree = [
        "a/f1", "a/.dot", "a/b/f2", "a/b/c/f3", "a/.hid/f4", "a/b/.d2", "x/y/b", "x/b", "top.c", ".top/t.c",
        "src/main.c", "src/util.c", "src/util.h", "src/sub/deep.c", "src/.gen/hidden.c", "n1/n2/n3/leaf.txt",
    ]

    static let lists: [[String]] = [
        ["a/**"], ["a/**/*"], ["**/b"], ["**/*.c"], ["*"], ["a/*"], ["**"], ["**/*"], ["a/.*"], ["a/**/.*"],
        ["a/**/b/**"], ["src/**/*.{c,h}"], ["src/{main,util}.c"], ["src/**/*.c", "!src/sub/*.c"],
        ["src/*.c", "!src/main.c", "src/main.c"], [".top/*"], ["*/t.c"], ["**/**"], ["a/**/**/f3"],
        ["n1/**"], ["**/n3/**"], ["src/*.[ch]"], ["**/.*"], ["x/**/b", "!x/b"], ["a/*/*"], ["./src//*.c"],
    ]

    @Test("a path matches a list by name exactly when expanding the list on disk finds it", arguments: lists)
    func nameMatchingAgreesWithExpansion(patterns: [String]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for file in Self.tree { try directory.write(file, file) }
        let expanded = Set(Glob.files(matching: patterns, in: directory.path))
        let list = GlobList(patterns)
        for file in Self.tree {
            #expect(list.matches(file) == expanded.contains(file), "\(patterns) and \(file)")
        }
        #expect(expanded.isSubset(of: Set(Self.tree)))
    }

    @Test("a symbolic link back into the tree is followed once, never in a loop")
    func linkCyclesEnd() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("d/e/f.c", "")
        try FileManager.default.createSymbolicLink(atPath: directory.path("d/e/up"), withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(atPath: directory.path("d/self"), withDestinationPath: ".")
        for patterns in [["**/*.c"], ["d/**/*.c"], ["**"], ["d/**/f.c", "d/*/*.c"]] {
            let found = Glob.files(matching: patterns, in: directory.path)
            #expect(found.contains("d/e/f.c"), "\(patterns): \(found)")
            #expect(found.count < 20, "\(patterns): \(found)")
        }
    }

    @Test("brace expansion: alternatives, nesting, sequences; a group without a comma stays literal")
    func braces() {
        #expect(GlobPattern.compile("src/*.{c,h}").map(\.description) == ["src/*.c", "src/*.h"])
        #expect(GlobPattern.compile("{a,b{1,2}}/x").map(\.description) == ["a/x", "b1/x", "b2/x"])
        #expect(GlobPattern.compile("f{1..3}.txt").map(\.description) == ["f1.txt", "f2.txt", "f3.txt"])
        #expect(GlobPattern.compile("{a}.c").map(\.description) == ["{a}.c"])
        #expect(GlobPattern.isMagic("a/{b,c}.c") && !GlobPattern.isMagic("a/{b}.c") && !GlobPattern.isMagic("a/b.c"))
    }
}
