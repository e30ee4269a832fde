import Foundation
import KilnTestSupport
import Testing

/// A job's output is never held whole in memory: past a MiB it goes to an anonymous file under
/// `.kiln/`, and is streamed out from there — all of it, in order.
@Suite struct LargeOutputTests {
    @Test("a job printing 200 MB leaves kiln's peak memory far below it, and prints every byte")
    func largeOutputSpills() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // 200 MB of lines numbered 1…, then an end marker.
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  loud:\n    cmds: ['yes kiln-output-line | head -c 200000000; echo; echo THE-END']\n"
        )
        let kiln = try KilnProcess.executable()
        let report = directory.path("rss.txt")
        _ = try runProgram(
            "/bin/sh",
            [
                "-c",
                "{ /usr/bin/time -f %M -o '\(report)' '\(kiln)' run loud; echo $? > status.txt; } | wc -c > out.count",
            ],
            in: directory.path
        )
        #expect(directory.read("status.txt") == "0\n", "kiln's exit status")
        let bytes = Int(directory.read("out.count")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        #expect(bytes > 200_000_000, "\(bytes) bytes printed")
        let peakKilobytes = Int(directory.read("rss.txt")?.split(separator: "\n").last.map(String.init) ?? "") ?? .max
        #expect(peakKilobytes < 100_000, "peak RSS \(peakKilobytes) KB for 200 MB of output")
    }

    @Test("a failing job's tail is its last lines, however much it printed")
    func failingTail() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write(
            "Taskfile.yml",
            "version: '3'\ntasks:\n  loud:\n    cmds: ['yes filler | head -c 5000000; echo; echo last-words; exit 3']\n"
        )
        let run = try await KilnProcess.run(["run", "loud"], in: directory.path)
        #expect(run.status == 1, "\(run.standardError)")
        #expect(run.standardOutput.contains("last-words\n  exit status 3"), "\(run.standardOutput.suffix(500))")
        #expect(run.standardOutput.utf8.count < 100_000, "only the tail is shown")
    }
}
