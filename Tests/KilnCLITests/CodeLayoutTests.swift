import Foundation
import KilnTestSupport
import Testing

/// What the packages ask of the linker for libKilnCLI.so and libKilnPluginAPI.so
/// (linker/README.md): the functions everyday commands execute lie side by side, in the order
/// their lists give, and the CLI's Swift symbols stay out of its dynamic symbol table. Read from
/// the built files and their objects with binutils' `nm` and `readelf`.
@Suite("The libraries' code layout")
struct CodeLayoutTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// A library whose hot functions are listed: its file, its list, the modules whose objects
    /// give each function a section of its own, and the modules whose copy of a function may be
    /// the one the library uses (compiled without such sections, or in a library linked against).
    struct Layout: CustomTestStringConvertible, Sendable {
        let library: String
        let list: String
        let modules: [String]
        let unordered: [String]
        /// Functions that must be placeable: C functions and `@_cdecl` entry points, which the
        /// list names like any other.
        var mustPlace: [String] = []
        var testDescription: String { library }
    }

    static let layouts = [
        Layout(
            library: "libKilnCLI.so",
            list: "linker/hot-sections.txt",
            modules: [
                "KilnCLI", "KilnCommandLine", "KilnHost", "KilnPaths", "KilnGit", "KilnGitFormat", "KilnHookPlan",
                "CKilnHost",
            ],
            unordered: [],
            mustPlace: ["kiln_cli_main", "ckiln_epoll_wait", "ckiln_spawn_direct"]
        ),
        Layout(
            library: "libKilnPluginAPI.so",
            list: "Packages/KilnRuntime/linker/hot-sections.txt",
            modules: ["KilnPluginAPI", "KilnTemplate"],
            // A copy in libKilnJobs.so, which the library links against, may be the one used.
            unordered: ["KilnJobs"]
        ),
    ]

    /// The built directory: the `kiln` executable's.
    func built() throws -> String {
        (try KilnProcess.executable() as NSString).deletingLastPathComponent
    }

    /// What `/usr/bin/TOOL ARGUMENTS…` prints (``runProgram(_:_:in:environment:)``: standard
    /// error too, which no line the callers read can be mistaken for).
    func output(_ tool: String, _ arguments: [String]) throws -> String {
        let (status, output) = try runProgram("/usr/bin/" + tool, arguments, in: Self.root)
        #expect(status == 0, "\(tool) \(arguments.joined(separator: " ")): \(output.prefix(500))")
        return output
    }

    /// `nm ARGUMENTS…`: each symbol's name and address (symbols without an address are left out).
    func symbols(_ arguments: [String]) throws -> [(name: String, address: UInt64)] {
        try output("nm", arguments).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let address = UInt64(fields[0], radix: 16) else { return nil }
            return (String(fields[2]), address)
        }
    }

    /// The functions `layout`'s list names, in its order.
    func listedFunctions(_ layout: Layout) throws -> [String] {
        let text = try String(contentsOfFile: Self.root + "/" + layout.list, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            // Every named function; the `.text..L…` lines are globs of LLVM's helpers without a
            // symbol (`.text..L__unnamed_*`, `.text..Lobjectdestroy*`).
            line.hasPrefix(".text.") && !line.hasPrefix(".text..") ? String(line.dropFirst(".text.".count)) : nil
        }
    }

    /// The functions the linker can place by name: every definition of it, in every object
    /// linked into the library or in `layout.unordered`, is alone in a section named after it.
    /// (The compiler leaves some functions in an object's shared text section, more of them in a
    /// debug build; and a dependency may be compiled without sections of their own.)
    func placeableFunctions(_ layout: Layout) throws -> Set<String> {
        let directory = try built()
        var alone: [String: Bool] = [:]
        for module in layout.modules + layout.unordered {
            let objects = try FileManager.default.contentsOfDirectory(atPath: "\(directory)/\(module).build")
            for object in objects where object.hasSuffix(".o") {
                let text = try output("readelf", ["-sSW", "\(directory)/\(module).build/\(object)"])
                var sections: [Substring: Substring] = [:]
                for line in text.split(separator: "\n") {
                    let fields = line.split(separator: " ")
                    if let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]"), open < close,
                        line[..<open].allSatisfy({ $0 == " " })
                    {
                        // A section header, `  [ 12] .text.NAME PROGBITS …`: its number and name.
                        let number = line[line.index(after: open)..<close].split(separator: " ")
                        if let number = number.first,
                            let name = line[line.index(after: close)...].split(separator: " ").first
                        {
                            sections[number] = name
                        }
                    } else if fields.count == 8, fields[3] == "FUNC" {
                        let name = String(fields[7])
                        alone[name] = (alone[name] ?? true) && sections[fields[6]] == ".text." + fields[7]
                    }
                }
            }
        }
        return Set(alone.filter(\.value).keys)
    }

    @Test("libKilnCLI.so exports its two C entry points and none of its Swift symbols")
    func exports() throws {
        let exported = try symbols(["-D", "--defined-only", "--extern-only", built() + "/libKilnCLI.so"]).map(\.name)
        #expect(exported.contains("kiln_cli_main"))
        #expect(exported.contains("kiln_cli_look_handed_over"))
        let swift = exported.filter { $0.hasPrefix("$s") }
        #expect(swift.count == 0, "exported Swift symbols, e.g. \(swift.prefix(3))")
    }

    @Test("the listed functions lie in the listed order", arguments: layouts)
    func listedOrder(layout: Layout) throws {
        // A name defined once in the file: weak copies the linker left in several objects can't
        // be placed by name.
        var addresses: [String: UInt64] = [:]
        var repeated: Set<String> = []
        for symbol in try symbols(["--defined-only", built() + "/" + layout.library]) {
            if addresses.updateValue(symbol.address, forKey: symbol.name) != nil { repeated.insert(symbol.name) }
        }
        let placeable = try placeableFunctions(layout)
        for name in layout.mustPlace {
            #expect(placeable.contains(name) && !repeated.contains(name), "\(name) has no section of its own")
        }
        let placed = try listedFunctions(layout).compactMap {
            repeated.contains($0) || !placeable.contains($0) ? nil : addresses[$0]
        }
        // Most of the list is in every build (a debug build has no specializations, and keeps
        // more functions in shared sections): enough for the order to mean something.
        #expect(placed.count >= 50, "only \(placed.count) listed functions are in \(layout.library)")
        let outOfOrder = zip(placed, placed.dropFirst()).filter { $1 <= $0 }.count
        #expect(
            outOfOrder == 0,
            "\(outOfOrder) of \(placed.count) listed functions lie before the one listed before them"
        )
    }
}
