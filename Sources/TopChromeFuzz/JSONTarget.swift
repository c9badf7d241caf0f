import Foundation
import StrictJSON

/// `json`: `JSONReader.parse` on arbitrary bytes.
///
/// Invariants: parsing never crashes and is deterministic; it accepts
/// exactly what an independent strict recognizer accepts; a parsed value
/// nests at most `maxDepth` deep, its numbers are their literals' values,
/// and writing it back (strings through the production `JSONWriter`) reads
/// back identical; every finite number written by `JSONWriter.number` reads
/// back as the same number; and Foundation's JSON parser accepts every text
/// `JSONReader` accepts and reads the same values from it.
enum JSONTarget {
    static let target = FuzzTarget(
        name: "json",
        summary: "JSONReader.parse on raw bytes: determinism, strict-grammar differential, round trips",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let first = Result { () throws(JSONReader.SyntaxError) in try JSONReader.parse(bytes) }
        let second = Result { () throws(JSONReader.SyntaxError) in try JSONReader.parse(bytes) }
        let input = printable(bytes)

        switch (first, second) {
        case let (.success(a), .success(b)):
            check(JSONTools.identical(a, b), "parsing twice gave different values for \(input)")
        case let (.failure(a), .failure(b)):
            check(a == b, "parsing twice gave different errors (\(a), \(b)) for \(input)")
        default:
            fail("parsing twice gave a value once and an error once for \(input)")
        }

        let recognized = StrictRecognizer.accepts(bytes)
        guard case let .success(value) = first else {
            if case let .failure(error) = first {
                check(!recognized, "JSONReader refused valid JSON (\(error.message) at byte \(error.offset)): \(input)")
                check(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside the input")
            }
            return
        }
        check(recognized, "JSONReader accepted text that is not strict RFC 8259 JSON: \(input)")
        check(JSONTools.depth(value) <= JSONReader.maxDepth, "accepted nesting deeper than \(JSONReader.maxDepth)")

        var numbers: [(Double, String)] = []
        JSONTools.numbers(value, into: &numbers)
        for (number, literal) in numbers {
            check(StrictRecognizer.accepts(Array(literal.utf8)) && literal.first != " " && literal.last != " ",
                  "number literal \"\(literal)\" is not a JSON number")
            guard let exact = Double(literal) else { fail("Double(\"\(literal)\") is nil; the reader maps that to +infinity") }
            check(number == exact, "number \(number) is not its literal \"\(literal)\" (\(exact))")
            if number.isFinite { checkWriterRoundTrip(number) }
        }

        // Written back (strings escaped by JSONWriter.string), it reads back identical.
        let written = JSONTools.write(value)
        do {
            let reread = try JSONReader.parse(written)
            check(JSONTools.identical(value, reread),
                  "value changed in a write/read round trip: \(input) -> \(printable(written))")
        } catch {
            fail("JSONWriter output does not parse (\(error.message) at \(error.offset)): \(printable(written)) from \(input)")
        }

        checkAgainstFoundation(value, bytes: bytes, input: input, hasInfinity: numbers.contains { !$0.0.isFinite })
    }

    /// `JSONWriter.number` writes JSON that reads back as the same number.
    static func checkWriterRoundTrip(_ number: Double) {
        var writer = JSONWriter()
        writer.number(number)
        guard case let .success(.number(reread, _)) = Result(catching: { () throws(JSONReader.SyntaxError) in
            try JSONReader.parse(writer.bytes)
        }) else {
            fail("JSONWriter.number(\(number)) wrote \(printable(writer.bytes)), which is not a JSON number")
        }
        check(reread == number, "JSONWriter.number(\(number)) wrote \(printable(writer.bytes)), read back as \(reread)")
    }

    /// Foundation's parser is lenient (trailing commas, a BOM), so only one
    /// direction holds: what `JSONReader` accepts, Foundation accepts too,
    /// with the same values. Numbers beyond Double's range are the
    /// exception: `JSONReader` reads them as infinity, Foundation refuses.
    static func checkAgainstFoundation(_ value: JSONValue, bytes: [UInt8], input: String, hasInfinity: Bool) {
        guard !hasInfinity else { return }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            fail("Foundation refuses what JSONReader accepted (\(error)): \(input)")
        }
        if let difference = difference(value, object, path: "$") {
            fail("JSONReader and Foundation read different values at \(difference): \(input)")
        }
    }

    private static func difference(_ value: JSONValue, _ object: Any, path: String) -> String? {
        switch value {
        case .null:
            return object is NSNull ? nil : path
        case let .bool(flag):
            if let other = object as? Bool, other == flag { return nil }
            return path
        case let .number(number, _):
            if object is NSDecimalNumber { return nil }  // Foundation's own rounding; not compared
            guard let other = object as? NSNumber else { return path }
            return other.doubleValue == number ? nil : "\(path) (\(number) vs \(other))"
        case let .string(text):
            guard let other = object as? String else { return path }
            return withoutBOM(other) == withoutBOM(text) ? nil : path
        case let .array(elements):
            guard let others = object as? [Any], others.count == elements.count else { return path }
            for (index, element) in elements.enumerated() {
                if let found = difference(element, others[index], path: "\(path)[\(index)]") { return found }
            }
            return nil
        case let .object(members):
            guard let others = object as? [String: Any] else { return path }
            // Names that differ only in U+FEFF become duplicates in Foundation: not comparable.
            // Its keys are Strings, so "é" and "e\u{301}" (canonically equal) are one key there.
            guard Set(members.keys.map { String(decoding: withoutBOM($0), as: UTF8.self) }).count == members.count else {
                return nil
            }
            guard others.count == members.count else { return path }
            var byName: [[UInt8]: Any] = [:]
            for (name, other) in others { byName[withoutBOM(name)] = other }
            for (name, member) in members {
                guard let other = byName[withoutBOM(name)] else { return "\(path).\(name) (missing)" }
                if let found = difference(member, other, path: "\(path).\(name)") { return found }
            }
            return nil
        }
    }

    /// Foundation drops a U+FEFF that starts a string or follows an escape,
    /// as if it were a byte order mark; JSONReader keeps it, as RFC 8259
    /// says. Strings are compared without them (as UTF-8, exactly otherwise).
    private static func withoutBOM(_ text: String) -> [UInt8] {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\u{FEFF}" })).utf8.map { $0 }
    }
}
