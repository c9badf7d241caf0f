import AccessTokens
import Foundation
import Testing
import TopChromeTesting

/// The revocation cut-off (`--tokens-not-before-file`), moved without a
/// restart: on reload, tokens issued before it are refused even when
/// remembered, and what they opened ends — a stream with `event: expired`
/// (`"reason": "revoked"`), a long-poll with 401 `invalid_token`, a
/// WebSocket with 4401. Tokens
/// issued since go on. On either store (`TOPCHROME_TEST_STORE`).
@Suite struct RevocationCutOffLiveTests {
    static let admin = AccessTokenLiveTests.admin
    let signer: TokenSigner
    let server: LiveServer
    let cutOffFile: URL
    /// Issued well before the cut-off the tests move to, and at it.
    let old: Int64, new: Int64

    init() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cut-off-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        cutOffFile = folder.appendingPathComponent("not-before")
        new = AccessTokenLiveTests.now
        old = new - 600
        // A cut-off before either token: both are taken at start.
        try "\(old - 600)\n".write(to: cutOffFile, atomically: true, encoding: .utf8)
        signer = try TokenSigner(seed: Array(repeating: 3, count: 32), keyID: "app-1")
        let (jwks, path, start) = (String(decoding: signer.jwks, as: UTF8.self), cutOffFile.path, old - 600)
        server = try LiveServer { configuration in
            configuration.auth.token = Self.admin
            configuration.tokens.keysJWKS = jwks
            configuration.tokens.notBeforeFile = path
            configuration.tokens.policy.notBefore = start
        }
    }

    func token(_ id: String, issuedAt: Int64) -> String {
        signer.token(sessionID: id, scope: "read", now: issuedAt, lifetime: 3600)
    }

    func create() throws -> String {
        let response = try server.client().json("POST", "/v1/sessions", "", headers: [("Authorization", "Bearer \(Self.admin)")])
        return try #require(response.json["id"] as? String)
    }

    func get(_ id: String, _ token: String) throws -> ReceivedResponse {
        try server.client().request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "Bearer \(token)")])
    }

    func moveCutOff(to time: Int64) throws {
        try "\(time)\n".write(to: cutOffFile, atomically: true, encoding: .utf8)
        server.service.reload()
    }

    @Test func anOldTokensStreamEndsWhenTheCutOffPassesItsIssueAndANewTokensGoesOn() throws {
        let id = try create()
        let oldToken = token(id, issuedAt: old), newToken = token(id, issuedAt: new)
        // Used once, so the server remembers it verified.
        #expect(try get(id, oldToken).status == 200)
        let oldStream = try EventStreamClient(port: server.port, sessionID: id, headers: [("Authorization", "Bearer \(oldToken)")])
        let newStream = try EventStreamClient(port: server.port, sessionID: id, headers: [("Authorization", "Bearer \(newToken)")])
        #expect(try oldStream.nextState() != nil)
        #expect(try newStream.nextState() != nil)

        try moveCutOff(to: new - 60)

        var last: ServerSentEvent?
        while let event = try oldStream.next() {
            if event.comment == nil { last = event }
        }
        #expect(oldStream.ended)
        #expect(last?.event == "expired")
        #expect(last?.data.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] }?["reason"] == "revoked")
        let refused = try get(id, oldToken)
        #expect(refused.status == 401)
        #expect(try refused.json["type"] as? String == "urn:topchrome:problem:invalid-token")
        #expect(refused.header("WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
        // The new token's stream still hears changes, and the token still reads.
        let scroll = try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 90}"#,
                                              headers: [("Authorization", "Bearer \(Self.admin)")])
        #expect(scroll.status == 200)
        #expect(try newStream.nextState() != nil)
        #expect(try get(id, newToken).status == 200)
    }

    @Test func anOldTokensLongPollEndsWith401AndANewTokensWaitsOn() throws {
        let id = try create()
        let etag = try #require(try get(id, Self.admin).header("ETag"))
        func poll(_ token: String) throws -> TestHTTPClient {
            let client = try server.client()
            try client.send(raw: Array(("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
                    + "Prefer: wait=60\r\nIf-None-Match: \(etag)\r\n\r\n").utf8))
            return client
        }
        let oldPoll = try poll(token(id, issuedAt: old))
        let newPoll = try poll(token(id, issuedAt: new))
        #expect(eventually { server.service.watcherCount == 2 })

        try moveCutOff(to: new - 60)

        let refused = try oldPoll.readResponse()
        #expect(refused.status == 401)
        #expect(try refused.json["type"] as? String == "urn:topchrome:problem:invalid-token")
        #expect(eventually { server.service.watcherCount == 1 })
        let scroll = try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 90}"#,
                                              headers: [("Authorization", "Bearer \(Self.admin)")])
        #expect(scroll.status == 200)
        #expect(try newPoll.readResponse().status == 200, "the new token's poll waited for the change")
    }

    @Test func anOldTokensSocketClosesWith4401AndANewTokensGoesOn() throws {
        let id = try create()
        func open(_ token: String) throws -> TestWebSocket {
            let socket = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket",
                                           headers: [("Authorization", "Bearer \(token)")])
            _ = try socket.next(ofType: "state")
            return socket
        }
        let oldSocket = try open(token(id, issuedAt: old)), newSocket = try open(token(id, issuedAt: new))

        try moveCutOff(to: new - 60)

        #expect(try oldSocket.closeCode() == 4401)
        let scroll = try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 90}"#,
                                              headers: [("Authorization", "Bearer \(Self.admin)")])
        #expect(scroll.status == 200)
        #expect(try newSocket.next(ofType: "state")["state"] != nil, "the new token's socket hears the change")
    }

    @Test func anUnreadableCutOffKeepsTheOneInForce() throws {
        let id = try create()
        let oldToken = token(id, issuedAt: old)
        try moveCutOff(to: new - 60)
        #expect(try get(id, oldToken).status == 401)
        for bad in ["yesterday", "-5", ""] {
            try "\(bad)\n".write(to: cutOffFile, atomically: true, encoding: .utf8)
            server.service.reload()
            #expect(try get(id, oldToken).status == 401, "'\(bad)' kept the cut-off")
            #expect(try get(id, token(id, issuedAt: new)).status == 200)
        }
        // Moved back, older tokens are taken again: the file says what holds.
        try moveCutOff(to: old - 60)
        #expect(try get(id, oldToken).status == 200)
    }
}
