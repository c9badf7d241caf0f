import MemorySessionStore
@testable import MicroHTTPD
import StrictJSON
import Testing
@testable import TopChromeAPI
import TopChromeCore
import TopChromeTesting

/// The hand-written state body must be byte for byte what the general JSON
/// writer makes of the same state.
@Suite struct StateWriterTests {
    static func reference(_ session: Session) -> [UInt8] {
        var json = JSONWriter()
        json.object { object in
            object.member("id") { $0.string(session.id.description) }
            object.member("inset") { $0.number(session.state.inset) }
            object.member("isRevealed") { $0.bool(session.state.isRevealed) }
            object.member("version") { $0.number(session.state.version) }
            if let lastSeq = session.state.lastAppliedSeq { object.member("lastSeq") { $0.number(lastSeq) } }
        }
        return json.bytes
    }

    @Test(arguments: [0, 59, 10_000, 0.5, 59.25, 1e-7, 0.1, 9_999.999_999_999_998, -0.0])
    func insets(_ inset: Double) {
        let session = Session(id: SessionID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210),
                              state: ChromeState(inset: inset, isRevealed: false, version: 7, lastAppliedSeq: nil), tag: StateTag(bits: 1))
        #expect(String(decoding: StateWriter.json(session), as: UTF8.self) == String(decoding: Self.reference(session), as: UTF8.self))
    }

    /// The longest state there can be fits the writer's buffer.
    @Test func longestState() {
        let session = Session(id: SessionID(high: .max, low: .max),
                              state: ChromeState(inset: -2.2250738585072014e-308, isRevealed: false, version: .max, lastAppliedSeq: .max),
                              tag: StateTag(bits: .max))
        #expect(StateWriter.json(session) == Self.reference(session))
    }

    @Test(arguments: [0, 1, 9, 10, 99, 100, 999, 1_000, 1_234_567, 1_764_615_066_000_001,
                     9_999_999_999_999_999_999, 10_000_000_000_000_000_000, UInt64.max])
    func versionsAndETags(_ version: UInt64) {
        let session = Session(id: .random(), state: ChromeState(inset: 47, isRevealed: true, version: version, lastAppliedSeq: 3),
                              tag: StateTag(bits: 0x00ab_cdef_0123))
        #expect(StateWriter.json(session) == Self.reference(session))
        #expect(SessionAPI.etag(session) == "\"\(version).00abcdef0123\"")
        #expect(EntityTag(Array("\(version).00abcdef0123".utf8)) == (version == 0 ? nil : session.entityTag), "read back as written")
    }

    /// Every count of digits, at both its ends, and every power of two: the
    /// writer tells a number's digits from its bit width.
    @Test func everyDigitCount() {
        var values: [UInt64] = [0, .max]
        var power: UInt64 = 1
        for _ in 0..<19 {
            power *= 10
            values += [power - 1, power, power + 1]
        }
        for bit in UInt64(0)..<64 { values += [1 << bit, (1 << bit) - 1] }
        for value in values {
            let session = Session(id: .random(), state: ChromeState(inset: 0, isRevealed: true, version: 1, lastAppliedSeq: value),
                                  tag: StateTag(bits: 1))
            #expect(StateWriter.json(session) == Self.reference(session), "\(value)")
        }
    }

    /// A session that chose a behaviour carries its five members after the
    /// others; floats as their own shortest text, whole numbers without a fraction.
    @Test func behaviourMembers() {
        let id = SessionID(high: 1, low: 2)
        let state = ChromeState(inset: 100, isRevealed: false, version: 9, lastAppliedSeq: 4, behavior: .exitUntilCollapsed,
                                snap: true, chosenCollapsibleHeight: 56.3, trackedHeightOffset: -56.3, lastOffset: nil)
        #expect(String(decoding: StateWriter.json(Session(id: id, state: state, tag: StateTag(bits: 1))), as: UTF8.self)
                == #"{"id":"\#(id)","inset":100,"isRevealed":false,"version":9,"lastSeq":4,"behavior":"exitUntilCollapsed","#
                + #""collapsibleHeight":56.3,"snap":true,"collapsedFraction":1,"heightOffset":-56.3}"#)
        let pinned = ChromeState(inset: 59, isRevealed: true, version: 2, lastAppliedSeq: nil, behavior: .pinned)
        #expect(String(decoding: StateWriter.json(Session(id: id, state: pinned, tag: StateTag(bits: 1))), as: UTF8.self)
                == #"{"id":"\#(id)","inset":59,"isRevealed":true,"version":2,"behavior":"pinned","#
                + #""collapsibleHeight":59,"snap":false,"collapsedFraction":0,"heightOffset":0}"#)
        let longest = ChromeState(inset: -2.2250738585072014e-308, isRevealed: false, version: .max, lastAppliedSeq: .max,
                                  behavior: .exitUntilCollapsed, snap: false, chosenCollapsibleHeight: Float.leastNormalMagnitude.nextUp,
                                  trackedHeightOffset: -Float.leastNormalMagnitude.nextUp, lastOffset: nil)
        #expect(StateWriter.json(Session(id: SessionID(high: .max, low: .max), state: longest, tag: StateTag(bits: .max))).count <= 300)
    }

    @Test func theLongestEntityTagFits() {
        let session = Session(id: .random(), state: ChromeState(inset: 0, isRevealed: true, version: .max, lastAppliedSeq: nil),
                              tag: StateTag(bits: .max))
        #expect(SessionAPI.etag(session) == "\"18446744073709551615.ffffffffffff\"")
    }
}

/// A state answer is written into the room the server lends (a keep-alive
/// client's answers then allocate nothing), and nothing of the answer
/// before it shows through.
@Suite struct StateAnswerBuffersTests {
    @Test func aStateAnswerIsWrittenIntoTheLentRoom() throws {
        let store = InMemorySessionStore()
        let api = SessionAPI(store: store, maxBodyBytes: 1024)
        let session = try store.create(inset: 0)
        var sent = CompleteResponse(status: 200, headers: HTTPHeaders([("X-Earlier", String(repeating: "x", count: 200))]),
                                body: Array(repeating: 65, count: 400))
        let bodyRoom = sent.body.capacity, headerRoom = sent.headers.byteCapacity
        var buffers = ResponseBuffers()
        buffers.keep(&sent, limit: 4096)
        let answer = api.respond(to: MicroHTTPDRequest(method: "GET", path: "/v1/sessions/\(session.id)"), reusing: &buffers)
        #expect(answer.status == 200)
        #expect(answer.body == StateWriter.json(session))
        #expect(answer.headers.fields.map(\.name) == ["Content-Type", "ETag"])
        #expect(answer.headers["ETag"] == SessionAPI.etag(session))
        #expect(answer.body.capacity == bodyRoom && answer.headers.byteCapacity == headerRoom, "written into the lent room")
    }
}
