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
        var table = Table(headers: ["hash", "median s", "GB/s", "kiln ÷ tool (time)"])
        var samples: [Double] = []
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try FileContent.hash(path)
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        let kiln = samples.sorted()[1]
        let gigabytes = Double(megabytes << 20) / 1e9
        table.add(["kiln XXH3-128", format(kiln, digits: 3), format(gigabytes / kiln), ""])
        for tool in ["md5sum", "sha256sum"] {
            var runs: [Double] = []
            for _ in 0..<3 { runs.append(runChild([tool, path], in: directory).seconds) }
            let median = runs.sorted()[1]
            table.add([
                tool, format(median, digits: 3), format(gigabytes / median), format(kiln / median, digits: 3) + "×",
            ])
        }
        print(table.render())
        print("\nTarget: ≥ 2 GB/s on a 1 GB file.\n")

        var blobSamples: [Double] = []
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = GitObjectID.blob(ofFileAt: path)
            blobSamples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        let blob = blobSamples.sorted()[1]
        var git = Table(headers: ["git blob id (SHA-1)", "median s", "GB/s", "kiln ÷ tool (time)"])
        git.add(["kiln", format(blob, digits: 3), format(gigabytes / blob), ""])
        for tool in [["git", "hash-object", "--no-filters"], ["sha1sum"]] {
            var runs: [Double] = []
            for _ in 0..<3 { runs.append(runChild(tool + [path], in: directory).seconds) }
            let median = runs.sorted()[1]
            git.add([
                tool.joined(separator: " "), format(median, digits: 3), format(gigabytes / median),
                format(blob / median, digits: 3) + "×",
            ])
        }
        print(git.render())
    }
}
