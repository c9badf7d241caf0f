import AccessTokens

/// Access tokens: JWTs a backend signs for one session each, verified
/// with the keys of a JWKS file that is read again on reload (SIGHUP) so
/// keys rotate without a restart.
public struct TokenSettings: Sendable, Equatable {
    /// The JWKS text, checked when read (kept as text so that configurations compare).
    public var keysJWKS: String?
    public var keysFile: String?
    /// Audience, issuer, leeway and revocation cut-off that tokens are held to.
    public var policy = TokenVerifier.Policy()

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "token-keys", placeholder: "PATH", help: "Accept access tokens (JWTs: EdDSA, ES256 or HS256, each key chosen by kid) verified with the JWKS in PATH (again on SIGHUP).") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tokens.keysJWKS = try ServiceConfiguration.contents(of: value, source)
            _ = try keySet(config.tokens.keysJWKS ?? "", in: value, source)
            config.tokens.keysFile = value
        },
        .init(name: "token-audience", placeholder: "AUD", help: "Access tokens must name AUD in their 'aud' claim.") { value, source, config throws(ServiceConfiguration.UsageError) in
            guard !value.isEmpty else { throw ServiceConfiguration.UsageError(description: "\(source) must not be empty") }
            config.tokens.policy.audience = value
        },
        .init(name: "token-issuer", placeholder: "ISS", help: "Access tokens must have ISS as their 'iss' claim.") { value, source, config throws(ServiceConfiguration.UsageError) in
            guard !value.isEmpty else { throw ServiceConfiguration.UsageError(description: "\(source) must not be empty") }
            config.tokens.policy.issuer = value
        },
        .init(name: "token-leeway", placeholder: "S", help: "Seconds of clock difference forgiven around a token's exp, nbf and iat, at most 60 (default {default}).", default: { "\($0.tokens.policy.leewaySeconds)" }) { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tokens.policy.leewaySeconds = Int64(try Int.read(value, source, in: 0...Int(TokenVerifier.Policy.maximumLeeway)))
        },
        .init(name: "tokens-not-before", placeholder: "T", help: "Refuse access tokens issued (iat) before T, in seconds since 1970: a revocation of every older token.") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tokens.policy.notBefore = Int64(try Int.read(value, source, in: 0...Int(Int32.max) * 2))
        },
    ]

    /// What verifies access tokens; nil without `--token-keys`.
    var verifier: TokenVerifier? {
        // Checked when the option was read: it cannot fail here.
        keysJWKS.flatMap { try? KeySet(jwks: Array($0.utf8)) }.map { TokenVerifier(keys: $0, policy: policy) }
    }

    static func keySet(_ text: String, in path: String, _ source: String) throws(ServiceConfiguration.UsageError) -> KeySet {
        do {
            return try KeySet(jwks: Array(text.utf8))
        } catch {
            throw ServiceConfiguration.UsageError(description: "\(source): '\(path)' is not a usable key set: \(error)")
        }
    }
}
