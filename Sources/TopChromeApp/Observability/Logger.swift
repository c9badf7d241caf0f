#if canImport(Glibc)
import Glibc
#endif
import StrictJSON

public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warn, error

    public var name: String { staticName.description }

    /// As written in every log line.
    var staticName: StaticString {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warn: "warn"
        case .error: "error"
        }
    }

    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object per line, for log collectors.
    case json
    /// `time level message key=value …`, for people.
    case text
}

/// A field's value in a log line.
public enum LogValue: Sendable {
    case string(String)
    case int(Int)
    case milliseconds(Double)
}

/// Structured log lines, to one stream or (warnings and errors) two.
///
/// The access log writes a line per request, so a line must cost little next
/// to the request: it is written byte by byte into a buffer that is kept and
/// reused, one per server thread (threads are told apart by a hash of their
/// id, so two may share one and only lose the gain), and buffers are written
/// out in batches. Warnings and errors are written at once; buffered lines
/// when their buffer fills, and at every ``flush()``, which the service calls
/// on a timer and when it stops. Lines of different threads may therefore
/// come out of order by up to one flush interval, as with any server whose
/// workers buffer their logs.
public final class Logger: @unchecked Sendable {  // each buffer is guarded by its own mutex
    public let format: LogFormat
    public let level: LogLevel
    private let output: Int32
    private let errors: Int32
    private let clock: @Sendable () -> timespec
    private let buffers: [LineBuffer]
    /// Held while writing, so batches from different buffers never
    /// interleave (a pipe write is atomic only up to 4 KiB).
    private let writeMutex = makeMutex()
    /// A buffer is written out once it holds this many bytes.
    static let flushThreshold = 32 * 1024
    /// A power of two, above the number of server threads a machine usually runs.
    private static let bufferCount = 8

    /// - Parameters:
    ///   - output: where debug and info lines go.
    ///   - errors: where warnings and errors go.
    ///   - clock: the wall-clock time each line is stamped with.
    public init(format: LogFormat, level: LogLevel, output: Int32 = STDOUT_FILENO, errors: Int32 = STDERR_FILENO,
                clock: @escaping @Sendable () -> timespec = Logger.wallClock) {
        self.format = format
        self.level = level
        self.output = output
        self.errors = errors
        self.clock = clock
        buffers = (0..<Self.bufferCount).map { _ in LineBuffer() }
    }

    deinit {
        flush()
        pthread_mutex_destroy(writeMutex)
        writeMutex.deallocate()
    }

    public static let wallClock: @Sendable () -> timespec = {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }

    public func isEnabled(_ level: LogLevel) -> Bool {
        level >= self.level
    }

    /// - Parameter always: log whatever the level, at once: for the few
    ///   lifecycle lines (listening on…, stopping) an operator must see.
    public func log(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue> = [:],
                    always: Bool = false) {
        guard always || isEnabled(level) else { return }
        let writeFields = { (line: inout LogLine) in
            for (name, value) in fields { line.field(name, value) }
        }
        var message = message
        message.withUTF8 { message in
            if always {
                writeAtOnce(level >= .warn ? errors : output, level, message, writeFields)
            } else if level >= .warn {
                writeAtOnce(errors, level, message, writeFields)
            } else {
                appendBuffered(level, message, writeFields)
            }
        }
    }

    /// A line whose fields `fields` writes into the buffer as they are, for
    /// lines written often (one per request): nothing is built per field.
    func log(_ level: LogLevel, _ message: StaticString, fields: (inout LogLine) -> Void) {
        guard isEnabled(level) else { return }
        message.withUTF8Buffer { message in
            if level >= .warn {
                writeAtOnce(errors, level, message, fields)
            } else {
                appendBuffered(level, message, fields)
            }
        }
    }

    /// The part of a line after its time that repeats from line to line:
    /// its level, its message and the fields `fields` writes (an access
    /// line's method and route), written once, here, to be copied whole
    /// into every line that starts so (``log(_:fields:)``).
    func lineStart(_ level: LogLevel, _ message: StaticString, fields: (inout LogLine) -> Void) -> LogLineStart {
        var line = LogLine(format: format, bytes: LogBytes(capacity: 128))
        defer { line.bytes.free() }
        message.withUTF8Buffer { line.levelAndMessage(level, $0) }
        fields(&line)
        return LogLineStart(level: level, bytes: Array(line.bytes.contents))
    }

