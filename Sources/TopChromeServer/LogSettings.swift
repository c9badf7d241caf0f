/// What the log says and where it goes.
public struct LogSettings: Sendable, Equatable {
    public var format = LogFormat.text
    /// `info` logs every request; `warn` only problems.
    public var level = LogLevel.info
    /// Where warnings and errors go: with everything else by default, so a
    /// story told over several lines (Redis lost, then back) reads in order.
    public var errorsToStderr = false

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "log-format", placeholder: "F", help: "Log lines as 'text' or 'json' (default '{default}').", default: { $0.logging.format.rawValue }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard let format = LogFormat(rawValue: value) else {
                throw .init(description: "\(source) must be text or json, not '\(value)'")
            }
            config.logging.format = format
        },
        .init(name: "log-level", placeholder: "L", help: "debug, info (one line per request), warn or error (default {default}).", default: { $0.logging.level.name }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard let level = LogLevel(name: value) else {
                throw .init(description: "\(source) must be debug, info, warn or error, not '\(value)'")
            }
            config.logging.level = level
        },
        .init(name: "log-errors-to", placeholder: "S", help: "Where warn and error lines go: stdout (with the rest) or stderr (default {default}).", default: { $0.logging.errorsToStderr ? "stderr" : "stdout" }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard value == "stdout" || value == "stderr" else {
                throw .init(description: "\(source) must be stdout or stderr, not '\(value)'")
            }
            config.logging.errorsToStderr = value == "stderr"
        },
    ]
}
