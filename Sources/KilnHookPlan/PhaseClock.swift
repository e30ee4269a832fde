import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// With `KILN_DEBUG=phases` in the environment, how long each phase of a command took, printed to
/// standard error on one line (like ninja's `-d stats`): `kiln: phases (ms): NAME MS; …`. The
/// launcher's quick hook and the full commands print the same way.
///
/// Threading: used by one thread.
package final class PhaseClock {
    private let enabled: Bool
    private var text = "kiln: phases (ms):"
    private var last = PhaseClock.now()

    /// A clock starting now; `title` (`quick hook`) opens the line.
    package init(title: String? = nil) {
        enabled = getenv("KILN_DEBUG").map { String(cString: $0).split(separator: ",").contains("phases") } ?? false
        if let title { text += " \(title);" }
    }

    private static func now() -> Int64 { Int64(MonotonicClock.nanoseconds()) }

    /// Ends the phase called `name`: the time since the last mark (or the start).
    package func mark(_ name: String) {
        guard enabled else { return }
        let now = Self.now()
        text += " \(name) \(Double((now - last) / 10_000) / 100);"
        last = now
    }

    /// Prints the line, when enabled.
    package func print() {
        guard enabled else { return }
        let line = text + "\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }
}