    /// A line that begins with `start` (its time first); `fields` writes the rest.
    func log(_ start: LogLineStart, fields: (inout LogLine) -> Void) {
        guard isEnabled(start.level) else { return }
        if start.level >= .warn {
            start.bytes.withUnsafeBufferPointer { writeAtOnce(errors, .prepared($0), fields) }
        } else {
            start.bytes.withUnsafeBufferPointer { appendBuffered(.prepared($0), fields) }
        }
    }

    private func appendBuffered(_ level: LogLevel, _ message: UnsafeBufferPointer<UInt8>, _ fields: (inout LogLine) -> Void) {
        appendBuffered(.message(level, message), fields)
    }

    private func appendBuffered(_ head: LineHead, _ fields: (inout LogLine) -> Void) {
        let buffer = buffers[Self.bufferIndex()]
        pthread_mutex_lock(buffer.mutex)
        var line = LogLine(format: format, bytes: buffer.bytes)
        // A copy, not `&buffer.timestamps`: an inout access to a class's
        // property is checked for exclusivity at run time, on every line.
        var timestamps = buffer.timestamps
        line.begin(at: clock(), timestamps: &timestamps, head)
        fields(&line)
        line.end()
        if line.bytes.count >= Self.flushThreshold {
            write(output, line.bytes.contents)
            line.bytes.removeAll()
        }
        buffer.bytes = line.bytes
        buffer.timestamps = timestamps
        pthread_mutex_unlock(buffer.mutex)
    }

    /// Writes every buffered line.
    public func flush() {
        for buffer in buffers {
            pthread_mutex_lock(buffer.mutex)
            if buffer.bytes.count > 0 {
                write(output, buffer.bytes.contents)
                buffer.bytes.removeAll()
            }
            pthread_mutex_unlock(buffer.mutex)
        }
    }

    /// A line that must not wait behind buffered ones: those are written first.
    private func writeAtOnce(_ fd: Int32, _ level: LogLevel, _ message: UnsafeBufferPointer<UInt8>,
                             _ fields: (inout LogLine) -> Void) {
        writeAtOnce(fd, .message(level, message), fields)
    }

    private func writeAtOnce(_ fd: Int32, _ head: LineHead, _ fields: (inout LogLine) -> Void) {
        var line = LogLine(format: format, bytes: LogBytes(capacity: 256))
        defer { line.bytes.free() }
        var timestamps = TimestampCache()
        line.begin(at: clock(), timestamps: &timestamps, head)
        fields(&line)
        line.end()
        flush()
        write(fd, line.bytes.contents)
    }

    private func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        pthread_mutex_lock(writeMutex)
        defer { pthread_mutex_unlock(writeMutex) }
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            offset += count
        }
    }

    /// The calling thread's buffer: its id, hashed (ids are addresses, far apart and aligned).
    private static func bufferIndex() -> Int {
        Int(truncatingIfNeeded: (UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15) >> 32) & (bufferCount - 1)
    }
}

/// What ``Logger/lineStart(_:_:fields:)`` made: the bytes that follow a line's time.
struct LogLineStart {
    let level: LogLevel
    let bytes: [UInt8]
}

/// What follows a line's time: its level and message, or a start made before.
enum LineHead {
    case message(LogLevel, UnsafeBufferPointer<UInt8>)
    case prepared(UnsafeBufferPointer<UInt8>)
}

/// Lines not yet written, and the second they were last stamped with.
private final class LineBuffer {
    let mutex = makeMutex()
    /// Grows to a little over the flush threshold, once, on a thread that logs.
    var bytes = LogBytes(capacity: 1024)
    var timestamps = TimestampCache()

