import Testing

/// The parent of every KilnJobs suite.
///
/// All queues share one process-wide pool of one thread per core, so tests that hold pool threads
/// (gates, barriers) would starve each other if they ran side by side, and a test measuring
/// concurrency would measure its neighbours. The suites therefore run one test at a time. Every
/// wait in a test is bounded; the time limit is the last resort against a hang they miss.
@Suite(.serialized, .timeLimit(.minutes(2)))
enum JobEngineTests {}
