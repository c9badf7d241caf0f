/// The Prometheus text exposition format, written in one place so every
/// family in `/metrics` has the same HELP/TYPE shape and label values are
/// escaped the way the format requires (a node name or an error code is not
/// ours to trust).
public struct MetricsText: Sendable {
    public private(set) var text = ""

    public init() {}

    public enum Kind: String, Sendable {
        case counter, gauge, histogram, summary, untyped
    }

    /// A family's header; its samples follow.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapedHelp(help))\n"
        text += "# TYPE \(name) \(kind.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ value: some CustomStringConvertible) {
        text += "\(name) \(value)\n"
    }

    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: some CustomStringConvertible) {
        text += name
        if !labels.isEmpty {
            text += "{"
            var first = true
            for (label, labelValue) in labels {
                if !first { text += "," }
                first = false
                text += "\(label)=\"\(Self.escapedLabelValue(labelValue))\""
            }
            text += "}"
        }
        text += " \(value)\n"
    }

    /// The format's label values escape backslash, double quote and line feed.
    static func escapedLabelValue(_ value: String) -> String { escaped(value, quote: true) }

    /// HELP text escapes backslash and line feed (a quote is fine there).
    static func escapedHelp(_ help: String) -> String { escaped(help, quote: false) }

    private static func escaped(_ text: String, quote: Bool) -> String {
        func needsEscape(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\n") || (quote && byte == UInt8(ascii: "\""))
        }
        guard text.utf8.contains(where: needsEscape) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quote: escaped += "\\\""
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