    deinit {
        bytes.free()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
}

/// A pthread mutex at a fixed address, as `pthread_mutex_lock` needs.
private func makeMutex() -> UnsafeMutablePointer<pthread_mutex_t> {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
    return mutex
}

/// One log line being written: `time level message name=value …` as text, or
/// one JSON object. Field names are the caller's identifiers, written as
/// they are; values are quoted (text, when they hold a space) or escaped
/// (JSON) as needed.
struct LogLine {
    let format: LogFormat
    var bytes: LogBytes

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: String) {
        beginField(name)
        string(value)
    }

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: Int) {
        bounded(name) { $0.field(name, value) }
    }

    /// Milliseconds with three decimals: microseconds are all a request log needs.
    @inline(__always)
    mutating func field(_ name: StaticString, milliseconds duration: Duration) {
        bounded(name) { $0.field(name, milliseconds: duration) }
    }

    /// A constant the caller knows needs neither quotes (text) nor escapes
    /// (JSON): no space, quote, backslash or control byte.
    @inline(__always)
    mutating func field(_ name: StaticString, verbatim value: StaticString) {
        let format = format
        bytes.append(atMost: name.utf8CodeUnitCount + value.utf8CodeUnitCount + BoundedFields.roomPerField) { cursor in
            var fields = BoundedFields(format: format, cursor: cursor)
            fields.field(name, verbatim: value)
            cursor = fields.cursor
        }
    }

    /// Eight lowercase hex digits, e.g. the first 32 bits of a session id.
    @inline(__always)
    mutating func field(_ name: StaticString, hexDigits value: UInt32) {
        bounded(name) { $0.field(name, hexDigits: value) }
    }

    /// Fields whose values have a short bound (numbers, short ids, short
    /// constants), written with one check for room instead of one per
    /// piece: `maxCount` bytes at most in all, names included, and each
    /// field's value and punctuation within ``BoundedFields/roomPerField``.
    @inline(__always)
    mutating func boundedFields(atMost maxCount: Int, _ body: (inout BoundedFields) -> Void) {
        let format = format
        bytes.append(atMost: maxCount) { cursor in
            var fields = BoundedFields(format: format, cursor: cursor)
            body(&fields)
            cursor = fields.cursor
        }
    }

    @inline(__always)
    private mutating func bounded(_ name: StaticString, _ body: (inout BoundedFields) -> Void) {
        boundedFields(atMost: name.utf8CodeUnitCount + BoundedFields.roomPerField, body)
    }

    mutating func field(_ name: String, _ value: LogValue) {
        switch format {
        case .json:
            bytes.append(UInt8(ascii: ","))
            bytes.appendJSONString(name)
            bytes.append(UInt8(ascii: ":"))
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(name)
            bytes.append(UInt8(ascii: "="))
        }
        switch value {
        case let .string(text): string(text)
        case let .int(number): bytes.appendDecimal(number)
        case let .milliseconds(value):
            bytes.append(atMost: BoundedFields.roomPerField) { $0.putMilliseconds(microseconds: Int((value * 1000).rounded())) }
        }
    }

    @inline(__always)
    mutating func begin(at time: timespec, timestamps: inout TimestampCache, _ head: LineHead) {
        if format == .json { bytes.append(#"{"time":""#) }
        timestamps.append(time, to: &bytes)
        switch head {
        case let .message(level, message): levelAndMessage(level, message)
        case let .prepared(start): bytes.append(start)
        }
    }

    /// What follows the time in every line.
    mutating func levelAndMessage(_ level: LogLevel, _ message: UnsafeBufferPointer<UInt8>) {
        switch format {
        case .json:
            bytes.append(#"","level":""#)
            bytes.append(level.staticName)
            bytes.append(#"","msg":"#)
            bytes.appendJSONString(message)
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(level.staticName)
            bytes.append(UInt8(ascii: " "))
            bytes.append(message)
        }
    }

    mutating func end() {
        if format == .json { bytes.append(UInt8(ascii: "}")) }
        bytes.append(0x0A)
    }

    @inline(__always)
    private mutating func beginField(_ name: StaticString) {
        switch format {
        case .json:
            bytes.append(#",""#)
            bytes.append(name)
            bytes.append(#"":"#)
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(name)
            bytes.append(UInt8(ascii: "="))
        }
    }

    private mutating func string(_ text: String) {
        switch format {
        case .json:
            bytes.appendJSONString(text)
        case .text:
            var text = text
            text.withUTF8 { utf8 in
                // A value with a space is quoted, so it stays one field.
                let quoted = utf8.count > 0 && memchr(utf8.baseAddress!, Int32(UInt8(ascii: " ")), utf8.count) != nil
                if quoted { bytes.append(UInt8(ascii: "\"")) }
                bytes.append(utf8)
                if quoted { bytes.append(UInt8(ascii: "\"")) }
            }
        }
    }
}

/// The fields of ``LogLine/boundedFields(atMost:_:)``, written where room was made.
struct BoundedFields {
    let format: LogFormat
    var cursor: ByteCursor
    /// Room each field takes besides its name (and a constant value's own
    /// bytes): punctuation (`,"":` and two quotes) and the longest value,
    /// a 20-character `Int` or a duration (sign, 17 digits, point, 3).
    static let roomPerField = 32

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: Int) {
        open(name)
        cursor.putDecimal(value)
    }

    /// An HTTP status: three digits, written without the loop that counts them.
    @inline(__always)
    mutating func field(_ name: StaticString, status: Int) {
        open(name)
        if (100...999).contains(status) {
            cursor.putThreeDigits(UInt(status))
        } else {
            cursor.putDecimal(status)
        }
    }

    @inline(__always)
    mutating func field(_ name: StaticString, milliseconds duration: Duration) {
        open(name)
        // A request's duration fits in 64 bits of attoseconds (up to 9 s),
        // where dividing is one instruction; `components` divides 128 bits.
        let attoseconds = duration.attoseconds
        if let short = Int64(exactly: attoseconds), short >= 0 {
            cursor.putMilliseconds(microseconds: Int((short + 500_000_000_000) / 1_000_000_000_000))
        } else {
            let (seconds, attoseconds) = duration.components
            cursor.putMilliseconds(
                microseconds: Int(seconds) * 1_000_000 + Int((attoseconds + 500_000_000_000) / 1_000_000_000_000))
        }
    }

    /// See ``LogLine/field(_:verbatim:)``; here the value must be short
    /// (its bytes count against ``roomPerField``).
    @inline(__always)
    mutating func field(_ name: StaticString, verbatim value: StaticString) {
        open(name)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        cursor.put(value)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
    }

    @inline(__always)
    mutating func field(_ name: StaticString, hexDigits value: UInt32) {
        open(name)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        cursor.putEightHexDigits(value)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
    }

    @inline(__always)
    private mutating func open(_ name: StaticString) {
        switch format {
        case .json:
            cursor.put(#",""#)
            cursor.put(name)
            cursor.put(#"":"#)
        case .text:
            cursor.put(UInt8(ascii: " "))
            cursor.put(name)
            cursor.put(UInt8(ascii: "="))
        }
    }
}

/// RFC 3339 UTC times with milliseconds, e.g. `2026-11-30T01:04:45.123Z`.
/// The part up to the second is kept while that second lasts, so only the
/// first line of each second pays for the calendar (`gmtime_r`, which also
/// takes glibc's time-zone lock).
struct TimestampCache {
    private var second: time_t?
    /// e.g. `2026-11-30T01:04:45.`, in `prefixCount` bytes
    private var prefix: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var prefixCount = 0

    mutating func append(_ time: timespec, to bytes: inout LogBytes) {
        if time.tv_sec != second {
            let text = Self.prefix(of: time.tv_sec).prefix(MemoryLayout.size(ofValue: prefix))
            withUnsafeMutableBytes(of: &prefix) { $0.copyBytes(from: text) }
            prefixCount = text.count
            second = time.tv_sec
        }
        let prefix = prefix, prefixCount = prefixCount
        bytes.append(atMost: MemoryLayout.size(ofValue: prefix) + 4) { cursor in
            cursor.put(words: prefix, count: prefixCount)
            cursor.putThreeDigits(UInt(min(max(time.tv_nsec / 1_000_000, 0), 999)))
            cursor.put(UInt8(ascii: "Z"))
        }
    }

    private static func prefix(of second: time_t) -> [UInt8] {
        var second = second
        var parts = tm()
        gmtime_r(&second, &parts)
        var text = LogBytes(capacity: 32)
        defer { text.free() }
        text.appendDecimal(Int(parts.tm_year) + 1900)
        for (separator, value) in [(UInt8(ascii: "-"), parts.tm_mon + 1), (UInt8(ascii: "-"), parts.tm_mday),
                                   (UInt8(ascii: "T"), parts.tm_hour), (UInt8(ascii: ":"), parts.tm_min),
                                   (UInt8(ascii: ":"), parts.tm_sec)] {
            text.append(separator)
            text.appendDecimal(UInt(value), minimumDigits: 2)
        }
        text.append(UInt8(ascii: "."))
        return Array(text.contents)
    }
}

/// A growable run of bytes in memory the log allocates and frees itself
/// (``free()``): a line is a few dozen short appends, and an `Array` would
/// check uniqueness and capacity through the runtime on each.
struct LogBytes {
    private(set) var start: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        start = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    func free() {
        start.deallocate()
    }

    var contents: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: start, count: count)
    }

    mutating func removeAll() {
        count = 0
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        start[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard let source = utf8.baseAddress else { return }
        reserve(utf8.count)
        if utf8.count <= 16 {
            // Names, numbers and separators: a call to memcpy costs more than these few bytes.
            for index in 0..<utf8.count { start[count + index] = source[index] }
        } else {
            (start + count).update(from: source, count: utf8.count)
        }
        count += utf8.count
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// Up to `maxCount` bytes written through `body`, with one check for
    /// room instead of one per piece.
    @inline(__always)
    mutating func append(atMost maxCount: Int, _ body: (inout ByteCursor) -> Void) {
        reserve(maxCount)
        var cursor = ByteCursor(next: start + count)
        body(&cursor)
        precondition(cursor.next - start <= count + maxCount, "a bounded write outgrew its bound")
        count = cursor.next - start
    }

    @inline(__always)
    mutating func appendDecimal(_ value: Int) {
        append(atMost: 20) { $0.putDecimal(value) }
    }

    /// With leading zeros up to `minimumDigits`.
    @inline(__always)
    mutating func appendDecimal(_ value: UInt, minimumDigits: Int = 1) {
        append(atMost: max(20, minimumDigits)) { $0.putDecimal(value, minimumDigits: minimumDigits) }
    }

    @inline(__always)
    mutating func appendThreeDigits(_ value: UInt) {
        append(atMost: 3) { $0.putThreeDigits(value) }
    }

    @inline(__always)
    mutating func appendEightHexDigits(_ value: UInt32) {
        append(atMost: 8) { $0.putEightHexDigits(value) }
    }

    /// The low `digits` hex digits of `value`, lowercase.
    @inline(__always)
    mutating func appendHex(_ value: UInt64, digits: Int) {
        reserve(digits)
        let table: StaticString = "0123456789abcdef"
        for index in 0..<digits {
            start[count + index] = table.utf8Start[Int(truncatingIfNeeded: value >> UInt64(4 * (digits - 1 - index)) & 0xF)]
        }
        count += digits
    }

    /// `text` as a JSON string, escaped as `JSONWriter` escapes it.
    mutating func appendJSONString(_ text: String) {
        var text = text
        text.withUTF8 { appendJSONString($0) }
    }

    mutating func appendJSONString(_ utf8: UnsafeBufferPointer<UInt8>) {
        append(UInt8(ascii: "\""))
        var plain = 0  // where the bytes not yet copied begin
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            append(UnsafeBufferPointer(rebasing: utf8[plain..<index]))
            plain = index + 1
            switch byte {
            case UInt8(ascii: "\""): append(#"\""#)
            case UInt8(ascii: "\\"): append(#"\\"#)
            case 0x0A: append(#"\n"#)
            case 0x0D: append(#"\r"#)
            case 0x09: append(#"\t"#)
            default:
                append(#"\u00"#)
                appendHex(UInt64(byte), digits: 2)
            }
        }
        append(UnsafeBufferPointer(rebasing: utf8[plain...]))
        append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: max(needed, capacity * 2))
        larger.update(from: start, count: count)
        start.deallocate()
        start = larger
        capacity = max(needed, capacity * 2)
    }
}

/// Writes bytes where ``LogBytes/append(atMost:_:)`` made room, with no
/// check per byte: the short pieces of a log line (names, numbers, ids).
struct ByteCursor {
    private(set) var next: UnsafeMutablePointer<UInt8>

    init(next: UnsafeMutablePointer<UInt8>) {
        self.next = next
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        next.pointee = byte
        next += 1
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        let source = text.utf8Start, count = text.utf8CodeUnitCount
        for index in 0..<count { next[index] = source[index] }
        next += count
    }

    /// The first `count` bytes of `words`; all 32 are stored, so 32 bytes of room are needed.
    @inline(__always)
    mutating func put(words: (UInt64, UInt64, UInt64, UInt64), count: Int) {
        let raw = UnsafeMutableRawPointer(next)
        raw.storeBytes(of: words.0, toByteOffset: 0, as: UInt64.self)
        raw.storeBytes(of: words.1, toByteOffset: 8, as: UInt64.self)
        raw.storeBytes(of: words.2, toByteOffset: 16, as: UInt64.self)
        raw.storeBytes(of: words.3, toByteOffset: 24, as: UInt64.self)
        next += count
    }

    @inline(__always)
    mutating func putDecimal(_ value: Int) {
        if value < 0 { put(UInt8(ascii: "-")) }
        putDecimal(value.magnitude)
    }

    /// With leading zeros up to `minimumDigits`.
    @inline(__always)
    mutating func putDecimal(_ value: UInt, minimumDigits: Int = 1) {
        if value < 10, minimumDigits <= 1 {
            // A request's milliseconds, most often: one digit, no loop.
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
        } else {
            putDecimalDigits(value, minimumDigits: minimumDigits)
        }
    }

    private mutating func putDecimalDigits(_ value: UInt, minimumDigits: Int) {
        var digits = 1, bound: UInt = 10
        while digits < 20, value >= bound {
            digits += 1
            bound &*= 10
        }
        digits = max(digits, minimumDigits)
        var rest = value, index = digits
        while index > 0 {
            index -= 1
            next[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        next += digits
    }

    /// `value` (below 1000) as three digits with leading zeros: the
    /// milliseconds of every timestamp and duration, without the general
    /// loop that first counts the digits.
    @inline(__always)
    mutating func putThreeDigits(_ value: UInt) {
        next[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 100)
        next[1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10 % 10)
        next[2] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
        next += 3
    }

    /// `value` as eight lowercase hex digits, all at once in one 64-bit
    /// word (a byte per nibble, then each nibble made a digit), stored with
    /// one write: a session's short id is on every access-log line.
    @inline(__always)
    mutating func putEightHexDigits(_ value: UInt32) {
        var nibbles = UInt64(value)
        nibbles = (nibbles & 0xFFFF) | (nibbles & 0xFFFF_0000) << 16
        nibbles = (nibbles & 0x0000_00FF_0000_00FF) | (nibbles & 0x0000_FF00_0000_FF00) << 8
        nibbles = (nibbles & 0x000F_000F_000F_000F) | (nibbles & 0x00F0_00F0_00F0_00F0) << 4
        // 1 in each byte whose nibble is 10 or more: those become a–f, 39 past '0'…'9'.
        let letters = (nibbles &+ 0x0606_0606_0606_0606) >> 4 & 0x0101_0101_0101_0101
        let digits = nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39
        // The first nibble's digit comes first in memory.
        UnsafeMutableRawPointer(next).storeBytes(of: digits.bigEndian, as: UInt64.self)
        next += 8
    }

    /// Milliseconds with three decimals, from microseconds.
    @inline(__always)
    mutating func putMilliseconds(microseconds: Int) {
        if microseconds < 0 { put(UInt8(ascii: "-")) }
        putDecimal(microseconds.magnitude / 1000)
        put(UInt8(ascii: "."))
        putThreeDigits(microseconds.magnitude % 1000)
    }
}
