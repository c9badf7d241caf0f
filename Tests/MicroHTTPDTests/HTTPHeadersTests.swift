import Testing
@testable import MicroHTTPD

@Suite struct HTTPHeadersTests {
    let headers = HTTPHeaders([
        ("Host", "example.com"), ("content-type", "application/json"), ("If-Match", "\"1\""), ("if-match", "\"2\""),
        ("X-Empty", ""),
    ])

    @Test func namesCompareWithoutCase() {
        #expect(headers["HOST"] == "example.com")
        #expect(headers["Content-Type"] == "application/json")
        #expect(headers.contains("x-empty"))
        #expect(headers["X-Empty"] == "")
        #expect(!headers.contains("Hostx"))
        #expect(headers["Hos"] == nil)
    }

    @Test func firstValueComparesExactly() {
        #expect(headers.first("Content-Type", is: "application/json"))
        #expect(!headers.first("Content-Type", is: "application/jso"))
        #expect(!headers.first("Content-Type", is: "Application/json"))
        #expect(!headers.first("Accept", is: "application/json"))
        #expect(headers.first("If-Match", is: "\"1\""))
    }

    @Test func repeatedFieldsCombineInOrder() {
        #expect(headers.combined("IF-MATCH") == "\"1\", \"2\"")
        #expect(headers.combined("Accept") == nil)
        #expect(headers.combined("If-Match" as StaticString) == "\"1\", \"2\"", "a name of the server's own text")
        #expect(headers.combined("If-None-Match" as StaticString) == nil)
    }

    @Test func fieldsKeepTheirOrderAndSpelling() {
        #expect(headers.fields.map(\.name) == ["Host", "content-type", "If-Match", "if-match", "X-Empty"])
        #expect(headers.map(\.value) == ["example.com", "application/json", "\"1\"", "\"2\"", ""])
    }

    /// A NUL cannot travel in a C string: it ends the name or value there, so
    /// it can neither split a field in two nor hide one.
    @Test func aNulEndsTheText() {
        var headers = HTTPHeaders()
        headers.add(name: "A\0B", value: "one\0two")
        headers.add(name: "C", value: "three")
        #expect(headers.fields.map(\.name) == ["A", "C"])
        #expect(headers["A"] == "one")
        #expect(headers["C"] == "three")
    }

    /// Emptied for the connection's next request, the buffer keeps its
    /// bytes as room: the next fields are written over them, and neither
    /// the old bytes past the new fields nor a copy taken before suffer.
    @Test func fieldsWrittenOverRoomAreTheNewOnesOnly() {
        var reused = HTTPHeaders()
        reused.add(name: "Content-Type", value: "application/json")
        reused.add(name: "If-None-Match", value: "\"12345\"")
        let kept = reused
        reused.removeAll(keepingCapacity: true)
        reused.add(name: "Host", value: "a")
        #expect(reused.fields.map(\.name) == ["Host"])
        #expect(reused["If-None-Match"] == nil)
        reused.add(name: "X-Longer-Than-The-Room-Left", value: String(repeating: "v", count: 300))
        #expect(reused.fields.map(\.name) == ["Host", "X-Longer-Than-The-Room-Left"])
        #expect(reused["x-longer-than-the-room-left"]?.count == 300)
        #expect(kept.fields.map(\.name) == ["Content-Type", "If-None-Match"], "a copy is its own")
        #expect(kept["If-None-Match"] == "\"12345\"")
    }

    @Test func aValueGivenAsBytes() {
        var headers = HTTPHeaders([("Content-Type", "application/json")])
        Array("\"7\"".utf8).withUnsafeBufferPointer { headers.add(name: "ETag", writtenValue: $0) }
        #expect(headers.fields.map(\.name) == ["Content-Type", "ETag"])
        #expect(headers["ETag"] == "\"7\"")
    }

    @Test func fieldsOfTheServersOwnText() {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type" as StaticString, value: "application/json" as StaticString)
        headers.add(name: "Vary" as StaticString, value: "" as StaticString)
        #expect(headers.fields.map(\.name) == ["Content-Type", "Vary"])
        #expect(headers.first("content-type", is: "application/json"))
        #expect(headers["Vary"] == "")
        var seen: [String] = []
        headers.forEachCString { name, value in seen.append(String(cString: name) + "=" + String(cString: value)) }
        #expect(seen == ["Content-Type=application/json", "Vary="])
    }

    @Test func eachFieldReachesCAsItIs() {
        var seen: [String] = []
        headers.forEachCString { name, value in seen.append(String(cString: name) + "=" + String(cString: value)) }
        #expect(seen == ["Host=example.com", "content-type=application/json", "If-Match=\"1\"", "if-match=\"2\"", "X-Empty="])
    }

    @Test func contentLengthAsANumber() {
        func number(_ text: String) -> Int? { Array(text.utf8).withUnsafeBufferPointer(HTTPTokens.leadingDecimal) }
        #expect(number("65537") == 65_537)
        #expect(number("65536") == 65_536)
        #expect(number("99999999999999999999999999") == .max, "too long for an Int is still over any limit")
        #expect(number("") == nil)
        #expect(number("12x") == 12)
    }

    @Test func requestLineTokens() {
        #expect(HTTPTokens.method("POST") == "POST")
        #expect(HTTPTokens.method("PATCH") == "PATCH")
        #expect(HTTPTokens.method("GETX") == "GETX")
        #expect(HTTPTokens.version("HTTP/1.0") == "HTTP/1.0")
        #expect(HTTPTokens.version("HTTP/2") == "HTTP/2")
    }
}
