import StrictJSON
import Testing

@Suite struct JSONReaderTests {
    func parse(_ text: String) throws -> JSONValue {
        try JSONReader.parse(Array(text.utf8))
    }

    @Test func readsEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5e3, true, false, null, "x\n\u00e9\ud83d\ude00"], "b": {}} "#)
        #expect(value == .object([
            "a": .array([.number(1, literal: "1"), .number(-2500, literal: "-2.5e3"), .bool(true), .bool(false),
                         .null, .string("x\né😀")]),
            "b": .object([:]),
        ]))
    }

    /// I-JSON (RFC 7493 §2.3): which of two members of one name counts is
    /// undefined, so neither does. Names compare after escapes are decoded.
    @Test(arguments: [#"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"[{"b":{"a":1,"b":2,"a":3}}]"#,
                      #"{"contentOffsetY": 5, "contentOffsetY": 500}"#])
    func refusesDuplicateMemberNames(_ text: String) {
        #expect(throws: JSONReader.SyntaxError.self) { try parse(text) }
    }

    @Test func sameNameInDifferentObjectsIsFine() throws {
        #expect(try parse(#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#) == .object([
            "a": .object(["a": .number(1, literal: "1")]),
            "b": .array([.object(["a": .number(2, literal: "2")]), .object(["a": .number(3, literal: "3")])]),
        ]))
    }

    @Test func hugeExponentsOverflowToInfinity() throws {
        guard case let .number(value, _) = try parse("1e400") else { Issue.record("not a number"); return }
        #expect(value == .infinity)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "01", "1.", ".5", "-", "+1", "1e", "0x10", "NaN",
        "Infinity", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\ud800\\u0041\"",
        "\"a\u{1}b\"", "{} {}", "[1] x", "'a'", "\u{feff}{}",
    ])
    func rejectsMalformedText(_ text: String) {
        #expect(throws: JSONReader.SyntaxError.self) { try parse(text) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONReader.SyntaxError.self) { try JSONReader.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func boundsNesting() throws {
        let ok = String(repeating: "[", count: JSONReader.maxDepth) + String(repeating: "]", count: JSONReader.maxDepth)
        #expect(throws: Never.self) { try parse(ok) }
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONReader.SyntaxError.self) { try parse(deep) }
    }
}

@Suite struct JSONWriterTests {
    @Test func writesNumbersAsJSON() {
        func text(_ value: Double) -> String {
            var writer = JSONWriter()
            writer.number(value)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        #expect(text(59) == "59")
        #expect(text(0) == "0")
        #expect(text(-0.0) == "0")
        #expect(text(0.5) == "0.5")
        #expect(text(10_000) == "10000")
        #expect(text(1e-7) == "1e-07")
        #expect(text(1e300) == "1e+300")
    }

    @Test func escapesStrings() {
        var writer = JSONWriter()
        writer.string("a\"b\\c\n\u{1}é")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #""a\"b\\c\n\u0001é""#)
    }
}
