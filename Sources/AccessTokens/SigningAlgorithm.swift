/// The JWS algorithms TopChrome accepts (RFC 7518, RFC 8037). Each key has
/// exactly one: a token's `alg` only has to agree with its key's, so a token
/// can never pick a weaker check (`none`, or HS256 keyed with a public key).
public enum SigningAlgorithm: String, Sendable, CaseIterable {
    case eddsa = "EdDSA"
    case es256 = "ES256"
    case hs256 = "HS256"
}
