import StrictJSON

/// Checks a compact JWS (RFC 7515 §7.1) bearing JWT claims (RFC 7519) and
/// says what it allows. The key is chosen by `kid`; the algorithm is the
/// key's, and the header's `alg` must merely agree with it.
public struct TokenVerifier: Sendable {
    public struct Policy: Sendable, Equatable {
        /// Seconds of clock difference forgiven around `exp`, `nbf` and `iat` (at most 60).
        public var leewaySeconds: Int64
        /// When set, `aud` must be or contain it.
        public var audience: String?
        /// When set, `iss` must be it.
        public var issuer: String?
        /// Tokens issued (`iat`) before this, in seconds since 1970, are refused,
        /// and so are tokens without `iat` while it is set.
        public var notBefore: Int64?

        public static let maximumLeeway: Int64 = 60

        public init(leewaySeconds: Int64 = 30, audience: String? = nil, issuer: String? = nil, notBefore: Int64? = nil) {
            self.leewaySeconds = min(max(leewaySeconds, 0), Self.maximumLeeway)
            self.audience = audience
            self.issuer = issuer
            self.notBefore = notBefore
        }

        /// Whether the cut-off refuses a token issued at `issuedAt` (nil: no `iat`);
        /// also what ends the watches such a token opened when the cut-off moves.
        public func revokes(issuedAt: Int64?) -> Bool {
            guard let notBefore else { return false }
            return (issuedAt ?? Int64.min) < notBefore
        }
    }

    /// Longest token read, in bytes: a header line holds far less, and a
    /// signature is not checked over an unbounded input.
    public static let maximumLength = 4096

    public let keys: KeySet
    public let policy: Policy

    public init(keys: KeySet, policy: Policy = Policy()) {
        self.keys = keys
        self.policy = policy
    }

    /// `now`: seconds since 1970.
    public func verify(_ token: some Collection<UInt8>, now: Int64) throws(TokenRefusal) -> AccessToken {
        let parts = try CompactJWS(Array(token))
        guard let key = keys.key(named: parts.keyID) else { throw .unknownKey }
        guard parts.algorithm == key.algorithm.rawValue else { throw .algorithmMismatch }
        guard key.verifies(parts.signature, of: parts.signingInput) else { throw .badSignature }
        return try claims(parts.claims, now: now)
    }

    private func claims(_ claims: [String: JSONValue], now: Int64) throws(TokenRefusal) -> AccessToken {
        guard let expiresAt = try Self.time(claims, "exp") else { throw .malformed("'exp' is required") }
        guard now < expiresAt + policy.leewaySeconds else { throw .expired }
        if let notBefore = try Self.time(claims, "nbf"), now + policy.leewaySeconds < notBefore { throw .notYetValid }
        let issuedAt = try Self.time(claims, "iat")
        if let issuedAt, now + policy.leewaySeconds < issuedAt { throw .notYetValid }
        if policy.revokes(issuedAt: issuedAt) { throw .revoked }
        if let issuer = policy.issuer {
            guard case .string(issuer)? = claims["iss"] else { throw .wrongIssuer }
        }
        if let audience = policy.audience {
            switch claims["aud"] {
            case .string(audience)?: break
            case let .array(audiences)? where audiences.contains(.string(audience)): break
            default: throw .wrongAudience
            }
        }
        let sessionID = try Self.string(claims, "sid")
        let scope = AccessToken.Scope(claim: try Self.string(claims, "scope") ?? "")
        return AccessToken(sessionID: sessionID, scope: scope, expiresAt: expiresAt, issuedAt: issuedAt)
    }

    /// A NumericDate (RFC 7519 §2): seconds, possibly with a fraction, which is dropped.
    private static func time(_ claims: [String: JSONValue], _ name: String) throws(TokenRefusal) -> Int64? {
        guard let value = claims[name] else { return nil }
        guard case let .number(seconds, _) = value, seconds.isFinite, abs(seconds) < 1e15 else {
            throw .malformed("'\(name)' is not a number of seconds")
        }
        return Int64(seconds.rounded(.down))
    }

    private static func string(_ claims: [String: JSONValue], _ name: String) throws(TokenRefusal) -> String? {
        guard let value = claims[name] else { return nil }
        guard case let .string(text) = value else { throw .malformed("'\(name)' is not a string") }
        return text
    }
}

/// A compact JWS taken apart: `header.payload.signature`, each base64url,
/// the header and payload JSON objects (JSONReader refuses doubled names).
struct CompactJWS {
    let algorithm: String
    let keyID: String?
    let claims: [String: JSONValue]
    /// `header.payload` as sent: what the signature signs.
    let signingInput: ArraySlice<UInt8>
    let signature: [UInt8]

    init(_ token: [UInt8]) throws(TokenRefusal) {
        guard token.count <= TokenVerifier.maximumLength else { throw .malformed("longer than \(TokenVerifier.maximumLength) bytes") }
        let dots = token.indices.filter { token[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else { throw .malformed("not three dot-separated parts") }
        let headerPart = token[..<dots[0]], claimsPart = token[(dots[0] + 1)..<dots[1]]
        guard let headerBytes = Base64URL.decode(headerPart), let claimBytes = Base64URL.decode(claimsPart),
              let signature = Base64URL.decode(token[(dots[1] + 1)...]) else {
            throw .malformed("a part is not base64url")
        }
        guard case let .object(header)? = try? JSONReader.parse(headerBytes) else { throw .malformed("the header is not a JSON object") }
        guard case let .object(claims)? = try? JSONReader.parse(claimBytes) else { throw .malformed("the claims are not a JSON object") }
        guard case let .string(algorithm)? = header["alg"] else { throw .malformed("the header has no 'alg'") }
        // A header that asks for extensions we do not know must be refused (RFC 7515 §4.1.11).
        guard header["crit"] == nil else { throw .malformed("the header has 'crit' extensions") }
        switch header["kid"] {
        case nil: keyID = nil
        case let .string(id)?: keyID = id
        default: throw .malformed("the header's 'kid' is not a string")
        }
        self.algorithm = algorithm
        self.claims = claims
        self.signingInput = token[..<dots[1]]
        self.signature = signature
    }
}
