@testable import AccessTokens
import COpenSSL
import StrictJSON
import Testing

/// The known ways to forge or stretch a token, each refused for its own reason.
@Suite struct TokenAttackTests {
    static let now: Int64 = 1_800_000_000
    let signer: TokenSigner
    let verifier: TokenVerifier

    init() throws {
        signer = try TokenSigner(seed: Array(repeating: 7, count: 32), keyID: "k1")
        verifier = TokenVerifier(keys: try KeySet(jwks: signer.jwks), policy: .init(leewaySeconds: 30, audience: "chrome", issuer: "backend"))
    }

    func claims(_ extra: [String: String] = [:], exp: Int64 = now + 600) -> [UInt8] {
        var members = ["exp": "\(exp)", "sid": #""s1""#, "scope": #""read""#, "aud": #""chrome""#, "iss": #""backend""#]
        for (name, value) in extra { members[name] = value }
        let text = members.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",")
        return Array("{\(text)}".utf8)
    }

    func header(_ alg: String = "EdDSA", kid: String = "k1") -> [UInt8] {
        Array(#"{"alg":"\#(alg)","kid":"\#(kid)"}"#.utf8)
    }

    func verify(_ token: String) throws(TokenRefusal) -> AccessToken {
        try verifier.verify(Array(token.utf8), now: Self.now)
    }

    /// A token "signed" with HMAC-SHA-256 under `secret`, as an attacker who knows only public bytes would.
    static func hmacToken(header: [UInt8], claims: [UInt8], secret: [UInt8]) -> String {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        var mac = [UInt8](repeating: 0, count: 32)
        let data = Array(input.utf8)
        #expect(topchrome_hs256(secret, secret.count, data, data.count, &mac) == 1)
        return input + "." + Base64URL.encode(mac)
    }

    @Test func aGoodTokenAllowsItsSessionAndScopeOnly() throws {
        let access = try verify(signer.sign(header: header(), claims: claims()))
        #expect(access == AccessToken(sessionID: "s1", scope: .read, expiresAt: Self.now + 600, issuedAt: nil))
        #expect(access.allows(.read, on: "s1"))
        #expect(!access.allows(.read, on: "s2"))   // another session's id
        #expect(!access.allows(.write, on: "s1"))  // read scope writing
        #expect(!access.allows(.create, on: nil))
        let writer = try verify(signer.sign(header: header(), claims: claims(["scope": #""write""#])))
        #expect(writer.allows(.write, on: "s1") && writer.allows(.read, on: "s1"))
    }

    @Test func algNoneIsRefused() {
        let token = Base64URL.encode(Array(#"{"alg":"none","kid":"k1"}"#.utf8)) + "." + Base64URL.encode(claims()) + "."
        #expect(throws: TokenRefusal.algorithmMismatch) { try verify(token) }
    }

    @Test(arguments: ["ES256", "HS256", "RS256", "EdDSA "])
    func anAlgOtherThanTheKeysIsRefused(alg: String) {
        #expect(throws: TokenRefusal.algorithmMismatch) { try verify(signer.sign(header: header(alg), claims: claims())) }
    }

    @Test func hs256KeyedWithThePublicKeyIsRefused() throws {
        // The classic confusion: a verifier that let the token choose HMAC would key it with the public key's bytes.
        let x = try #require(signer.publicJWK["x"])
        let publicBytes = try #require(Base64URL.decode(x.utf8))
        for secret in [publicBytes, Array(signer.jwks)] {
            let token = Self.hmacToken(header: header("HS256"), claims: claims(), secret: secret)
            #expect(throws: TokenRefusal.algorithmMismatch) { try verify(token) }
        }
    }

    @Test func aWrongKidIsRefused() {
        #expect(throws: TokenRefusal.unknownKey) { try verify(signer.sign(header: header(kid: "k2"), claims: claims())) }
    }

    @Test func anotherKeysSignatureIsRefused() throws {
        let other = try TokenSigner(seed: Array(repeating: 8, count: 32), keyID: "k1")
        #expect(throws: TokenRefusal.badSignature) { try verify(other.sign(header: header(), claims: claims())) }
    }

    @Test func timesAreHonouredWithTheLeeway() throws {
        #expect(throws: TokenRefusal.expired) { try verify(signer.sign(header: header(), claims: claims(exp: Self.now - 31))) }
        _ = try verify(signer.sign(header: header(), claims: claims(exp: Self.now - 29)))
        #expect(throws: TokenRefusal.notYetValid) { try verify(signer.sign(header: header(), claims: claims(["nbf": "\(Self.now + 31)"]))) }
        _ = try verify(signer.sign(header: header(), claims: claims(["nbf": "\(Self.now + 29)"])))
        #expect(throws: TokenRefusal.notYetValid) { try verify(signer.sign(header: header(), claims: claims(["iat": "\(Self.now + 31)"]))) }
        #expect(throws: TokenRefusal.malformed("'exp' is required")) {
            try verify(signer.sign(header: header(), claims: Array(#"{"sid":"s1","scope":"read","aud":"chrome","iss":"backend"}"#.utf8)))
        }
        #expect(TokenVerifier.Policy(leewaySeconds: 3600).leewaySeconds == 60)
    }

    @Test func wrongAudienceOrIssuerIsRefused() throws {
        #expect(throws: TokenRefusal.wrongAudience) { try verify(signer.sign(header: header(), claims: claims(["aud": #""other""#]))) }
        _ = try verify(signer.sign(header: header(), claims: claims(["aud": #"["other","chrome"]"#])))
        #expect(throws: TokenRefusal.wrongIssuer) { try verify(signer.sign(header: header(), claims: claims(["iss": #""mallory""#]))) }
    }

    @Test func tokensIssuedBeforeTheCutOffAreRefused() throws {
        let cautious = TokenVerifier(keys: verifier.keys, policy: .init(audience: "chrome", issuer: "backend", notBefore: Self.now - 10))
        let old = signer.sign(header: header(), claims: claims(["iat": "\(Self.now - 11)"]))
        let undated = signer.sign(header: header(), claims: claims())
        let fresh = signer.sign(header: header(), claims: claims(["iat": "\(Self.now - 10)"]))
        #expect(throws: TokenRefusal.revoked) { try cautious.verify(Array(old.utf8), now: Self.now) }
        #expect(throws: TokenRefusal.revoked) { try cautious.verify(Array(undated.utf8), now: Self.now) }
        _ = try cautious.verify(Array(fresh.utf8), now: Self.now)
    }

    @Test func malformedTokensAreRefusedAsMalformed() {
        let good = signer.sign(header: header(), claims: claims())
        for token in ["", "a.b", "a.b.c.d", good + "=", "e30.e30.", good.replacingFirstDot(), String(repeating: "a", count: 5000)] {
            #expect {
                try verify(token)
            } throws: { error in
                if case .malformed = error as? TokenRefusal { return true }
                return false
            }
        }
        // A header with a doubled name: which 'alg' counts is not defined, so neither does.
        let doubled = Base64URL.encode(Array(#"{"alg":"EdDSA","alg":"none","kid":"k1"}"#.utf8)) + "." + Base64URL.encode(claims()) + ".AA"
        #expect(throws: TokenRefusal.malformed("the header is not a JSON object")) { try verify(doubled) }
    }

    @Test func keySetsThatCannotBeTrustedAreRefused() {
        for jwks in [#"{"keys":[]}"#, #"{"keys":[{"kty":"oct","k":"c2hvcnQ"}]}"#,
                     #"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#,
                     #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"HS256"}]}"#,
                     #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]}"#,
                     #"{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#,
                     #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","use":"enc"}]}"#,
                     "[]", "not json"] {
            #expect(throws: KeySetError.self, "\(jwks)") { try KeySet(jwks: Array(jwks.utf8)) }
        }
    }
}

private extension String {
    /// The token with its first dot gone: two parts, not three.
    func replacingFirstDot() -> String {
        guard let dot = firstIndex(of: ".") else { return self }
        return String(self[..<dot]) + String(self[index(after: dot)...])
    }
}
