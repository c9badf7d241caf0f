@testable import AccessTokens
import StrictJSON
import Testing

/// The published examples: a verifier that disagrees with them verifies something else.
@Suite struct RFCVectorTests {
    static func key(_ json: String) throws -> VerificationKey {
        try VerificationKey(jwk: JSONReader.parse(Array(json.utf8)))
    }

    static func parts(_ token: String) -> (input: ArraySlice<UInt8>, signature: [UInt8]) {
        let bytes = Array(token.utf8)
        let lastDot = bytes.lastIndex(of: UInt8(ascii: "."))!
        return (bytes[..<lastDot], Base64URL.decode(bytes[(lastDot + 1)...])!)
    }

    // RFC 8037 appendix A.4: Ed25519 over "Example of Ed25519 signing".
    static let ed25519Key = #"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#
    static let ed25519Seed = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
    static let ed25519JWS = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
        + ".hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

    // RFC 7515 appendix A.1 (HS256) and A.3 (ES256); both carry exp 1300819380 and iss "joe".
    static let hs256Key = #"{"kty":"oct","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"}"#
    static let hs256JWS = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let es256Key = #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#
    static let es256JWS = "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        + ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let vectorTime: Int64 = 1_300_819_000

    @Test func ed25519SignatureOfRFC8037Verifies() throws {
        let (input, signature) = Self.parts(Self.ed25519JWS)
        #expect(try Self.key(Self.ed25519Key).verifies(signature, of: input))
    }

    @Test func signingWithRFC8037SeedGivesItsSignature() throws {
        // Ed25519 is deterministic: the same seed and message give the RFC's signature.
        let signer = try TokenSigner(seed: Base64URL.decode(Self.ed25519Seed.utf8)!)
        let header = Array(#"{"alg":"EdDSA"}"#.utf8), message = Array("Example of Ed25519 signing".utf8)
        #expect(signer.sign(header: header, claims: message) == Self.ed25519JWS)
        #expect(signer.publicJWK["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
    }

    @Test(arguments: [(hs256Key, hs256JWS, SigningAlgorithm.hs256), (es256Key, es256JWS, .es256)])
    func rfc7515TokenVerifiesWithItsClaims(key: String, token: String, algorithm: SigningAlgorithm) throws {
        let verificationKey = try Self.key(key)
        #expect(verificationKey.algorithm == algorithm)
        let verifier = TokenVerifier(keys: KeySet(keys: [verificationKey]), policy: .init(issuer: "joe"))
        let access = try verifier.verify(Array(token.utf8), now: Self.vectorTime)
        #expect(access.expiresAt == 1_300_819_380)
        #expect(access.scope == [])
        #expect(throws: TokenRefusal.expired) { try verifier.verify(Array(token.utf8), now: 1_300_819_380 + 31) }
    }

    @Test(arguments: [hs256JWS, es256JWS, ed25519JWS])
    func everyFlippedByteIsRefused(token: String) throws {
        let keys = [try Self.key(Self.hs256Key), try Self.key(Self.es256Key), try Self.key(Self.ed25519Key)]
        let (input, signature) = Self.parts(token)
        let key = try #require(keys.first { $0.verifies(signature, of: input) })
        let bytes = Array(token.utf8)
        for index in bytes.indices where bytes[index] != UInt8(ascii: ".") {
            var tampered = bytes
            tampered[index] ^= 0x01
            let lastDot = tampered.lastIndex(of: UInt8(ascii: "."))!
            // A flip either leaves text that is not base64url, or a signature that does not verify.
            guard let signature = Base64URL.decode(tampered[(lastDot + 1)...]),
                  tampered[..<lastDot].split(separator: UInt8(ascii: ".")).allSatisfy({ Base64URL.decode($0) != nil }) else { continue }
            #expect(!key.verifies(signature, of: tampered[..<lastDot]), "byte \(index)")
        }
    }

    @Test func base64URLReadsOnlyCanonicalText() {
        #expect(Base64URL.decode("QQ".utf8) == [0x41])
        #expect(Base64URL.decode("QR".utf8) == nil)  // same byte, stray low bits
        #expect(Base64URL.decode("QQ==".utf8) == nil)
        #expect(Base64URL.decode("Q".utf8) == nil)
        #expect(Base64URL.decode("a+b/".utf8) == nil)
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes).utf8) == bytes)
        }
    }
}
