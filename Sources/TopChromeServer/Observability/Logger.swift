#if canImport(Glibc)
import Glibc
#endif
import Locking

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
public final class Logger: @unchecked Sendable {  // each buffer is guarded by its own lock
    public let format: LogFormat
    public let level: LogLevel
    private let output: Int32
    private let errors: Int32
    private let clock: @Sendable () -> timespec
    private let buffers: [LineBuffer]
    /// Held while writing, so batches from different buffers never
    /// interleave.
    private let writeLock = PthreadLock()
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
        log(level, message, fieldList: fields.map { ($0.key, $0.value) }, always: always)
    }

    /// The same, with fields gathered as the caller finds them.
    public func log(_ level: LogLevel, _ message: String, fieldList fields: [(String, LogValue)], always: Bool = false) {
        guard always || isEnabled(level) else { return }
        let writeFields = { (line: inout LogLine) in
            for (name, value) in fields { line.field(name, value) }
        }
        if always {
            writeAtOnce(level >= .warn ? errors : output, .text(level, message), writeFields)
        } else if level >= .warn {
            writeAtOnce(errors, .text(level, message), writeFields)
        } else {
            appendBuffered(.text(level, message), writeFields)
        }
    }

    /// A line whose fields `fields` writes into the buffer as they are, for
    /// lines written often (one per request): nothing is built per field.
    func log(_ level: LogLevel, _ message: StaticString, fields: (inout LogLine) -> Void) {
        guard isEnabled(level) else { return }
        if level >= .warn {
            writeAtOnce(errors, .message(level, message), fields)
        } else {
            appendBuffered(.message(level, message), fields)
        }
    }

    /// The part of a line after its time that repeats from line to line:
    /// its level, its message and the fields `fields` writes (an access
    /// line's method and route), written once, here, to be copied whole
    /// into every line that starts so (``log(_:fields:)``).
    func lineStart(_ level: LogLevel, _ message: StaticString, fields: (inout LogLine) -> Void) -> LogLineStart {
        var line = LogLine(format: format, bytes: LogBytes(capacity: 128))
        line.levelAndMessage(level, message)
        fields(&line)
        return LogLineStart(level: level, bytes: line.bytes.copied())
    }

    /// A line that begins with `start` (its time first); `fields` writes the rest.
    func log(_ start: LogLineStart, fields: (inout LogLine) -> Void) {
        guard isEnabled(start.level) else { return }
        if start.level >= .warn {
            writeAtOnce(errors, .prepared(start), fields)
        } else {
            appendBuffered(.prepared(start), fields)
        }
    }

    private func appendBuffered(_ head: LineHead, _ fields: (inout LogLine) -> Void) {
        let buffer = buffers[Self.bufferIndex()]
        buffer.lock.lock()
        // Taken out and put back rather than written in place: an inout
        // access to a class's property across `fields` would be checked for
        // exclusivity at run time, on every line. For the same reason the
        // timestamps are copied.
        var line = LogLine(format: format, bytes: buffer.bytes.take()!)
        var timestamps = buffer.timestamps
        line.begin(at: clock(), timestamps: &timestamps, head)
        fields(&line)
        line.end()
        var bytes = line.finished()
        if bytes.count >= Self.flushThreshold {
            write(output, bytes)
            bytes.removeAll()
        }
        buffer.bytes = consume bytes
        buffer.timestamps = timestamps
        buffer.lock.unlock()
    }

    /// Writes every buffered line.
    public func flush() {
        for buffer in buffers {
            buffer.lock.lock()
            if var bytes = buffer.bytes.take() {
                if bytes.count > 0 {
                    write(output, bytes)
                    bytes.removeAll()
                }
                buffer.bytes = consume bytes
            }
            buffer.lock.unlock()
        }
    }

    /// A line that must not wait behind buffered ones: those are written first.
    private func writeAtOnce(_ fd: Int32, _ head: LineHead, _ fields: (inout LogLine) -> Void) {
        var line = LogLine(format: format, bytes: LogBytes(capacity: 256))
        var timestamps = TimestampCache()
        line.begin(at: clock(), timestamps: &timestamps, head)
        fields(&line)
        line.end()
        flush()
        write(fd, line.finished())
    }

    /// Whole batches, so that batches from different buffers never
    /// interleave (a pipe write is atomic only up to 4 KiB).
    private func write(_ fd: Int32, _ bytes: borrowing LogBytes) {
        writeLock.lock()
        bytes.write(to: fd)
        writeLock.unlock()
    }

    /// The calling thread's buffer.
    private static func bufferIndex() -> Int {
        threadSlot(among: bufferCount)
    }
}

/// What ``Logger/lineStart(_:_:fields:)`` made: the bytes that follow a line's time.
struct LogLineStart {
    let level: LogLevel
    let bytes: [UInt8]
}

/// What follows a line's time: its level and message, or a start made before.
enum LineHead {
    case message(LogLevel, StaticString)
    case text(LogLevel, String)
    case prepared(LogLineStart)
}

/// Lines not yet written, and the second they were last stamped with.
private final class LineBuffer {
    let lock = PthreadLock()
    /// Grows to a little over the flush threshold, once, on a thread that
    /// logs; nil only while a line is being written into it, under `lock`
    /// (which keeps accesses apart, so they are not checked at run time).
    @exclusivity(unchecked) var bytes: LogBytes? = LogBytes(capacity: 1024)
    var timestamps = TimestampCache()
}
