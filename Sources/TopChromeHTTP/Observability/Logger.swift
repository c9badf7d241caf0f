#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import StrictJSON

public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warn, error

    public var name: String {
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

/// Structured log lines to stdout (debug, info) and stderr (warn, error), as
/// containers expect. Lines are buffered and written in batches, so logging
/// every request costs a fraction of a system call each; warnings and errors,
/// and a timer, flush at once.
public final class Logger: @unchecked Sendable {
    public let format: LogFormat
    public let level: LogLevel
    private let lock = PthreadLock()
    private var buffer: [UInt8] = []
    /// Held while writing, so batches from different threads never interleave
    /// (a pipe write is atomic only up to 4 KiB) and stay in order.
    private let writeLock = PthreadLock()
    private static let flushThreshold = 32 * 1024

    public init(format: LogFormat, level: LogLevel) {
        self.format = format
        self.level = level
        buffer.reserveCapacity(Self.flushThreshold * 2)
    }

    public func isEnabled(_ level: LogLevel) -> Bool {
        level >= self.level
    }

    /// - Parameter always: log whatever the level, at once: for the few
    ///   lifecycle lines (listening on…, stopping) an operator must see.
    public func log(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue> = [:],
                    always: Bool = false) {
        guard always || isEnabled(level) else { return }
        let line = render(level, message, fields)
        if always {
            flush()
            write(level >= .warn ? 2 : 1, line)
            return
        }
        if level >= .warn {
            flush()
            write(2, line)
            return
        }
        let full: [UInt8]? = lock.withLock {
            buffer.append(contentsOf: line)
            guard buffer.count >= Self.flushThreshold else { return nil }
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if let full { write(1, full) }
    }

    /// Writes what is buffered.
    public func flush() {
        let pending: [UInt8] = lock.withLock {
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if !pending.isEmpty { write(1, pending) }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) {
        writeLock.lock()
        defer { writeLock.unlock() }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            offset += count
        }
    }

    private func render(_ level: LogLevel, _ message: String, _ fields: KeyValuePairs<String, LogValue>) -> [UInt8] {
        let time = Self.timestamp()
        switch format {
        case .json:
            var json = JSONWriter(capacity: 192)
            json.object { object in
                object.member("time") { $0.string(time) }
                object.member("level") { $0.string(level.name) }
                object.member("msg") { $0.string(message) }
                for (name, value) in fields {
                    object.member(name) { writer in
                        switch value {
                        case let .string(text): writer.string(text)
                        case let .int(number): writer.number(number)
                        case let .milliseconds(ms): writer.raw(Self.milliseconds(ms))
                        }
                    }
                }
            }
            return json.bytes + [0x0A]
        case .text:
            var line = "\(time) \(level.name) \(message)"
            for (name, value) in fields {
                switch value {
                case let .string(text): line += " \(name)=\(text.contains(" ") ? "\"\(text)\"" : text)"
                case let .int(number): line += " \(name)=\(number)"
                case let .milliseconds(ms): line += " \(name)=\(Self.milliseconds(ms))"
                }
            }
            return Array(line.utf8) + [0x0A]
        }
    }

    /// Three decimals: microsecond resolution is all a request log needs.
    private static func milliseconds(_ value: Double) -> String {
        let micros = Int((value * 1000).rounded())
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-30T01:04:45.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(now.tv_nsec / 1_000_000)
        let ms = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(ms)Z"
    }
}
