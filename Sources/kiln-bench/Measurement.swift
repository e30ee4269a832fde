import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Wall time and memory of one benchmark run.
struct Measurement {
    var seconds: Double
    var peakMegabytes: Double
}

/// The middle of `values` (the upper one of the two middles when their count is even).
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// Measures `body`: wall time, and the process's peak resident set size during it (the kernel's
/// high-water mark is reset first through `/proc/self/clear_refs`).
func measure(_ body: () throws -> Void) rethrows -> Measurement {
    resetPeakResidentSetSize()
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    let end = DispatchTime.now().uptimeNanoseconds
    return Measurement(seconds: Double(end - start) / 1e9, peakMegabytes: peakResidentSetSizeMegabytes())
}

func resetPeakResidentSetSize() {
    // Give freed heap back first, or the previous run's garbage counts as this run's peak.
    typealias MallocTrim = @convention(c) (Int) -> Int32
    if let symbol = dlsym(nil, "malloc_trim") { _ = unsafeBitCast(symbol, to: MallocTrim.self)(0) }
    let descriptor = open("/proc/self/clear_refs", O_WRONLY)
    guard descriptor >= 0 else { return }
    _ = write(descriptor, "5", 1)
    close(descriptor)
}

func peakResidentSetSizeMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return 0 }
    let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    return kilobytes / 1024
}

/// A plain-text table with right-aligned numeric columns.
struct Table {
    var headers: [String]
    var rows: [[String]] = []

    mutating func add(_ row: [String]) { rows.append(row) }

    func render() -> String {
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return index == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
        var output = [line(headers), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
        output += rows.map(line)
        return output.joined(separator: "\n")
    }
}

func format(_ value: Double, digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}
