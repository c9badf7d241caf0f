import MicroHTTPD

/// HTTPS: the certificate (chain) and private key, PEM text read at parse
/// time so a missing file stops the start at once, both or neither; where
/// they were read, read again on reload (SIGHUP); and what handshakes may use.
public struct TLSSettings: Sendable, Equatable {
    public var certificatePEM: String?
    public var keyPEM: String?
    public var certificateFile: String?
    public var keyFile: String?
    /// The TLS versions, key exchanges and ciphers HTTPS handshakes may use.
    public var priorities = TLSPriorities.recommended

    /// What the server serves HTTPS with; nil for plain HTTP.
    var credentials: TLSCredentials? {
        guard let certificatePEM, let keyPEM else { return nil }
        return TLSCredentials(certificatePEM: certificatePEM, privateKeyPEM: keyPEM)
    }

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "tls-cert", placeholder: "PATH", help: "Serve HTTPS with this PEM certificate (chain); read again on SIGHUP.") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tls.certificatePEM = try ServiceConfiguration.contents(of: value, source)
            config.tls.certificateFile = value
        },
        .init(name: "tls-key", placeholder: "PATH", help: "The PEM private key for --tls-cert; read again on SIGHUP.") { value, source, config throws(ServiceConfiguration.UsageError) in
            config.tls.keyPEM = try ServiceConfiguration.contents(of: value, source)
            config.tls.keyFile = value
        },
        .init(name: "tls-priorities", placeholder: "P", help: "GnuTLS priority string: the TLS versions and suites HTTPS accepts (default: TLS 1.2 and 1.3, forward-secret AEAD suites only; docs/configuration.md).") { value, source, config throws(ServiceConfiguration.UsageError) in
            do {
                config.tls.priorities = try TLSPriorities(value)
            } catch {
                throw .init(description: "\(source) is not a priority string GnuTLS accepts (\(error))")
            }
        },
    ]

    /// Once every option is read: the certificate and key go together, and
    /// priorities without them would do nothing.
    func check(_ given: [String: String]) throws(ServiceConfiguration.UsageError) {
        guard (certificatePEM == nil) == (keyPEM == nil) else {
            throw .init(description: "--tls-cert and --tls-key go together")
        }
        if certificatePEM == nil, let source = given["tls-priorities"] {
            throw .init(description: "\(source) sets what HTTPS handshakes may use and does nothing without --tls-cert and --tls-key; add them, or remove it")
        }
    }
}
