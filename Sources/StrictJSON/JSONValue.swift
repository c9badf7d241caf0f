/// A parsed JSON value, as strict as RFC 8259 and no stricter.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number with its source text, so integers can be read without rounding.
    case number(Double, literal: String)
    case string(String)
    case array([JSONValue])
    /// Members by name; the reader refuses an object that repeats a name.
    case object([String: JSONValue])

    /// The JSON type's name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
