import Foundation
import Testing
import TopChromeCore
import TopChromeServer
import TopChromeTesting

/// The edges of the contract (openapi.yaml) over loopback: malformed ids,
/// numbers at the limits, repeated members, HEAD of a stream, huge waits,
/// the bearer field's white space.
@Suite struct ContractEdgesLiveTests {
    let server: LiveServer

    init() throws {
        server = try LiveServer(memoryOnly: true) { $0.limits.maxWaitSeconds = 1 }
    }

    static let zero = SessionID(high: 0, low: 0)

    /// The all-zero id is refused by every parser, but a store can be made
    /// to hold it; a malformed id must not reach it (or anything else).
    func plantZeroSession() throws {
        try server.service.backend.memoryStore!.restore([Session(id: Self.zero, state: ChromeState(inset: 59), tag: server.service.backend.memoryStore!.epoch)])
    }

    var zeroState: ChromeState? { server.service.backend.memoryStore!.session(Self.zero)?.state }

    func expectNotFound(_ response: ReceivedResponse, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 404, "\(what): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", "\(what)", sourceLocation: sourceLocation)
    }

    /// The issue's two reproductions, as they were sent.
    @Test func malformedIdsDoNotReachTheZeroSession() throws {
        try plantZeroSession()
        let client = try server.client()
        expectNotFound(try client.json("POST", "/v1/sessions/NOT-AN-ID/scroll", #"{"contentOffsetY": 500}"#), "scroll")
        #expect(zeroState == ChromeState(inset: 59), "the zero session's island is still shown")
        expectNotFound(try client.request("DELETE", "/v1/sessions/zzz"), "DELETE")
        #expect(zeroState != nil, "the zero session is still there")
    }

    /// Every method and sub-resource, events and long-polls included.
    @Test(arguments: ["zzz", "NOT-AN-ID", String(repeating: "0", count: 32), String(repeating: "A", count: 32),
                      String(repeating: "a", count: 31), String(repeating: "a", count: 33)])
    func malformedIdIs404Everywhere(_ id: String) throws {
        try plantZeroSession()
        let known = try server.createSession()
        let client = try server.client()
        let path = "/v1/sessions/\(id)"
        expectNotFound(try client.request("GET", path), "GET")
        expectNotFound(try client.request("DELETE", path), "DELETE")
        expectNotFound(try client.request("GET", path, headers: [("If-None-Match", "\"1.000000000000\""), ("Prefer", "wait=1")]), "long-poll")
        expectNotFound(try client.json("PUT", path + "/inset", #"{"inset": 3}"#), "inset")
        expectNotFound(try client.json("POST", path + "/scroll", #"{"contentOffsetY": 500}"#), "scroll")
        expectNotFound(try client.json("POST", path + "/scroll", #"{"contentOffsetY": "far"}"#), "scroll, bad body")
        expectNotFound(try client.request("POST", path + "/disappear"), "disappear")
        expectNotFound(try client.request("GET", path + "/events"), "events")
        #expect(try client.request("HEAD", path).status == 404)
        #expect(try client.request("HEAD", path + "/events").status == 404)
        // A well-formed path with the wrong method still says which methods it takes.
        let wrong = try client.request("GET", path + "/scroll")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "POST")

        #expect(zeroState == ChromeState(inset: 59))
        #expect(try client.request("GET", "/v1/sessions/\(known)").etagVersion == 1)
        #expect(server.service.backend.memoryStore!.count == 2)
        #expect(server.service.watcherCount == 0)
    }

    /// Schema-valid halves whose sum overflows: far down hides, far past the
    /// top reveals, as the exact sum would compare with the threshold.
    @Test func anOverflowingSumIsFarPastAnEnd() throws {
        let id = try server.createSession()
        let client = try server.client()
        let down = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 1e308, "contentInsetTop": 1e308}"#)
        #expect(down.status == 200)
        #expect(try down.json["isRevealed"] as? Bool == false)
        let up = try client.json("POST", "/v1/sessions/\(id)/scroll",
                                 #"[{"contentOffsetY": 0}, {"contentOffsetY": -1.7976931348623157e308, "contentInsetTop": -1.7976931348623157e308}]"#)
        #expect(up.status == 200)
        #expect(try up.json["isRevealed"] as? Bool == true)
    }

    /// 400, and the session is as it was.
    @Test(arguments: [
        #"{"contentOffsetY": 5, "contentOffsetY": 500}"#,
        #"{"contentOffsetY": 500, "seq": 1e-400}"#,
        #"{"contentOffsetY": 500, "seq": 9007199254740991.00000001}"#,
        #"{"contentOffsetY": 500, "seq": 2.5}"#,
    ])
    func scrollBodiesOutsideTheContractAre400(_ body: String) throws {
        let id = try server.createSession()
        let client = try server.client()
        let response = try client.json("POST", "/v1/sessions/\(id)/scroll", body)
        #expect(response.status == 400, "\(response.text)")
        #expect(response.header("Content-Type") == "application/problem+json")
        let state = try client.request("GET", "/v1/sessions/\(id)").json
        #expect(state["isRevealed"] as? Bool == true)
        #expect(state["version"] as? Int == 1)
    }

    @Test func integerSpellingsOfSeqAreAccepted() throws {
        let id = try server.createSession()
        let client = try server.client()
        for (seq, offset) in [("5", 500), ("6.0", 0), ("7e0", 500), ("80e-1", 0), ("0.9E1", 500)] {
            let response = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset), "seq": \#(seq)}"#)
            #expect(response.status == 200, "seq \(seq): \(response.text)")
            #expect(try response.json["isRevealed"] as? Bool == (offset == 0), "seq \(seq) was applied")
        }
        let stale = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 9.0}"#)
        #expect(try stale.json["isRevealed"] as? Bool == false, "9.0 is 9, not newer than 0.9E1")
    }

    @Test func duplicateMembersAre400Everywhere() throws {
        let id = try server.createSession()
        let client = try server.client()
        #expect(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 5, "inset": 50}"#).status == 400)
        #expect(try client.json("POST", "/v1/sessions", #"{"inset": 5, "inset": 50}"#).status == 400)
        #expect(server.service.backend.memoryStore!.count == 1)
    }

    /// An endless stream has no length: HEAD states none (RFC 9110 §8.6),
    /// sends no body, and opens no watcher.
    @Test func headOfEventsStatesNoLength() throws {
        let id = try server.createSession()
        let client = try server.client()
        try client.send(raw: Array("HEAD /v1/sessions/\(id)/events HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let response = try client.readHead()
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/event-stream")
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(response.header("Connection")?.lowercased() == "close", "the end of an open length is the close")
        #expect(client.isClosedByServer(), "nothing follows the headers, not even a last chunk")
        #expect(server.service.watcherCount == 0)
    }

    /// More seconds than an Int holds is still a wait, capped at --max-wait.
    @Test func hugeWaitIsCappedNotIgnored() throws {
        let id = try server.createSession()
        let response = try server.client().request(
            "GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=99999999999999999999")])
        #expect(response.status == 304)
        #expect(response.header("Preference-Applied") == "wait=1")
    }

    @Test func bearerSchemeTakesOneOrMoreSpacesAndTrailingWhiteSpace() throws {
        let guarded = try LiveServer(memoryOnly: true) { $0.auth.token = "s3cret-token" }
        let client = try guarded.client()
        for field in ["Bearer  s3cret-token", "Bearer s3cret-token ", "Bearer s3cret-token\t", "bearer   s3cret-token \t "] {
            let response = try client.request("POST", "/v1/sessions", headers: [("Authorization", field)])
            #expect(response.status == 201, "\(field.debugDescription)")
        }
        for field in ["Bearer", "Bearer ", "Bearers3cret-token", "Bearer s3cret-token x", "Bearer\ts3cret-token"] {
            let response = try client.request("POST", "/v1/sessions", headers: [("Authorization", field)])
            #expect(response.status == 401, "\(field.debugDescription)")
        }
        #expect(guarded.service.backend.memoryStore!.count == 4)
    }
}
