import AccessTokens

/// The options of access tokens (JWTs scoped to one session), kept apart
/// from the rest so that they move as one.
extension ServiceConfiguration {
    static let tokenOptions: [Option] = [
        Option(name: "token-keys", placeholder: "PATH", help: "Accept access tokens (JWTs: EdDSA, ES256 or HS256, each key chosen by kid) verified with the JWKS in PATH (again on SIGHUP).") { value, source, config throws(UsageError) in
            config.tokenKeysJWKS = try contents(of: value, source)
            _ = try tokenKeys(config.tokenKeysJWKS ?? "", in: value, source)
            config.tokenKeysFile = value
        },
        Option(name: "token-audience", placeholder: "AUD", help: "Access tokens must name AUD in their 'aud' claim.") { value, source, config throws(UsageError) in
            guard !value.isEmpty else { throw UsageError(description: "\(source) must not be empty") }
            config.tokenPolicy.audience = value
        },
        Option(name: "token-issuer", placeholder: "ISS", help: "Access tokens must have ISS as their 'iss' claim.") { value, source, config throws(UsageError) in
            guard !value.isEmpty else { throw UsageError(description: "\(source) must not be empty") }
            config.tokenPolicy.issuer = value
        },
        Option(name: "token-leeway", placeholder: "S", help: "Seconds of clock difference forgiven around a token's exp, nbf and iat, at most 60 (default {default}).", default: { "\($0.tokenPolicy.leewaySeconds)" }) { value, source, config throws(UsageError) in
            config.tokenPolicy.leewaySeconds = Int64(try integer(value, source, in: 0...Int(TokenVerifier.Policy.maximumLeeway)))
        },
        Option(name: "tokens-not-before", placeholder: "T", help: "Refuse access tokens issued (iat) before T, in seconds since 1970: a revocation of every older token.") { value, source, config throws(UsageError) in
            config.tokenPolicy.notBefore = Int64(try integer(value, source, in: 0...Int(Int32.max) * 2))
        },
    ]

    /// What verifies access tokens; nil without `--token-keys`.
    var tokenVerifier: TokenVerifier? {
        // Checked when the option was read: it cannot fail here.
        tokenKeysJWKS.flatMap { try? KeySet(jwks: Array($0.utf8)) }.map { TokenVerifier(keys: $0, policy: tokenPolicy) }
    }

    static func tokenKeys(_ text: String, in path: String, _ source: String) throws(UsageError) -> KeySet {
        do {
            return try KeySet(jwks: Array(text.utf8))
        } catch {
            throw UsageError(description: "\(source): '\(path)' is not a usable key set: \(error)")
        }
    }
}
