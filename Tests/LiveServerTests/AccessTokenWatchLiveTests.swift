import AccessTokens
import Foundation
import Testing
import TopChromeTesting

/// What an access token opens ends with it: an event stream ends at `exp`
/// with `event: expired`, and a long-poll never waits past `exp`. On either
/// store (`TOPCHROME_TEST_STORE`).
@Suite struct AccessTokenWatchLiveTests {
    static let admin = AccessTokenLiveTests.admin
    let signer: TokenSigner
    let server: LiveServer

    init() throws {
        (signer, server) = try AccessTokenLiveTests.serverTakingAppTokens()
    }

    func create() throws -> String {
        let response = try server.client().json("POST", "/v1/sessions", "", headers: [("Authorization", "Bearer \(Self.admin)")])
        let id = try response.json["id"] as? String
        return try #require(id)
    }

    @Test func aStreamEndsAtItsTokensExpiryWithEventExpired() throws {
        let id = try create()
        let now = AccessTokenLiveTests.now
        let token = signer.token(sessionID: id, scope: "read", now: now, lifetime: 2)
        let stream = try EventStreamClient(port: server.port, sessionID: id, headers: [("Authorization", "Bearer \(token)")])
        #expect(stream.head.status == 200)
        #expect(try stream.nextState() != nil)
        var last: ServerSentEvent?
        while let event = try stream.next() {
            if event.comment == nil { last = event }  // heartbeats aside
        }
        // The server ended the stream, and its last word says why.
        #expect(last?.event == "expired")
        #expect(stream.ended)
        #expect(AccessTokenLiveTests.now >= now + 1, "not long before exp")
        // The global token's stream has no end of that kind.
        let global = try EventStreamClient(port: server.port, sessionID: id, headers: [("Authorization", "Bearer \(Self.admin)")])
        #expect(try global.nextState() != nil)
    }

    @Test func aLongPollNeverWaitsPastItsTokensExpiry() throws {
        let id = try create()
        let client = try server.client()
        let etag = try #require(try client.request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "Bearer \(Self.admin)")])
            .header("ETag"))
        let token = signer.token(sessionID: id, scope: "read", now: AccessTokenLiveTests.now, lifetime: 5)
        let answer = try client.request("GET", "/v1/sessions/\(id)", headers: [
            ("Authorization", "Bearer \(token)"), ("If-None-Match", etag), ("Prefer", "wait=50"),
        ])
        #expect(answer.status == 304)
        let applied = try #require(answer.header("Preference-Applied"))
        let seconds = try #require(Int(applied.dropFirst("wait=".count)))
        #expect(seconds >= 1 && seconds <= 5, "waited \(seconds) s, not the 50 asked")
    }
}
