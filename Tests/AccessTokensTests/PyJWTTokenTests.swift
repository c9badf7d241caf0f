import AccessTokens
import Foundation
import TopChromeTesting
import Testing

/// Tokens made by a well-known library, PyJWT with `cryptography` (installed
/// into the test tools' environment by `scripts/install-deps.sh --test`),
/// with keys it draws: what an app's backend would send.
@Suite struct PyJWTTokenTests {
    static let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/python/bin/python").path

    static var hasPyJWT: Bool { run("import jwt, cryptography") != nil }

    /// Fresh Ed25519, P-256 and HMAC keys; their JWKS on the first line, then one token per key.
    static let program = #"""
    import json, os, time, jwt
    from cryptography.hazmat.primitives.asymmetric import ed25519, ec
    now = int(time.time())
    claims = {"sid": "0123456789abcdef0123456789abcdef", "scope": "write", "iat": now, "nbf": now, "exp": now + 600,
              "aud": "chrome", "iss": "backend"}
    ed, p256, secret = ed25519.Ed25519PrivateKey.generate(), ec.generate_private_key(ec.SECP256R1()), os.urandom(32)
    def jwk(key, alg, kid):
        entry = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key))
        entry["kid"] = kid
        return entry
    keys = [jwk(ed.public_key(), "EdDSA", "ed"), jwk(p256.public_key(), "ES256", "ec"), jwk(secret, "HS256", "oct")]
    print(json.dumps({"keys": keys}))
    for key, alg, kid in [(ed, "EdDSA", "ed"), (p256, "ES256", "ec"), (secret, "HS256", "oct")]:
        print(jwt.encode(claims, key, algorithm=alg, headers={"kid": kid}))
    """#

    static func run(_ program: String) -> String? {
        guard FileManager.default.isExecutableFile(atPath: python) else { return nil }
        guard let (status, output) = try? Process.runToEnd(python, ["-c", program], keepingErrors: false) else { return nil }
        return status == 0 ? output : nil
    }

    @Test(.enabled(if: hasPyJWT, "needs PyJWT: scripts/install-deps.sh --test"))
    func tokensPyJWTMakesAreAccepted() throws {
        let lines = try #require(Self.run(Self.program)).split(separator: "\n").map(String.init)
        try #require(lines.count == 4)
        let verifier = TokenVerifier(keys: try KeySet(jwks: Array(lines[0].utf8)),
                                     policy: .init(audience: "chrome", issuer: "backend"))
        let now = Int64(Date().timeIntervalSince1970)
        for token in lines.dropFirst() {
            let access = try verifier.verify(Array(token.utf8), now: now)
            #expect(access.sessionID == "0123456789abcdef0123456789abcdef")
            #expect(access.scope == [.read, .write])
        }
    }
}
