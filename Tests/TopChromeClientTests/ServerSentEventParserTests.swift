import Testing
@testable import TopChromeClient

/// The WHATWG event-stream parsing rules, with the spec's own examples and
/// its corner cases, each fed whole, byte by byte, and in two pieces at
/// every cut: the result must not depend on where the network cut it.
struct ServerSentEventParserTests {
    struct Parsed: Equatable {
        var events: [ServerSentEvent]
        var lastEventID: String
        var reconnectionTime: Int?
    }

    /// Parses `bytes` every way it can arrive and checks that all ways agree.
    func parse(_ bytes: [UInt8]) -> Parsed {
        func run(_ pieces: [ArraySlice<UInt8>]) -> Parsed {
            var parser = ServerSentEventParser()
            let events = pieces.flatMap { parser.feed($0) }
            return Parsed(events: events, lastEventID: parser.lastEventID, reconnectionTime: parser.reconnectionTime)
        }
        let whole = run([bytes[...]])
        #expect(run(bytes.indices.map { bytes[$0...$0] }) == whole, "byte by byte")
        for cut in bytes.indices {
            #expect(run([bytes[..<cut], bytes[cut...]]) == whole, "cut at \(cut)")
        }
        return whole
    }

    func parse(_ text: String) -> Parsed { parse(Array(text.utf8)) }

    func message(_ data: String, id: String = "", type: String = "message") -> ServerSentEvent {
        ServerSentEvent(type: type, data: data, lastEventID: id)
    }

    @Test func multiLineData() {
        #expect(parse("data: YHOO\ndata: +2\ndata: 10\n\n").events == [message("YHOO\n+2\n10")])
    }

    @Test func commentsIdsAndTheOneSpaceAfterTheColon() {
        let parsed = parse(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n")
        #expect(parsed.events == [message("first event", id: "1"), message("second event"), message(" third event")])
        #expect(parsed.lastEventID == "")
    }

    @Test func emptyDataAndAnUnfinishedEvent() {
        // The first block dispatches "", the second "\n"; the last is never finished.
        #expect(parse("data\n\ndata\ndata\n\ndata:").events == [message(""), message("\n")])
    }

    @Test func spaceAfterColonIsOptional() {
        #expect(parse("data:test\n\ndata: test\n\n").events == [message("test"), message("test")])
    }

    @Test func everyLineEnding() {
        #expect(parse("data: a\r\ndata: b\rdata: c\n\r\n").events == [message("a\nb\nc")])
        #expect(parse("data: a\r\rdata: b\r\r").events == [message("a"), message("b")])
        // CR LF is one line end, not two: no empty line, no dispatch in between.
        #expect(parse("data: a\r\ndata: b\r\n\r\n").events == [message("a\nb")])
    }

    @Test func eventTypeIsNamedOnceAndResets() {
        let parsed = parse("event: state\nid: 7\ndata: {}\n\ndata: plain\n\nevent: lonely\n\ndata: after\n\n")
        #expect(parsed.events == [message("{}", id: "7", type: "state"), message("plain", id: "7"), message("after", id: "7")])
        #expect(parsed.lastEventID == "7", "ids persist until set again")
    }

    @Test func byteOrderMarkOnlyAtTheStart() {
        #expect(parse([0xEF, 0xBB, 0xBF] + Array("data: x\n\n".utf8)).events == [message("x")])
        // A second one is part of the line, and the field name is then unknown.
        #expect(parse([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF] + Array("data: x\n\n".utf8)).events == [])
        #expect(parse(Array("data: x\n\n".utf8) + [0xEF, 0xBB, 0xBF] + Array("data: y\n\n".utf8)).events == [message("x")])
    }

    @Test func retryTakesDigitsOnly() {
        #expect(parse("retry: 1500\n\n").reconnectionTime == 1500)
        #expect(parse("retry: 15x0\n\n").reconnectionTime == nil)
        #expect(parse("retry:\n\n").reconnectionTime == nil)
        #expect(parse("retry: -5\n\n").reconnectionTime == nil)
        #expect(parse("retry: 1500\nretry: 2s\n\n").reconnectionTime == 1500, "a bad value keeps the last good one")
        #expect(parse("retry: 99999999999999999999999\n\n").reconnectionTime == Int.max)
    }

    @Test func idWithNulIsIgnored() {
        let parsed = parse(Array("id: 3\n\nid: 4".utf8) + [0] + Array("\ndata: x\n\n".utf8))
        #expect(parsed.events == [message("x", id: "3")])
    }

    @Test func unknownFieldsAndLinesWithoutColon() {
        #expect(parse("foo: bar\ndata\nevent\n\n").events == [message("")])
        #expect(parse("DATA: x\nData: y\n\n").events == [], "field names are case-sensitive")
    }

    @Test func invalidUTF8BecomesReplacementCharacters() {
        #expect(parse(Array("data: a".utf8) + [0xFF, 0xE2, 0x82] + Array("b\n\n".utf8)).events == [message("a\u{FFFD}\u{FFFD}b")])
        #expect(parse(Array("data: é€😀\n\n".utf8)).events == [message("é€😀")])
    }

    @Test func aNewStreamDropsTheHalfReadEventAndKeepsTheID() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(Array("retry: 10\nid: 5\ndata: whole\n\ndata: half".utf8)) == [message("whole", id: "5")])
        parser.startNewStream()
        #expect(parser.lastEventID == "5")
        #expect(parser.feed(Array("\ndata: next\n\n".utf8)) == [message("next", id: "5")])
        #expect(parser.reconnectionTime == 10)
    }
}
