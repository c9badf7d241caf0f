import AccessTokens
import Foundation
import Testing
import TopChromeTesting

/// Tokens the server mints (`--token-signing-key`): the global token asks
/// for one, for a session that exists, with a scope and a lifetime no longer
/// than `--token-max-ttl`; the token then does what any access token does,
/// here and on a replica given the same key, and verifies against the
/// public key served at `/.well-known/jwks.json`. Runs on either store
/// (`TOPCHROME_TEST_STORE`).
@Suite struct TokenMintingLiveTests {
    static let admin = "admin-token-0123456789abcdef0123456"
    static let maxLifetime = 600
    let folder: URL
    let keyFile: URL
    let server: LiveServer

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("minting-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        keyFile = folder.appendingPathComponent("signing.pem")
        let pem = Self.pem(seed: 7)
        try pem.write(to: keyFile, atomically: true, encoding: .utf8)
        let path = keyFile.path
        server = try LiveServer { configuration in
            configuration.auth.token = Self.admin
            configuration.tokens.signingKeyPEM = pem
            configuration.tokens.signingKeyFile = path
            configuration.tokens.maxLifetimeSeconds = Self.maxLifetime
        }
    }

    /// An Ed25519 private key as `openssl genpkey -algorithm ed25519` writes
    /// it (PKCS #8: a fixed prefix, then the 32-byte seed), here of one repeated byte.
    static func pem(seed byte: UInt8) -> String {
        let der: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
            + Array(repeating: byte, count: 32)
        return "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    func request(_ method: String, _ path: String, _ token: String?, body: String? = nil,
                 on server: LiveServer? = nil) throws -> ReceivedResponse {
        let headers = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        let client = try (server ?? self.server).client()
        if let body { return try client.json(method, path, body, headers: headers) }
        return try client.request(method, path, headers: headers)
    }

    func create() throws -> String {
        let id = try request("POST", "/v1/sessions", Self.admin, body: "").json["id"] as? String
        return try #require(id)
    }

    func mint(_ id: String, _ body: String, with credential: String? = admin) throws -> ReceivedResponse {
        try request("POST", "/v1/sessions/\(id)/tokens", credential, body: body)
    }

