#if canImport(Glibc)
    import Glibc
#endif

/// A point in time with a zone offset: what `now`, `toDate` and `unixEpoch` work on.
///
/// Formatting follows Go's reference layout (`2006-01-02 15:04:05.999999999 -0700 MST`).
///
/// Threading: a value type; safe to pass between threads.
public struct TemplateTime: Sendable, Hashable, CustomStringConvertible {
    /// Seconds since 1970-01-01 UTC.
    public var seconds: Int
    /// Nanoseconds within the second, 0 to 999 999 999.
    public var nanoseconds: Int
    /// The zone's offset east of UTC, in seconds.
    public var offset: Int
    /// The zone's abbreviation (`UTC`, `CET`).
    public var zone: String

    /// Creates a time.
    public init(seconds: Int, nanoseconds: Int = 0, offset: Int = 0, zone: String = "UTC") {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.offset = offset
        self.zone = zone
    }

    /// Now, in the local zone.
    public static func now() -> TemplateTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return local(seconds: Int(spec.tv_sec), nanoseconds: Int(spec.tv_nsec))
    }

    /// `seconds` in the local zone (the `TZ` variable, else `/etc/localtime`).
    public static func local(seconds: Int, nanoseconds: Int = 0) -> TemplateTime {
        var time = time_t(seconds)
        var parts = tm()
        localtime_r(&time, &parts)
        let zone = parts.tm_zone.map { String(cString: $0) } ?? "UTC"
        return TemplateTime(seconds: seconds, nanoseconds: nanoseconds, offset: Int(parts.tm_gmtoff), zone: zone)
    }

    /// The civil date and time in the time's zone.
    var civil: Civil { Civil(seconds: seconds + offset) }

    /// Go's `Time.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    public var description: String { format("2006-01-02 15:04:05.999999999 -0700 MST") }

    /// The time formatted with a Go layout: the reference time `Mon Jan 2 15:04:05 MST 2006`
    /// written as the result should look.
    public func format(_ layout: String) -> String {
        let civil = civil
        var output = ""
        var rest = Substring(layout)
        while !rest.isEmpty {
            guard let (token, length) = Self.token(at: rest) else {
                output.append(rest.removeFirst())
                continue
            }
            rest.removeFirst(length)
            switch token {
            case .year4: output += Self.pad(civil.year, 4)
            case .year2: output += Self.pad(civil.year % 100, 2)
            case .monthLong: output += Self.months[civil.month - 1]
            case .monthShort: output += String(Self.months[civil.month - 1].prefix(3))
            case .month2: output += Self.pad(civil.month, 2)
            case .month: output += String(civil.month)
            case .weekdayLong: output += Self.weekdays[civil.weekday]
            case .weekdayShort: output += String(Self.weekdays[civil.weekday].prefix(3))
            case .day2: output += Self.pad(civil.day, 2)
            case .daySpace: output += civil.day < 10 ? " \(civil.day)" : String(civil.day)
            case .day: output += String(civil.day)
            case .yearDay3: output += Self.pad(civil.yearDay, 3)
            case .hour24: output += Self.pad(civil.hour, 2)
            case .hour12: output += String(civil.hour % 12 == 0 ? 12 : civil.hour % 12)
            case .hour12Padded: output += Self.pad(civil.hour % 12 == 0 ? 12 : civil.hour % 12, 2)
            case .minute2: output += Self.pad(civil.minute, 2)
            case .minute: output += String(civil.minute)
            case .second2: output += Self.pad(civil.second, 2)
            case .second: output += String(civil.second)
            case .pmUpper: output += civil.hour >= 12 ? "PM" : "AM"
            case .pmLower: output += civil.hour >= 12 ? "pm" : "am"
            case .zoneName: output += zone
            case .offset(let style): output += Self.offset(offset, style: style)
            case .fraction(let digits, let trims):
                var text = Self.pad(nanoseconds, 9).prefix(digits)
                if trims {
                    while text.last == "0" { text.removeLast() }
                    if !text.isEmpty { output += "." + text }
                } else {
                    output += "." + text
                }
            }
        }
        return output
    }

    enum OffsetStyle { case colon, plain, short, colonSeconds, zulu(Int) }

    enum Token {
        case year4, year2, monthLong, monthShort, month2, month, weekdayLong, weekdayShort, day2, daySpace, day
        case yearDay3, hour24, hour12, hour12Padded, minute2, minute, second2, second, pmUpper, pmLower, zoneName
        case offset(OffsetStyle)
        case fraction(digits: Int, trims: Bool)
    }

    /// Go's layout elements, longest first where one is a prefix of another.
    static let tokens: [(String, Token)] = [
        ("January", .monthLong), ("Jan", .monthShort), ("Monday", .weekdayLong), ("Mon", .weekdayShort),
        ("MST", .zoneName), ("2006", .year4), ("Z07:00:00", .offset(.zulu(3))), ("Z07:00", .offset(.zulu(2))),
        ("Z0700", .offset(.zulu(1))), ("Z07", .offset(.zulu(0))), ("-07:00:00", .offset(.colonSeconds)),
        ("-07:00", .offset(.colon)), ("-0700", .offset(.plain)), ("-07", .offset(.short)), ("002", .yearDay3),
        ("01", .month2), ("02", .day2), ("03", .hour12Padded), ("04", .minute2), ("05", .second2), ("06", .year2),
        ("_2", .daySpace), ("15", .hour24), ("1", .month), ("2", .day), ("3", .hour12), ("4", .minute),
        ("5", .second), ("PM", .pmUpper), ("pm", .pmLower),
    ]

    static func token(at text: Substring) -> (Token, Int)? {
        // Fractional seconds: .000 or .999 (or with a comma), right after a digit element.
        if let first = text.first, first == "." || first == ",", let digit = text.dropFirst().first,
            digit == "0" || digit == "9"
        {
            let run = text.dropFirst().prefix { $0 == digit }
            let after = text.dropFirst(1 + run.count).first
            if after == nil || !(after!.isNumber) {
                return (.fraction(digits: run.count, trims: digit == "9"), 1 + run.count)
            }
        }
        for (literal, token) in tokens where text.hasPrefix(literal) {
            // Go reads "Jan"/"Mon" only when not followed by a lower-case letter ("January" aside).
            if literal == "Mon" || literal == "MST", let next = text.dropFirst(literal.count).first, next.isLowercase {
                continue
            }
            return (token, literal.count)
        }
        return nil
    }

    static let months = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ]
    static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(abs(value))
        return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - text.count)) + text
    }

    static func offset(_ offset: Int, style: OffsetStyle) -> String {
        if case .zulu = style, offset == 0 { return "Z" }
        let sign = offset < 0 ? "-" : "+"
        let hours = pad(abs(offset) / 3600, 2)
        let minutes = pad(abs(offset) / 60 % 60, 2)
        let seconds = pad(abs(offset) % 60, 2)
        switch style {
        case .colon, .zulu(2): return sign + hours + ":" + minutes
        case .plain, .zulu(1): return sign + hours + minutes
        case .short, .zulu(0): return sign + hours
        case .colonSeconds, .zulu: return sign + hours + ":" + minutes + ":" + seconds
        }
    }

    /// Parses `text` laid out as `layout` (Go's `time.Parse`, for the elements above); a time
    /// without a zone is in `zone`'s offset.
    public static func parse(
        _ text: String,
        layout: String,
        offset defaultOffset: Int = 0,
        zone defaultZone: String = "UTC"
    )
        -> TemplateTime?
    {
        var year = 1, month = 1, day = 1, hour = 0, minute = 0, second = 0, nanosecond = 0
        var pm: Bool?
        var offset: Int?
        var zone: String?
        var input = Substring(text)
        var rest = Substring(layout)
        func number(_ maximumDigits: Int, exact: Bool) -> Int? {
            let digits = input.prefix(maximumDigits).prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, !exact || digits.count == maximumDigits, let value = Int(digits) else { return nil }
            input.removeFirst(digits.count)
            return value
        }
        while !rest.isEmpty {
            guard let (token, length) = token(at: rest) else {
                guard input.first == rest.first else { return nil }
                input.removeFirst()
                rest.removeFirst()
                continue
            }
            rest.removeFirst(length)
            switch token {
            case .year4: guard let value = number(4, exact: true) else { return nil }; year = value
            case .year2:
                guard let value = number(2, exact: true) else { return nil }
                year = value >= 69 ? 1900 + value : 2000 + value
            case .monthLong, .monthShort:
                guard
                    let index = months.firstIndex(where: { name in
                        let candidate = { if case .monthLong = token { name } else { String(name.prefix(3)) } }()
                        return input.lowercased().hasPrefix(candidate.lowercased())
                    })
                else { return nil }
                input.removeFirst({ if case .monthLong = token { months[index].count } else { 3 } }())
                month = index + 1
            case .weekdayLong, .weekdayShort:
                guard
                    let name = weekdays.first(where: { input.lowercased().hasPrefix(String($0.prefix(3)).lowercased()) }
                    )
                else { return nil }
                if case .weekdayLong = token, input.lowercased().hasPrefix(name.lowercased()) {
                    input.removeFirst(name.count)
                } else {
                    input.removeFirst(3)
                }
            case .month2: guard let value = number(2, exact: true) else { return nil }; month = value
            case .month: guard let value = number(2, exact: false) else { return nil }; month = value
            case .day2: guard let value = number(2, exact: true) else { return nil }; day = value
            case .daySpace:
                if input.first == " " { input.removeFirst() }
                guard let value = number(2, exact: false) else { return nil }; day = value
            case .day: guard let value = number(2, exact: false) else { return nil }; day = value
            case .yearDay3: guard number(3, exact: true) != nil else { return nil }
            case .hour24: guard let value = number(2, exact: false) else { return nil }; hour = value
            case .hour12, .hour12Padded: guard let value = number(2, exact: false) else { return nil }; hour = value
            case .minute2, .minute: guard let value = number(2, exact: false) else { return nil }; minute = value
            case .second2, .second:
                guard let value = number(2, exact: false) else { return nil }
                second = value
                // Go accepts a fraction after seconds even when the layout has none.
                if input.first == ".", rest.first != "." {
                    input.removeFirst()
                    let digits = input.prefix { $0.isASCII && $0.isNumber }
                    input.removeFirst(digits.count)
                    nanosecond = Int((digits + String(repeating: "0", count: max(0, 9 - digits.count))).prefix(9)) ?? 0
                }
            case .pmUpper, .pmLower:
                let word = input.prefix(2).uppercased()
                guard word == "AM" || word == "PM" else { return nil }
                pm = word == "PM"
                input.removeFirst(2)
            case .zoneName:
                let name = input.prefix { $0.isLetter }
                guard name.count >= 3 else { return nil }
                zone = String(name)
                input.removeFirst(name.count)
                if name == "UTC" || name == "GMT" { offset = 0 }
            case .offset(let style):
                if case .zulu = style, input.first == "Z" {
                    input.removeFirst()
                    offset = 0
                    zone = "UTC"
                    continue
                }
                guard let sign = input.first, sign == "+" || sign == "-" else { return nil }
                input.removeFirst()
                guard let hours = number(2, exact: true) else { return nil }
                var minutes = 0
                var seconds = 0
                let colon: Bool =
                    switch style {
                    case .colon, .colonSeconds, .zulu(2), .zulu(3): true
                    default: false
                    }
                let hasMinutes: Bool =
                    switch style {
                    case .short, .zulu(0): false
                    default: true
                    }
                if hasMinutes {
                    if colon { guard input.first == ":" else { return nil }; input.removeFirst() }
                    guard let value = number(2, exact: true) else { return nil }
                    minutes = value
                }
                if case .colonSeconds = style {
                    guard input.first == ":" else { return nil }
                    input.removeFirst()
                    guard let value = number(2, exact: true) else { return nil }
                    seconds = value
                }
                offset = (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60 + seconds)
            case .fraction(let digits, let trims):
                if trims, input.first != "." && input.first != "," { continue }
                guard input.first == "." || input.first == "," else { return nil }
                input.removeFirst()
                let run = input.prefix { $0.isASCII && $0.isNumber }
                guard trims || run.count == digits else { return nil }
                input.removeFirst(run.count)
                nanosecond = Int((run + String(repeating: "0", count: max(0, 9 - run.count))).prefix(9)) ?? 0
            }
        }
        guard input.isEmpty, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else {
            return nil
        }
        if let pm {
            guard (1...12).contains(hour) else { return nil }
            hour = hour % 12 + (pm ? 12 : 0)
        }
        let resolvedOffset = offset ?? defaultOffset
        let local =
            Civil.daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        let resolvedZone = zone ?? (offset == nil ? defaultZone : "")
        return TemplateTime(
            seconds: local - resolvedOffset,
            nanoseconds: nanosecond,
            offset: resolvedOffset,
            zone: resolvedZone
        )
    }

    /// Broken-down civil time (proleptic Gregorian calendar).
    struct Civil {
        var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, weekday: Int, yearDay: Int

        init(seconds: Int) {
            var days = seconds / 86_400
            var rest = seconds % 86_400
            if rest < 0 {
                rest += 86_400
                days -= 1
            }
            hour = rest / 3600
            minute = rest / 60 % 60
            second = rest % 60
            weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday.
            // Howard Hinnant's days-to-civil algorithm.
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let monthIndex = (5 * dayOfYear + 2) / 153
            day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
            month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
            year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
            yearDay = days - Civil.daysFromCivil(year: year, month: 1, day: 1) + 1
        }

        /// Days since 1970-01-01 of a civil date.
        static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
            let y = month <= 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            return era * 146_097 + dayOfEra - 719_468
        }
    }
}
