import COpenSSL
import StrictJSON

/// Mints Ed25519-signed tokens (EdDSA, RFC 8037), so that a deployment with
/// no crypto of its own can hand apps scoped tokens. Every replica given the
/// same key mints tokens every other verifies; its public half is the JWK
/// served for others to verify with.
public final class TokenSigner: @unchecked Sendable {
    private let privateKey: OpaquePointer
    /// The public half as a JWK (`kty` OKP), `kid` included.
    public let publicJWK: [String: String]
    public let keyID: String

    /// From a PKCS #8 PEM Ed25519 key (`openssl genpkey -algorithm ed25519`).
    public convenience init(pem: String, keyID: String? = nil) throws(KeySetError) {
        var text = Array(pem.utf8)
        guard let key = text.withUnsafeMutableBufferPointer({ buffer in
            buffer.withMemoryRebound(to: CChar.self) { topchrome_private_key_from_pem($0.baseAddress, $0.count) }
        }) else { throw KeySetError("not a PEM private key") }
        text.removeAll()
        try self.init(key: key, keyID: keyID)
    }

    /// From the raw 32-byte seed (a JWK's `d`).
    public convenience init(seed: [UInt8], keyID: String? = nil) throws(KeySetError) {
        guard seed.count == 32, let key = topchrome_ed25519_private_key(seed) else { throw KeySetError("not a 32-byte Ed25519 seed") }
        try self.init(key: key, keyID: keyID)
    }

    private init(key: OpaquePointer, keyID: String?) throws(KeySetError) {
        var raw = [UInt8](repeating: 0, count: 32)
        guard topchrome_ed25519_raw_public_key(key, &raw) == 1 else {
            EVP_PKEY_free(key)
            throw KeySetError("not an Ed25519 key")
        }
        privateKey = key
        let x = Base64URL.encode(raw)
        // By default the key names itself (a prefix of its public half), so
        // replicas sharing a key agree on its kid without being told one.
        let id = keyID ?? "ed25519-" + String(x.prefix(16))
        self.keyID = id
        publicJWK = ["kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": id, "x": x]
    }

    deinit {
        EVP_PKEY_free(privateKey)
    }

    /// `{"keys":[…]}` with the public key: what `/.well-known/jwks.json` serves.
    public var jwks: [UInt8] {
        var writer = JSONWriter()
        writer.object { object in
            object.member("keys") { keys in
                keys.raw("[")
                keys.object { key in
                    for name in publicJWK.keys.sorted() { key.member(name) { $0.string(publicJWK[name]!) } }
                }
                keys.raw("]")
            }
        }
        return writer.bytes
    }

    /// A token for `sessionID` with `scope`, issued at `now` and good for `lifetime` seconds.
    public func token(sessionID: String?, scope: String, now: Int64, lifetime: Int64) -> String {
        var claims = JSONWriter()
        claims.object { object in
            object.member("exp") { $0.number(now + lifetime) }
            object.member("iat") { $0.number(now) }
            object.member("scope") { $0.string(scope) }
            if let sessionID { object.member("sid") { $0.string(sessionID) } }
        }
        var header = JSONWriter()
        header.object { object in
            object.member("alg") { $0.string("EdDSA") }
            object.member("kid") { $0.string(keyID) }
            object.member("typ") { $0.string("JWT") }
        }
        return sign(header: header.bytes, claims: claims.bytes)
    }

    /// Signs any header and claims as given (tests make odd tokens with it).
    public func sign(header: [UInt8], claims: [UInt8]) -> String {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        var signature = [UInt8](repeating: 0, count: 64)
        let bytes = Array(input.utf8)
        // Signing with a key OpenSSL accepted cannot fail but for memory; an empty signature then fails every check.
        if topchrome_ed25519_sign(privateKey, bytes, bytes.count, &signature) != 1 { signature = [] }
        return input + "." + Base64URL.encode(signature)
    }
}