    func token(_ id: String, _ scope: String) throws -> String {
        let response = try mint(id, #"{"scope": "\#(scope)"}"#)
        #expect(response.status == 200)
        return try #require(response.json["token"] as? String)
    }

    func expectProblem(_ response: ReceivedResponse, _ status: Int, _ type: String = "about:blank",
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(try response.json["type"] as? String == type, sourceLocation: sourceLocation)
    }

    @Test func aMintedTokenDoesWhatItsScopeSaysToItsSessionOnly() throws {
        let mine = try create(), other = try create()
        let reader = try token(mine, "read"), writer = try token(mine, "write")
        let scroll = #"{"contentOffsetY": 10, "seq": 1}"#
        #expect(try request("GET", "/v1/sessions/\(mine)", reader).status == 200)
        try expectProblem(request("POST", "/v1/sessions/\(mine)/scroll", reader, body: scroll), 403,
                          "urn:topchrome:problem:insufficient-scope")
        try expectProblem(request("GET", "/v1/sessions/\(other)", reader), 403, "urn:topchrome:problem:insufficient-scope")
        #expect(try request("POST", "/v1/sessions/\(mine)/scroll", writer, body: scroll).status == 200)
        try expectProblem(request("POST", "/v1/sessions/\(other)/scroll", writer, body: scroll), 403,
                          "urn:topchrome:problem:insufficient-scope")
    }

    @Test func theAnswerIsNotStoredAndExpiresAtTheCap() throws {
        let id = try create()
        // time(), the server's clock, is the kernel's coarse one: it may be a tick behind Date's.
        let before = Self.now - 1
        let response = try mint(id, #"{"scope": "read"}"#)
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "no-store")
        let expiresAt = try #require(response.json["expiresAt"] as? Int)
        #expect((before + Int64(Self.maxLifetime))...(Self.now + Int64(Self.maxLifetime)) ~= Int64(expiresAt))
        let short = try mint(id, #"{"scope": "write", "ttl": 5}"#)
        let shortExpiry = try #require(short.json["expiresAt"] as? Int)
        #expect((before + 5)...(Self.now + 5) ~= Int64(shortExpiry))
    }

    @Test func aLongerTTLThanTheCapGetsTheCap() throws {
        let id = try create()
        let before = Self.now - 1
        for ttl in ["\(Self.maxLifetime + 1)", "86400", "1e300"] {
            let response = try mint(id, #"{"scope": "read", "ttl": \#(ttl)}"#)
            #expect(response.status == 200)
            let expiresAt = try #require(response.json["expiresAt"] as? Int)
            #expect((before + Int64(Self.maxLifetime))...(Self.now + Int64(Self.maxLifetime)) ~= Int64(expiresAt))
            let token = try #require(response.json["token"] as? String)
            #expect(try request("GET", "/v1/sessions/\(id)", token).status == 200)
        }
    }

    @Test func badAsksAre400Problems() throws {
        let id = try create()
        for body in [#"{"scope": "read", "ttl": -5}"#, #"{"scope": "read", "ttl": 0}"#, #"{"scope": "read", "ttl": 1.5}"#,
                     #"{"scope": "read", "ttl": "60"}"#, #"{"scope": "create"}"#, #"{"ttl": 60}"#,
                     #"{"scope": "read", "sid": "\#(id)"}"#, "[]", ""] {
            try expectProblem(mint(id, body), 400)
        }
    }

    @Test func onlyTheGlobalTokenMintsAndOnlyForASessionThatExists() throws {
        let id = try create()
        let writer = try token(id, "write")
        let none = try mint(id, #"{"scope": "read"}"#, with: nil)
        #expect(none.status == 401)
        try expectProblem(mint(id, #"{"scope": "read"}"#, with: writer), 403, "urn:topchrome:problem:insufficient-scope")
        try expectProblem(mint(String(repeating: "ab", count: 16), #"{"scope": "read"}"#), 404)
        try expectProblem(mint("not-an-id", #"{"scope": "read"}"#), 404)
        #expect(try request("GET", "/v1/sessions/\(id)/tokens", Self.admin).status == 405)
    }

    @Test func theKeySetIsServedAndVerifiesMintedTokens() throws {
        let id = try create()
        let minted = try token(id, "write")
        let jwks = try request("GET", "/.well-known/jwks.json", nil)
        #expect(jwks.status == 200)
        #expect(jwks.header("Cache-Control") == "public, max-age=300")
        #expect(jwks.header("Content-Type") == "application/json")
        let verifier = TokenVerifier(keys: try KeySet(jwks: jwks.body))
        let access = try verifier.verify(Array(minted.utf8), now: Self.now)
        #expect(access.sessionID == id)
        #expect(access.scope.contains(.write))
        #expect(!String(decoding: jwks.body, as: UTF8.self).contains("\"d\""), "the private half is never served")
    }

    @Test func aReplicaGivenTheSameKeyAcceptsTheToken() throws {
        let pem = Self.pem(seed: 7)
        let replica = try LiveServer { configuration in
            configuration.auth.token = Self.admin
            configuration.tokens.signingKeyPEM = pem
        }
        let stranger = try LiveServer { configuration in
            configuration.auth.token = Self.admin
            configuration.tokens.signingKeyPEM = Self.pem(seed: 8)
        }
        let id = try create()
        let reader = try token(id, "read")
        // Replicas on one Redis share the session; on memory stores each has its own,
        // and a token that verified meets an unknown session (404), not a refusal (401).
        let there = try request("GET", "/v1/sessions/\(id)", reader, on: replica).status
        #expect(there == 200 || there == 404)
        try expectProblem(request("GET", "/v1/sessions/\(id)", reader, on: stranger), 401, "urn:topchrome:problem:invalid-token")
    }

    @Test func withoutASigningKeyNothingIsMinted() throws {
        let plain = try LiveServer { configuration in configuration.auth.token = Self.admin }
        let id = try #require(try request("POST", "/v1/sessions", Self.admin, body: "", on: plain).json["id"] as? String)
        try expectProblem(request("POST", "/v1/sessions/\(id)/tokens", Self.admin, body: #"{"scope": "read"}"#, on: plain), 404)
        try expectProblem(request("GET", "/.well-known/jwks.json", nil, on: plain), 404)
        // The paths are the API's either way: a method they never take is 405, as with a key.
        for (method, path) in [("TRACE", "/.well-known/jwks.json"), ("POST", "/.well-known/jwks.json"),
                               ("GET", "/v1/sessions/\(id)/tokens")] {
            let refused = try request(method, path, Self.admin, on: plain)
            try expectProblem(refused, 405)
            #expect(refused.header("Allow") != nil)
        }
    }

    @Test func aRotatedSigningKeyTakesEffectOnReload() throws {
        let id = try create()
        let old = try token(id, "read")
        let oldKeys = try request("GET", "/.well-known/jwks.json", nil).body
        try Self.pem(seed: 9).write(to: keyFile, atomically: true, encoding: .utf8)
        server.service.reload()
        try expectProblem(request("GET", "/v1/sessions/\(id)", old), 401, "urn:topchrome:problem:invalid-token")
        let new = try token(id, "read")
        #expect(try request("GET", "/v1/sessions/\(id)", new).status == 200)
        let newKeys = try request("GET", "/.well-known/jwks.json", nil).body
        #expect(newKeys != oldKeys)
        #expect(throws: TokenRefusal.self) { try TokenVerifier(keys: KeySet(jwks: oldKeys)).verify(Array(new.utf8), now: Self.now) }
    }
}
