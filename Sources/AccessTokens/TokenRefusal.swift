/// Why a token was not accepted. Every case is RFC 6750's `invalid_token`:
/// the client should get a new token rather than retry this one.
public enum TokenRefusal: Error, Equatable, Sendable {
    /// Not three base64url parts, or a header or claims that are not a JSON object of the right members.
    case malformed(String)
    /// The header's `alg` is not its key's (or is `none`).
    case algorithmMismatch
    /// No key of the set has the token's `kid`.
    case unknownKey
    case badSignature
    case expired
    case notYetValid
    /// Issued before the operator's cut-off (a revocation of everything older).
    case revoked
    case wrongAudience
    case wrongIssuer

    /// For `error_description`: short, and free of anything the token said.
    public var description: String {
        switch self {
        case let .malformed(why): "The token is malformed: \(why)."
        case .algorithmMismatch: "The token's algorithm is not its key's."
        case .unknownKey: "The token's key (kid) is unknown."
        case .badSignature: "The token's signature is not valid."
        case .expired: "The token has expired."
        case .notYetValid: "The token is not valid yet."
        case .revoked: "The token was issued before the revocation cut-off."
        case .wrongAudience: "The token is for another audience."
        case .wrongIssuer: "The token is from another issuer."
        }
    }
}
