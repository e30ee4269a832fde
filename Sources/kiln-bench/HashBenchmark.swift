import Foundation
import KilnGitFormat
import KilnHost
import KilnPaths

/// `kiln-bench hash`: content-hashing throughput on one large file (warm page cache), beside
/// `md5sum` (what go-task used) and `sha256sum` (what a remote action cache wants) in the same run;
/// then a git blob id (SHA-1, computed by kiln for a tracked file the index no longer vouches for)
/// beside `git hash-object` and `sha1sum`.
struct HashBenchmark {
    var megabytes: Int
    var directory: String

    func run() throws {
        let path = directory + "/kiln-bench-hash-\(megabytes)MB.bin"
        if (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) != megabytes << 20 {
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            for _ in 0..<megabytes {
                for index in stride(from: 0, to: chunk.count, by: 8) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    withUnsafeBytes(of: state) { bytes in
                        for offset in 0..<8 { chunk[index + offset] = bytes[offset] }
                    }
                }
                try handle.write(contentsOf: chunk)
            }
            try handle.close()
        }
        _ = try FileContent.hash(path)  // warm the page cache
        print("kiln-bench hash — one \(megabytes) MB file, page cache warm, median of 3\n")
        print(
            compare("hash", kiln: "kiln XXH3-128", tools: [["md5sum"], ["sha256sum"]], path: path) {
                _ = try? FileContent.hash(path)
            }
        )
        print("\nTarget: ≥ 2 GB/s on a 1 GB file.\n")
        print(
            compare(
                "git blob id (SHA-1)",
                kiln: "kiln",
                tools: [["git", "hash-object", "--no-filters"], ["sha1sum"]],
                path: path
            ) {
                _ = GitObjectID.blob(ofFileAt: path)
            }
        )
    }

    /// A table of kiln's `hash` of the file beside each of `tools` run on it: median of 3 each.
    func compare(_ title: String, kiln label: String, tools: [[String]], path: String, hash: () -> Void) -> String {
        func median(_ run: () -> Double) -> Double { (0..<3).map { _ in run() }.sorted()[1] }
        let kiln = median {
            let start = DispatchTime.now().uptimeNanoseconds
            hash()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        let gigabytes = Double(megabytes << 20) / 1e9
        var table = Table(headers: [title, "median s", "GB/s", "kiln ÷ tool (time)"])
        table.add([label, format(kiln, digits: 3), format(gigabytes / kiln), ""])
        for tool in tools {
            let seconds = median { runChild(tool + [path], in: directory).seconds }
            table.add([
                tool.joined(separator: " "), format(seconds, digits: 3), format(gigabytes / seconds),
                format(kiln / seconds, digits: 3) + "×",
            ])
        }
        return table.render()
    }
}
