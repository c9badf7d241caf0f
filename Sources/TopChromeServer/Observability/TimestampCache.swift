#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 UTC times with milliseconds, e.g. `2026-11-30T01:04:45.123Z`.
/// The part up to the second is kept while that second lasts, so only the
/// first line of each second pays for the calendar (`gmtime_r`, which also
/// takes glibc's time-zone lock).
struct TimestampCache {
    private var second: time_t?
    /// e.g. `2026-11-30T01:04:45.`
    private var prefix = ByteWords()

    mutating func append(_ time: timespec, to bytes: inout LogBytes) {
        if time.tv_sec != second {
            prefix = ByteWords(Self.prefix(of: time.tv_sec))
            second = time.tv_sec
        }
        let prefix = prefix
        bytes.append(atMost: ByteWords.capacity + 4) { cursor in
            cursor.put(prefix)
            cursor.putThreeDigits(UInt(min(max(time.tv_nsec / 1_000_000, 0), 999)))
            cursor.put(UInt8(ascii: "Z"))
        }
    }

    private static func prefix(of second: time_t) -> [UInt8] {
        var second = second
        var parts = tm()
        gmtime_r(&second, &parts)
        var text = LogBytes(capacity: 32)
        text.appendDecimal(Int(parts.tm_year) + 1900)
        for (separator, value) in [(UInt8(ascii: "-"), parts.tm_mon + 1), (UInt8(ascii: "-"), parts.tm_mday),
                                   (UInt8(ascii: "T"), parts.tm_hour), (UInt8(ascii: ":"), parts.tm_min),
                                   (UInt8(ascii: ":"), parts.tm_sec)] {
            text.append(separator)
            text.appendDecimal(UInt(value), minimumDigits: 2)
        }
        text.append(UInt8(ascii: "."))
        return text.copied()
    }
}
