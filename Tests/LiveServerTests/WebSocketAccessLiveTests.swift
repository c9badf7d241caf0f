import AccessTokens
import Foundation
import Testing
import TopChromeTesting

/// Who may open the socket and send on it: the same bearer token and
/// access tokens as HTTP (`read` to follow, `write` for each change), the
/// token's `exp` ending the socket with 4401, and `--cors-origin` as the
/// check of a browser's `Origin`.
@Suite struct WebSocketAccessLiveTests {
    let signer: TokenSigner
    let server: LiveServer

    init() throws {
        (signer, server) = try AccessTokenLiveTests.serverTakingAppTokens()
    }

    func token(_ id: String, _ scope: String, lifetime: Int64 = 600) -> String {
        signer.token(sessionID: id, scope: scope, now: AccessTokenLiveTests.now, lifetime: lifetime)
    }

    func create() throws -> String {
        let response = try server.client().json("POST", "/v1/sessions", "", headers: [("Authorization", "Bearer \(AccessTokenLiveTests.admin)")])
        return try #require(try response.json["id"] as? String)
    }

    func open(_ id: String, _ token: String?) throws -> TestWebSocket {
        try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket",
                          headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    func refusal(_ id: String, _ token: String?) throws -> ReceivedResponse {
        try server.client().request("GET", "/v1/sessions/\(id)/socket",
                                    headers: WebSocketLiveTests.upgradeHeaders + (token.map { [("Authorization", "Bearer \($0)")] } ?? []))
    }

    @Test func theUpgradeNeedsATokenThatMayRead() throws {
        let id = try create()
        let other = try create()
        #expect(try refusal(id, nil).status == 401)
        #expect(try refusal(id, "not-a-token").status == 401)
        #expect(try refusal(id, token(other, "read")).status == 403)
        #expect(try open(id, AccessTokenLiveTests.admin).nextMessage()["type"] as? String == "state")
    }

    @Test func aReadTokenFollowsButMayNotChange() throws {
        let id = try create()
        let socket = try open(id, token(id, "read"))
        _ = try socket.next(ofType: "state")
        try socket.send(text: #"{"type":"inset","id":"w","body":{"inset":5}}"#)
        let problem = try #require(try socket.next(ofType: "answer")["problem"] as? [String: Any])
        #expect(problem["status"] as? Int == 403)
        #expect(problem["type"] as? String == AccessTokenLiveTests.insufficientScope)
        let writer = try open(id, token(id, "read write"))
        _ = try writer.next(ofType: "state")
        try writer.send(text: #"{"type":"inset","id":"w","body":{"inset":5}}"#)
        #expect(try writer.next(ofType: "answer")["etag"] != nil)
    }

    @Test func aSocketOpenedWithATokenClosesAtItsExpiry() throws {
        let id = try create()
        let socket = try open(id, token(id, "read", lifetime: 2))
        _ = try socket.next(ofType: "state")
        #expect(try socket.closeCode() == 4401)
    }

    @Test func anOriginNotListedIsRefused() throws {
        let server = try LiveServer { $0.http.corsOrigins = ["https://app.example.com"] }
        let id = try server.createSession()
        let foreign = try server.client().request("GET", "/v1/sessions/\(id)/socket",
                                                  headers: WebSocketLiveTests.upgradeHeaders + [("Origin", "https://evil.example")])
        #expect(foreign.status == 403)
        #expect(foreign.header("Content-Type") == "application/problem+json")
        let listed = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket", headers: [("Origin", "https://app.example.com")])
        #expect(try listed.nextMessage()["type"] as? String == "state")
    }
}
