import Testing

@testable import KilnHost

/// Go's duration syntax, read as `time.ParseDuration` reads it (go-task's `timeout:`).
@Suite struct GoDurationTests {
    @Test(arguments: [
        ("1s", 1.0), ("1.5s", 1.5), (".5s", 0.5), ("300ms", 0.3), ("1h30m", 5400), ("2us", 2e-6),
        ("2\u{00B5}s", 2e-6), ("2\u{03BC}s", 2e-6), ("7ns", 7e-9), ("1m0.5s", 60.5), ("-1s", -1), ("+2m", 120),
        ("0", 0),
    ])
    func readsGoDurations(text: String, seconds: Double) throws {
        let duration = try #require(GoDuration(text))
        #expect(abs(duration.seconds - seconds) <= 1e-12 * max(1, abs(seconds)))
        #expect(duration.description == text)
    }

    @Test(arguments: ["", "1", "s", "1S", "1m1", "1 s", "1e3s", "1..2s", "3d", ".s", "-", "2562048h", "1sec"])
    func refusesWhatGoRefuses(text: String) {
        #expect(GoDuration(text) == nil)
    }
}
