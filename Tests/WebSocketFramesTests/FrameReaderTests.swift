import Testing
@testable import WebSocketFrames

/// A client's frame: masked, as a browser sends it.
func clientFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    WebSocketFrameWriter.frame(opcode, payload, fin: fin, mask: (0x37, 0xFA, 0x21, 0x3D))
}

/// Every event the bytes make, fed in pieces of `piece` bytes, and the
/// violation that ended them if any.
func read(_ bytes: [UInt8], piece: Int = .max, maxMessageBytes: Int = 1 << 20)
    -> (events: [WebSocketEvent], violation: WebSocketCloseCode?) {
    var reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
    var events: [WebSocketEvent] = []
    var index = 0
    repeat {
        let end = index + min(piece, bytes.count - index)
        reader.feed(bytes[index..<end])
        index = end
        do {
            while let event = try reader.next() { events.append(event) }
        } catch {
            return (events, error.closeCode)
        }
    } while index < bytes.count
    return (events, nil)
}

@Suite struct FrameReaderTests {
    /// RFC 6455 §5.7's masked "Hello".
    @Test func readsTheRFCsMaskedExample() {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(read(bytes).events == [.text("Hello")])
        #expect(read(bytes, piece: 1).events == [.text("Hello")])
    }

    @Test(arguments: [0, 125, 126, 65_535, 65_536, 200_000])
    func readsEveryLengthEncoding(_ length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
        let bytes = clientFrame(.binary, payload) + clientFrame(.ping, [1, 2])
        #expect(read(bytes).events == [.binary(payload), .ping([1, 2])])
        #expect(read(bytes, piece: 7).events == [.binary(payload), .ping([1, 2])])
    }

    @Test func refusesAnUnmaskedFrame() {
        #expect(read(WebSocketFrameWriter.text("hi")).violation == .protocolError)
    }

    @Test(arguments: [0x40, 0x20, 0x10] as [UInt8])
    func refusesReservedBits(_ bit: UInt8) {
        var bytes = clientFrame(.text, Array("hi".utf8))
        bytes[0] |= bit
        #expect(read(bytes).violation == .protocolError)
    }

    @Test(arguments: [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] as [UInt8])
    func refusesReservedOpcodes(_ opcode: UInt8) {
        let bytes = [0x80 | opcode, 0x80, 1, 2, 3, 4]
        #expect(read(clientFrame(.text, Array("a".utf8)) + bytes) == ([.text("a")], .protocolError))
    }

    @Test func joinsFragmentsWithControlFramesBetween() {
        let bytes = clientFrame(.text, Array("Hel".utf8), fin: false) + clientFrame(.ping, Array("p".utf8))
            + clientFrame(.continuation, [], fin: false) + clientFrame(.pong, [])
            + clientFrame(.continuation, Array("lo".utf8))
        for piece in [1, 3, .max] {
            #expect(read(bytes, piece: piece) == ([.ping(Array("p".utf8)), .pong([]), .text("Hello")], nil))
        }
    }

    @Test func refusesAContinuationWithNoMessage() {
        #expect(read(clientFrame(.continuation, [1])).violation == .protocolError)
    }

    @Test func refusesANewMessageBeforeTheLastEnds() {
        let bytes = clientFrame(.text, [0x61], fin: false) + clientFrame(.text, [0x62])
        #expect(read(bytes).violation == .protocolError)
    }

    @Test func refusesFragmentedOrLongControlFrames() {
        #expect(read(clientFrame(.ping, [1], fin: false)).violation == .protocolError)
        #expect(read(clientFrame(.ping, [UInt8](repeating: 0, count: 126))).violation == .protocolError)
    }

    /// 1009 from the header: the payload of a message too big is never awaited.
    @Test func refusesAMessageTooBigFromItsHeader() {
        let header = Array(clientFrame(.binary, [UInt8](repeating: 0, count: 101)).prefix(6))
        #expect(read(header, maxMessageBytes: 100).violation == .messageTooBig)
        #expect(read(clientFrame(.binary, [UInt8](repeating: 0, count: 100)), maxMessageBytes: 100).violation == nil)
        let fragments = clientFrame(.text, [UInt8](repeating: 0x61, count: 60), fin: false)
            + clientFrame(.continuation, [UInt8](repeating: 0x61, count: 41))
        #expect(read(fragments, maxMessageBytes: 100).violation == .messageTooBig)
    }

    @Test func refusesALengthWithItsTopBitSet() {
        let bytes: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4]
        #expect(read(bytes).violation == .protocolError)
    }

    @Test func refusesTextThatIsNotUTF8() {
        #expect(read(clientFrame(.text, [0xCE, 0xBA, 0xE1, 0xBD])).violation == .invalidPayload)
        let split = clientFrame(.text, [0xCE], fin: false) + clientFrame(.continuation, [0xBA])
        #expect(read(split).events == [.text("κ")])
    }

    @Test func readsCloseFrames() {
        #expect(read(clientFrame(.close, [])).events == [.close(code: nil, reason: "")])
        #expect(read(clientFrame(.close, [0x03, 0xE8] + Array("bye".utf8))).events == [.close(code: 1000, reason: "bye")])
        #expect(read(clientFrame(.close, [0x03])).violation == .protocolError)
        #expect(read(clientFrame(.close, [0x03, 0xED])).violation == .protocolError, "1005 is never sent")
        #expect(read(clientFrame(.close, [0x03, 0xE8, 0xFF])).violation == .invalidPayload)
    }

    @Test func readsNothingAfterAClose() throws {
        let bytes = clientFrame(.close, [0x03, 0xE8]) + clientFrame(.text, [0x61])
        #expect(read(bytes).events == [.close(code: 1000, reason: "")])
        var reader = WebSocketFrameReader(maxMessageBytes: 100)
        reader.feed(bytes)
        #expect(try reader.next() == .close(code: 1000, reason: ""))
        #expect(reader.bufferedBytes == 0)
    }

    @Test func keepsNoBytesAfterAViolation() throws {
        var reader = WebSocketFrameReader(maxMessageBytes: 100)
        reader.feed(WebSocketFrameWriter.text("unmasked"))
        #expect(throws: WebSocketViolation(.protocolError)) { try reader.next() }
        reader.feed([UInt8](repeating: 0, count: 1000))
        #expect(reader.bufferedBytes == 0)
        #expect(try reader.next() == nil)
    }
}

@Suite struct FrameWriterTests {
    @Test func writesUnmaskedServerFrames() {
        #expect(WebSocketFrameWriter.text("Hello") == [0x81, 0x05] + Array("Hello".utf8))
        let long = WebSocketFrameWriter.frame(.binary, [UInt8](repeating: 0, count: 256))
        #expect(Array(long.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        let huge = WebSocketFrameWriter.frame(.binary, [UInt8](repeating: 0, count: 65_536))
        #expect(Array(huge.prefix(10)) == [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
    }

    @Test func cutsACloseReasonToFitOnACharacterBoundary() {
        let frame = WebSocketFrameWriter.close(.policyViolation, reason: String(repeating: "é", count: 100))
        #expect(frame.count <= 127)
        #expect(Array(frame.prefix(4)) == [0x88, UInt8(frame.count - 2), 0x03, 0xF0])
        #expect(String(validating: frame.dropFirst(4), as: UTF8.self) != nil)
    }
}
