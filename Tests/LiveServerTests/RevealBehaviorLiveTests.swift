import Foundation
import RedisTestSupport
import Testing
import TopChromeServer
import TopChromeTesting

/// Reveal behaviours over loopback HTTP, on the memory store and on Redis:
/// chosen at creation, changed with `PUT …/behavior`, driven by scroll reports.
@Suite struct RevealBehaviorLiveTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case memory, redis
        var testDescription: String { rawValue }
    }

    private static let redis = Result { try RedisServer() }

    func server(_ store: Store) throws -> LiveServer {
        switch store {
        case .memory: return try LiveServer(memoryOnly: true)
        case .redis:
            let server = try LiveServer(store: .redis(.seeds([try Self.redis.get().node])),
                                        keyPrefix: "behaviors\(UInt64.random(in: 0...UInt64.max)):")
            guard server.waitUntilReady() else { throw TestClientError.malformed("the Redis-backed server did not become ready") }
            return server
        }
    }

    func create(_ body: String, on client: TestHTTPClient) throws -> (id: String, state: [String: Any]) {
        let response = try client.json("POST", "/v1/sessions", body)
        #expect(response.status == 201, "\(response.text)")
        let state = try response.json
        return (try #require(state["id"] as? String), state)
    }

    func scroll(_ id: String, _ report: String, on client: TestHTTPClient) throws -> [String: Any] {
        let response = try client.json("POST", "/v1/sessions/\(id)/scroll", report)
        #expect(response.status == 200, "\(response.text)")
        return try response.json
    }

    @Test(arguments: Store.allCases)
    func aSessionCreatedWithABehaviourCarriesItsMembers(_ store: Store) throws {
        let server = try server(store)
        let client = try server.client()
        let (id, created) = try create(#"{"inset":100,"behavior":"enterAlways","collapsibleHeight":56.3,"snap":true}"#, on: client)
        let expected = #"{"id":"\#(id)","inset":100,"isRevealed":true,"version":1,"behavior":"enterAlways","#
            + #""collapsibleHeight":56.3,"snap":true,"collapsedFraction":0,"heightOffset":0}"#
        #expect(try client.request("GET", "/v1/sessions/\(id)").text == expected)
        #expect(created["behavior"] as? String == "enterAlways")
        let plain = try create("", on: client)
        #expect(plain.state.count == 4, "a session that names no behaviour reads as before: \(plain.state)")
    }

    @Test(arguments: Store.allCases)
    func enterAlwaysTracksTheFingerAndSnaps(_ store: Store) throws {
        let server = try server(store)
        let client = try server.client()
        let (id, _) = try create(#"{"inset":100,"behavior":"enterAlways","snap":true}"#, on: client)
        _ = try scroll(id, #"{"contentOffsetY":300,"seq":1}"#, on: client)
        var state = try scroll(id, #"{"contentOffsetY":340,"seq":2}"#, on: client)
        #expect(state["heightOffset"] as? Double == -40)
        #expect(state["collapsedFraction"] as? Double == 0.4)
        #expect(state["isRevealed"] as? Bool == true)
        let version = try #require(state["version"] as? Int)
        state = try scroll(id, #"{"contentOffsetY":900,"seq":1}"#, on: client)
        #expect(state["version"] as? Int == version, "a stale report changes nothing")
        state = try scroll(id, #"{"contentOffsetY":370,"seq":3,"phase":"ended"}"#, on: client)
        #expect(state["heightOffset"] as? Double == -100, "70 of 100 collapsed settles hidden")
        #expect(state["isRevealed"] as? Bool == false)
        state = try scroll(id, #"[{"contentOffsetY":2000,"seq":4,"contentHeight":2400,"viewportHeight":800},{"contentOffsetY":1620,"seq":5,"contentHeight":2400,"viewportHeight":800}]"#, on: client)
        #expect(state["collapsedFraction"] as? Double == 1, "the rubber band at the bottom brings nothing back")
        state = try scroll(id, #"{"contentOffsetY":0,"seq":6}"#, on: client)
        #expect(state["collapsedFraction"] as? Double == 0, "at the top it shows fully")
    }

    @Test(arguments: Store.allCases)
    func putBehaviorChangesItUnderIfMatch(_ store: Store) throws {
        let server = try server(store)
        let client = try server.client()
        let id = try server.createSession(inset: 80)
        let hidden = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY":500}"#)
        let etag = try #require(hidden.header("ETag"))
        let first = try server.etag(id)
        #expect(first == etag)
        let put = try client.json("PUT", "/v1/sessions/\(id)/behavior", #"{"behavior":"exitUntilCollapsed","collapsibleHeight":40}"#,
                                  headers: [("If-Match", etag)])
        #expect(put.status == 200, "\(put.text)")
        let state = try put.json
        #expect(state["behavior"] as? String == "exitUntilCollapsed")
        #expect(state["collapsibleHeight"] as? Double == 40)
        #expect(state["heightOffset"] as? Double == -40, "it stays where it stood: hidden")
        #expect(state["snap"] as? Bool == false)
        #expect(put.etagVersion == hidden.etagVersion.map { $0 + 1 })
        let stale = try client.json("PUT", "/v1/sessions/\(id)/behavior", #"{"behavior":"pinned"}"#, headers: [("If-Match", etag)])
        #expect(stale.status == 412)
        let pinned = try client.json("PUT", "/v1/sessions/\(id)/behavior", #"{"behavior":"pinned"}"#)
        #expect(try pinned.json["isRevealed"] as? Bool == true)
        #expect(try pinned.json["collapsibleHeight"] as? Double == 80, "left out, the height is the inset again")
    }

    @Test(arguments: Store.allCases)
    func badBehaviourInputIsRefusedAndChangesNothing(_ store: Store) throws {
        let server = try server(store)
        let client = try server.client()
        let id = try server.createSession(inset: 80)
        let before = try client.request("GET", "/v1/sessions/\(id)").text
        for (body, member) in [(#"{"behavior":"sticky"}"#, "behavior"), (#"{"snap":true}"#, "behavior"),
                               (#"{"behavior":"pinned","collapsibleHeight":-1}"#, "collapsibleHeight"),
                               (#"{"behavior":"pinned","snap":"yes"}"#, "snap")] {
            let response = try client.json("PUT", "/v1/sessions/\(id)/behavior", body)
            #expect(response.status == 400, "\(body)")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect((try response.json["detail"] as? String)?.contains("\"\(member)\"") == true, "\(response.text)")
        }
        for body in [#"{"contentOffsetY":5,"phase":"over"}"#, #"{"contentOffsetY":5,"contentHeight":-3}"#] {
            let response = try client.json("POST", "/v1/sessions/\(id)/scroll", body)
            #expect(response.status == 400, "\(body)")
        }
        let created = try client.json("POST", "/v1/sessions", #"{"behavior":"hidesOnSwipe"}"#)
        #expect(created.status == 400)
        #expect(try client.request("GET", "/v1/sessions/\(id)").text == before)
        #expect(try client.json("PUT", "/v1/sessions/\(String(repeating: "0", count: 31))1/behavior", #"{"behavior":"pinned"}"#).status == 404)
        let wrongMethod = try client.json("POST", "/v1/sessions/\(id)/behavior", #"{"behavior":"pinned"}"#)
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "PUT")
    }

    /// A watcher hears each hundredth of the fraction once, and nothing for smaller moves.
    @Test(arguments: Store.allCases)
    func watchersHearTheFractionInHundredths(_ store: Store) throws {
        let server = try server(store)
        let client = try server.client()
        let (id, _) = try create(#"{"inset":100,"behavior":"enterAlways"}"#, on: client)
        _ = try scroll(id, #"{"contentOffsetY":300}"#, on: client)
        let small = try scroll(id, #"{"contentOffsetY":300.4}"#, on: client)
        #expect(small["version"] as? Int == 1)
        #expect(small["heightOffset"] as? Double == -0.4)
        let etag = try server.etag(id)
        let waiting = try server.client()
        try waiting.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(etag)\r\nPrefer: wait=5\r\n\r\n".utf8))
        _ = try scroll(id, #"{"contentOffsetY":302}"#, on: client)
        let heard = try waiting.readResponse()
        #expect(heard.status == 200)
        #expect(try heard.json["collapsedFraction"] as? Double == 0.02)
        #expect(heard.etagVersion == 2)
    }
}
