/// Who may call: the bearer token every /v1 request must carry, and the
/// scraper's own token for `/metrics`, each read from a file so the secret
/// never shows in a process list, and read again on reload (SIGHUP) so it
/// rotates without a restart.
public struct AuthSettings: Sendable, Equatable {
    /// When set, every /v1 request must carry `Authorization: Bearer <token>`.
    public var token: String?
    public var tokenFile: String?
    /// When set, `/metrics` answers only a request carrying this token (or
    /// `token`): a scraper's own secret, which opens nothing else.
    public var metricsToken: String?
    public var metricsTokenFile: String?

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "auth-token-file", placeholder: "PATH", help: "Require 'Authorization: Bearer <token>' on /v1, token read from PATH (again on SIGHUP).") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.auth.token = try ServiceConfiguration.bearerToken(inFile: value, source)
            config.auth.tokenFile = value
        },
        .init(name: "metrics-token-file", placeholder: "PATH", help: "Require 'Authorization: Bearer <token>' on /metrics (this token or --auth-token-file's), token read from PATH (again on SIGHUP).") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.auth.metricsToken = try ServiceConfiguration.bearerToken(inFile: value, source)
            config.auth.metricsTokenFile = value
        },
    ]
}
