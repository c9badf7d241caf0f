import AccessTokens

/// Access tokens: JWTs a backend signs for one session each, verified
/// with the keys of a JWKS file that is read again on reload (SIGHUP) so
/// keys rotate without a restart.
public struct TokenSettings: Sendable, Equatable {
    /// The JWKS text, checked when read (kept as text so that configurations compare).
    public var keysJWKS: String?
    public var keysFile: String?
    /// The Ed25519 PEM that tokens are minted with, checked when read; nil: none are.
    public var signingKeyPEM: String?
    public var signingKeyFile: String?
    /// The longest lifetime a minted token may have, and the one it gets unless it asks for less.
    public var maxLifetimeSeconds = 3600
    /// Audience, issuer, leeway and revocation cut-off that tokens are held to.
    public var policy = TokenVerifier.Policy()
    /// Where the cut-off is read from, again on each reload; nil: it stays as started.
    public var notBeforeFile: String?

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "token-keys", placeholder: "PATH", help: "Accept access tokens (JWTs: EdDSA, ES256 or HS256, each key chosen by kid) verified with the JWKS in PATH (again on SIGHUP).") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tokens.keysJWKS = try ServiceConfiguration.contents(of: value, source)
            _ = try keySet(config.tokens.keysJWKS ?? "", in: value, source)
            config.tokens.keysFile = value
        },
        .init(name: "token-signing-key", placeholder: "PATH", help: "Mint access tokens (POST /v1/sessions/{id}/tokens, EdDSA) with the Ed25519 private key in PATH (PEM, again on SIGHUP); its public key is served at /.well-known/jwks.json and accepted.") { value, source, config throws(ServiceConfiguration.UsageError) in
            let pem = try ServiceConfiguration.contents(of: value, source)
            _ = try signer(pem, in: value, source)
            config.tokens.signingKeyPEM = pem
            config.tokens.signingKeyFile = value
        },
        .number("token-max-ttl", "S", help: "Longest lifetime, in seconds, of a minted access token, and the default (default {default}).",
                \.tokens.maxLifetimeSeconds, in: 1...86_400),
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
            config.tokens.policy.notBefore = try notBefore(value, source)
        },
        .init(name: "tokens-not-before-file", placeholder: "PATH", help: "As --tokens-not-before, the time read from PATH, and again on SIGHUP: moved forward, it also ends the streams and long-polls of the tokens it refuses.") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tokens.policy.notBefore = try notBefore(inFile: value, source)
            config.tokens.notBeforeFile = value
        },
    ]

    /// A revocation cut-off, in seconds since 1970.
    static func notBefore(_ text: String, _ source: String) throws(ServiceConfiguration.UsageError) -> Int64 {
        Int64(try Int.read(text, source, in: 0...Int(Int32.max) * 2))
    }

    /// The cut-off a file holds (white space around it aside, as an editor's final newline).
    static func notBefore(inFile path: String, _ source: String) throws(ServiceConfiguration.UsageError) -> Int64 {
        var text = try ServiceConfiguration.contents(of: path, source)[...]
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return try notBefore(String(text), "\(source) ('\(path)')")
    }

    /// What verifies access tokens; nil without `--token-keys` or `--token-signing-key`.
    var verifier: TokenVerifier? {
        // Checked when the options were read: neither can fail here.
        Self.verifier(keys: keysJWKS.flatMap { try? KeySet(jwks: Array($0.utf8)) }, signer: signer, policy: policy)
    }

    /// What mints access tokens; nil without `--token-signing-key`.
    var signer: TokenSigner? {
        signingKeyPEM.flatMap { try? TokenSigner(pem: $0) }
    }

    /// The JWKS file's keys and the minting key's public half: a deployment
    /// that mints needs no JWKS file for its own tokens.
    static func verifier(keys: KeySet?, signer: TokenSigner?, policy: TokenVerifier.Policy) -> TokenVerifier? {
        // The signer's JWKS is made by the signer itself: it always reads back.
        let own = signer.flatMap { try? KeySet(jwks: $0.jwks) }?.keys ?? []
        let all = (keys?.keys ?? []) + own
        return all.isEmpty ? nil : TokenVerifier(keys: KeySet(keys: all), policy: policy)
    }

    /// Only the global token mints, so a signing key without one would mint
    /// nothing; and a cap without a key caps nothing.
    func check(_ given: [String: String], globalToken: Bool) throws(ServiceConfiguration.UsageError) {
        if let source = given["token-signing-key"], !globalToken {
            throw ServiceConfiguration.UsageError(description: "\(source): only the global token mints tokens; add --auth-token-file")
        }
        if let source = given["token-max-ttl"], given["token-signing-key"] == nil {
            throw ServiceConfiguration.UsageError(description: "\(source) caps minted tokens and does nothing without --token-signing-key")
        }
        if let source = given["tokens-not-before-file"], given["tokens-not-before"] != nil {
            throw ServiceConfiguration.UsageError(description: "\(source) and --tokens-not-before both set the cut-off; give one")
        }
    }

    static func signer(_ pem: String, in path: String, _ source: String) throws(ServiceConfiguration.UsageError) -> TokenSigner {
        do {
            return try TokenSigner(pem: pem)
        } catch {
            throw ServiceConfiguration.UsageError(description: "\(source): '\(path)' is not an Ed25519 private key (PEM): \(error)")
        }
    }

    static func keySet(_ text: String, in path: String, _ source: String) throws(ServiceConfiguration.UsageError) -> KeySet {
        do {
            return try KeySet(jwks: Array(text.utf8))
        } catch {
            throw ServiceConfiguration.UsageError(description: "\(source): '\(path)' is not a usable key set: \(error)")
        }
    }
}
