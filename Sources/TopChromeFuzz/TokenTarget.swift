import AccessTokens
import StrictJSON

/// `token`: the access-token reader on arbitrary bytes, read both as a
/// token and as the claims of a token signed here.
///
/// Invariants: verifying never crashes and is deterministic; a token
/// accepted is in canonical base64url in every part (one token, one
/// spelling, as the cache by bytes needs); base64url decoding reads back
/// only what encoding writes; and claims signed with the target's own key
/// are accepted exactly when they are a JSON object with a numeric `exp`
/// in the future and no member of the wrong type.
enum TokenTarget {
    static let target = FuzzTarget(
        name: "token",
        summary: "TokenVerifier on raw bytes: determinism, canonical base64url, signed claims accepted iff well-formed",
        run: run)

    /// Far from any `exp` the seed corpus holds (4,000,000,000), and fixed, so that runs repeat.
    static let now: Int64 = 1_800_000_000

    // Seeds fixed, so the corpus' tokens (made with the same seeds) verify.
    static let signer = try! TokenSigner(seed: Array(repeating: 9, count: 32), keyID: "fuzz")
    static let verifier = TokenVerifier(keys: try! KeySet(jwks: signer.jwks))

    static func run(_ bytes: [UInt8]) {
        let input = printable(bytes)
        let first = Result { () throws(TokenRefusal) in try verifier.verify(bytes, now: now) }
        let second = Result { () throws(TokenRefusal) in try verifier.verify(bytes, now: now) }
        switch (first, second) {
        case let (.success(a), .success(b)): check(a == b, "verifying twice gave different grants for \(input)")
        case let (.failure(a), .failure(b)): check(a == b, "verifying twice gave different refusals for \(input)")
        default: fail("verifying twice gave a grant once and a refusal once for \(input)")
        }
        if case .success = first {
            for part in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
                let decoded = Base64URL.decode(part)
                check(decoded.map { Array(Base64URL.encode($0).utf8) } == Array(part), "an accepted token is not canonical: \(input)")
            }
        }
        if let decoded = Base64URL.decode(bytes) {
            check(Array(Base64URL.encode(decoded).utf8) == bytes, "base64url read a non-canonical spelling: \(input)")
        }
        check(Base64URL.decode(Base64URL.encode(bytes).utf8) == bytes, "base64url did not round-trip \(input)")

        let token = signer.sign(header: Array(#"{"alg":"EdDSA","kid":"fuzz"}"#.utf8), claims: bytes)
        let signed = Result { () throws(TokenRefusal) in try verifier.verify(Array(token.utf8), now: now) }
        let accepted = (try? signed.get()) != nil
        check(accepted == wellFormed(bytes), "signed claims were \(accepted ? "accepted" : "refused: \(signed)") against the model: \(input)")
    }

    /// The model: what claims a correctly signed token must have to pass the default policy.
    static func wellFormed(_ claims: [UInt8]) -> Bool {
        guard case let .object(members)? = try? JSONReader.parse(claims) else { return false }
        func time(_ name: String) -> Int64?? {
            guard let value = members[name] else { return .some(nil) }
            guard case let .number(seconds, _) = value, seconds.isFinite, abs(seconds) < 1e15 else { return nil }
            return .some(Int64(seconds.rounded(.down)))
        }
        guard let exp = time("exp"), let nbf = time("nbf"), let iat = time("iat"), let expiry = exp else { return false }
        let leeway = TokenVerifier.Policy().leewaySeconds
        guard now < expiry + leeway, (nbf ?? .min) <= now + leeway, (iat ?? .min) <= now + leeway else { return false }
        for name in ["sid", "scope"] {
            if let value = members[name], case .string = value {} else if members[name] != nil { return false }
        }
        return true
    }
}
