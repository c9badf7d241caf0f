import AccessTokens
import Foundation
import Testing
import TopChromeTesting

/// Access tokens over HTTP: a token reads or writes the one session it
/// names, until it expires; refusals are RFC 6750's (401 `invalid_token`,
/// 403 `insufficient_scope`) with problem bodies; the global token stays
/// the admin's. Runs on either store (`TOPCHROME_TEST_STORE`).
@Suite struct AccessTokenLiveTests {
    static let admin = "admin-token-0123456789abcdef0123456"
    let signer: TokenSigner
    let server: LiveServer

    init() throws {
        (signer, server) = try Self.serverTakingAppTokens()
    }

    /// The app's backend's signer, and a server with the admin's global
    /// token that takes the tokens it signs.
    static func serverTakingAppTokens() throws -> (TokenSigner, LiveServer) {
        let signer = try TokenSigner(seed: Array(repeating: 3, count: 32), keyID: "app-1")
        let server = try LiveServer { configuration in
            configuration.auth.token = admin
            configuration.tokens.keysJWKS = String(decoding: signer.jwks, as: UTF8.self)
        }
        return (signer, server)
    }

    /// The server's clock (`time()`), not `Date()`: `time()` reads the kernel's
    /// coarse clock, which turns to the next second up to a tick after the
    /// precise one, so a token's `exp` judged by `Date()` can still be ahead
    /// on the server (seen once under TSan: a 200 where exp had passed).
    static var now: Int64 { Int64(time(nil)) }

    func token(_ id: String?, _ scope: String, lifetime: Int64 = 600) -> String {
        signer.token(sessionID: id, scope: scope, now: Self.now, lifetime: lifetime)
    }

    func request(_ method: String, _ path: String, _ token: String, body: String? = nil) throws -> ReceivedResponse {
        let headers = [("Authorization", "Bearer \(token)")]
        if let body { return try server.client().json(method, path, body, headers: headers) }
        return try server.client().request(method, path, headers: headers)
    }

    func create() throws -> String {
        let response = try request("POST", "/v1/sessions", Self.admin, body: "")
        let id = try response.json["id"] as? String
        return try #require(id)
    }

    func expectRefusal(_ response: ReceivedResponse, _ status: Int, _ error: String, _ type: String,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(response.header("WWW-Authenticate")?.contains(#"error="\#(error)""#) == true, sourceLocation: sourceLocation)
        #expect(try response.json["type"] as? String == type, sourceLocation: sourceLocation)
    }

    static let invalidToken = "urn:topchrome:problem:invalid-token"
    static let insufficientScope = "urn:topchrome:problem:insufficient-scope"

    @Test func aReadTokenReadsItsSessionOnly() throws {
        let mine = try create(), other = try create()
        let reader = token(mine, "read")
        #expect(try request("GET", "/v1/sessions/\(mine)", reader).status == 200)
        #expect(try request("HEAD", "/v1/sessions/\(mine)/events", reader).status == 200)
        try expectRefusal(request("GET", "/v1/sessions/\(other)", reader), 403, "insufficient_scope", Self.insufficientScope)
        try expectRefusal(request("POST", "/v1/sessions/\(mine)/scroll", reader, body: #"{"contentOffsetY": 10, "seq": 1}"#),
                          403, "insufficient_scope", Self.insufficientScope)
        try expectRefusal(request("DELETE", "/v1/sessions/\(mine)", reader), 403, "insufficient_scope", Self.insufficientScope)
        try expectRefusal(request("POST", "/v1/sessions", reader, body: ""), 403, "insufficient_scope", Self.insufficientScope)
        #expect(try request("GET", "/v1/sessions/\(mine)", Self.admin).status == 200, "the global token stays the admin's")
    }

    @Test func aWriteTokenChangesItsSessionOnly() throws {
        let mine = try create(), other = try create()
        let writer = token(mine, "write")
        #expect(try request("POST", "/v1/sessions/\(mine)/scroll", writer, body: #"{"contentOffsetY": 10, "seq": 1}"#).status == 200)
        #expect(try request("GET", "/v1/sessions/\(mine)", writer).status == 200)
        try expectRefusal(request("POST", "/v1/sessions/\(other)/scroll", writer, body: #"{"contentOffsetY": 10, "seq": 1}"#),
                          403, "insufficient_scope", Self.insufficientScope)
        #expect(try request("DELETE", "/v1/sessions/\(mine)", writer).status == 204)
    }

    @Test func aCreateTokenCreates() throws {
        #expect(try request("POST", "/v1/sessions", token(nil, "create"), body: "").status == 201)
    }

    @Test func invalidTokensAre401InvalidToken() throws {
        let mine = try create()
        let expired = signer.token(sessionID: mine, scope: "read", now: Self.now - 3600, lifetime: 60)
        let other = try TokenSigner(seed: Array(repeating: 4, count: 32), keyID: "app-1")
        var flipped = Array(token(mine, "read").utf8)
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let unknownKey = try TokenSigner(seed: Array(repeating: 3, count: 32), keyID: "app-2")
        for bad in [expired, other.token(sessionID: mine, scope: "read", now: Self.now, lifetime: 60),
                    String(decoding: flipped, as: UTF8.self), unknownKey.token(sessionID: mine, scope: "read", now: Self.now, lifetime: 60),
                    "not.a.token"] {
            try expectRefusal(request("GET", "/v1/sessions/\(mine)", bad), 401, "invalid_token", Self.invalidToken)
        }
        // A word that is no JWT is the global token's failure, as before.
        #expect(try request("GET", "/v1/sessions/\(mine)", "wrong").status == 401)
    }

    /// Remembered tokens are found by their signature's bytes and then
    /// compared whole: another payload under a remembered signature is refused.
    @Test func aRememberedSignatureDoesNotPassAnotherPayload() throws {
        let mine = try create(), other = try create()
        let reader = token(mine, "read")
        #expect(try request("GET", "/v1/sessions/\(mine)", reader).status == 200)
        let parts = reader.split(separator: ".")
        let forged = token(other, "read").split(separator: ".")[1]
        try expectRefusal(request("GET", "/v1/sessions/\(other)", "\(parts[0]).\(forged).\(parts[2])"), 401, "invalid_token", Self.invalidToken)
        #expect(try request("GET", "/v1/sessions/\(mine)", reader).status == 200, "the remembered token still passes")
    }

    @Test func aRememberedTokenStillExpires() throws {
        // exp a few seconds ahead (room for a loaded machine between making
        // the token and its first use; two were once not enough), no leeway
        // forgiven: accepted now (and remembered), refused once the clock passes it.
        let strict = try LiveServer { configuration in
            configuration.auth.token = Self.admin
            configuration.tokens.keysJWKS = String(decoding: signer.jwks, as: UTF8.self)
            configuration.tokens.policy.leewaySeconds = 0
        }
        let created = try strict.client().json("POST", "/v1/sessions", "", headers: [("Authorization", "Bearer \(Self.admin)")])
        let id = try #require(created.json["id"] as? String)
        let expiresAt = Self.now + 5
        let short = signer.token(sessionID: id, scope: "read", now: expiresAt - 5, lifetime: 5)
        #expect(try strict.client().request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "Bearer \(short)")]).status == 200)
        while Self.now < expiresAt { usleep(50_000) }
        let late = try strict.client().request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "Bearer \(short)")])
        try expectRefusal(late, 401, "invalid_token", Self.invalidToken)
    }
}
