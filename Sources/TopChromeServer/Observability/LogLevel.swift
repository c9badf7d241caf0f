/// How much a line matters: a logger writes the lines at its level and above.
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
