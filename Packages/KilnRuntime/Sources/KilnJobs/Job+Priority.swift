extension Job {
    /// The relative order in which a queue starts the ready jobs it holds (NSOperationQueuePriority).
    ///
    /// Priorities only order jobs that are ready *in the same queue*: readiness always beats
    /// priority, and priorities never compare across queues. Any raw value is accepted and is
    /// rounded to the nearest of the five levels; a value exactly between two levels (±2, ±6) goes
    /// to the one farther from `.normal`.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct Priority: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The level, −8 … 8.
        public let rawValue: Int

        /// Creates a priority, rounding `rawValue` to the nearest level; ties (±2, ±6) go to the
        /// level farther from `.normal`.
        public init(rawValue: Int) {
            switch rawValue {
            case ...(-6): self.rawValue = -8
            case -5...(-2): self.rawValue = -4
            case -1...1: self.rawValue = 0
            case 2...5: self.rawValue = 4
            default: self.rawValue = 8
            }
        }

        /// −8.
        public static let veryLow = Priority(rawValue: -8)
        /// −4.
        public static let low = Priority(rawValue: -4)
        /// 0, the default.
        public static let normal = Priority(rawValue: 0)
        /// 4.
        public static let high = Priority(rawValue: 4)
        /// 8.
        public static let veryHigh = Priority(rawValue: 8)

        /// Orders by level.
        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The ready-list index of this level: 0 for `.veryHigh` … 4 for `.veryLow`.
        var bucket: Int { (8 - rawValue) / 4 }

        /// `veryLow`, `low`, `normal`, `high` or `veryHigh`.
        public var description: String {
            switch rawValue {
            case -8: "veryLow"
            case -4: "low"
            case 0: "normal"
            case 4: "high"
            default: "veryHigh"
            }
        }
    }
}
