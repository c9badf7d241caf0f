/// A field's value in a log line.
public enum LogValue: Sendable {
    case string(String)
    case int(Int)
    case milliseconds(Double)
}
