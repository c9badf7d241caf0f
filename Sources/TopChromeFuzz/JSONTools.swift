import StrictJSON

/// Helpers over `JSONValue` for the invariants of the targets.
enum JSONTools {
    /// The value as JSON text: strings and names through `JSONWriter.string`
    /// (the production escaper), numbers as their source literal.
    static func write(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        write(value, into: &writer)
        return writer.bytes
    }

    static func write(_ value: JSONValue, into writer: inout JSONWriter) {
        switch value {
        case .null: writer.raw("null")
        case let .bool(flag): writer.bool(flag)
        case let .number(_, literal): writer.raw(literal)
        case let .string(text): writer.string(text)
        case let .array(elements):
            writer.raw("[")
            for (index, element) in elements.enumerated() {
                if index > 0 { writer.raw(",") }
                write(element, into: &writer)
            }
            writer.raw("]")
        case let .object(members):
            writer.object { object in
                for (name, member) in members {
                    object.member(name) { write(member, into: &$0) }
                }
            }
        }
    }

    /// Equal down to the bytes of every string (Swift's `==` on strings is
    /// canonical equivalence, which would hide a changed normalization).
    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.number(x, xl), .number(y, yl)): return (x == y || (x.isNaN && y.isNaN)) && xl == yl
        case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
        case let (.array(x), .array(y)):
            return x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case let (.object(x), .object(y)):
            guard x.count == y.count else { return false }
            for (name, member) in x {
                guard let index = y.index(forKey: name), y[index].key.utf8.elementsEqual(name.utf8),
                      identical(member, y[index].value) else { return false }
            }
            return true
        default: return false
        }
    }

    /// Containers nested in `value`, counting `value` itself.
    static func depth(_ value: JSONValue) -> Int {
        switch value {
        case let .array(elements): 1 + (elements.map(depth).max() ?? 0)
        case let .object(members): 1 + (members.values.map(depth).max() ?? 0)
        default: 0
        }
    }

    /// Every number in `value`.
    static func numbers(_ value: JSONValue, into result: inout [(Double, String)]) {
        switch value {
        case let .number(number, literal): result.append((number, literal))
        case let .array(elements): for element in elements { numbers(element, into: &result) }
        case let .object(members): for member in members.values { numbers(member, into: &result) }
        default: break
        }
    }

    /// A problem+json body (RFC 9457) as the API writes it: an object with
    /// exactly `type`, `title`, `status` and `detail`, `status` equal to `status`.
    static func problemMismatch(_ body: [UInt8], status: Int) -> String? {
        let value: JSONValue
        do {
            value = try JSONReader.parse(body)
        } catch {
            return "problem body is not JSON (\(error.message) at \(error.offset))"
        }
        guard case let .object(members) = value else { return "problem body is not an object" }
        // A 413 also names the limit, for a client to split its batch by.
        let expected: Set<String> = status == 413 ? ["type", "title", "status", "detail", "maxBodyBytes"]
            : ["type", "title", "status", "detail"]
        guard Set(members.keys) == expected else {
            return "problem members are \(members.keys.sorted())"
        }
        if status == 413 {
            guard case let .number(limit, _) = members["maxBodyBytes"], limit >= 0, limit == limit.rounded() else {
                return "a 413's maxBodyBytes is not a whole number"
            }
        }
        guard case .string = members["type"], case .string = members["title"], case .string = members["detail"] else {
            return "type, title and detail must be strings"
        }
        guard case let .number(number, _) = members["status"], number == Double(status) else {
            return "problem status \(String(describing: members["status"])) is not the HTTP status \(status)"
        }
        return nil
    }
}
