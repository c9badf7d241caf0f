import CMicroHTTPD

/// Which TLS versions, key exchanges and ciphers an HTTPS handshake may
/// agree on: a GnuTLS priority string, checked by GnuTLS when made, so a
/// start never meets one it refuses.
public struct TLSPriorities: Sendable, Equatable, CustomStringConvertible {
    public let description: String

    /// Mozilla's "intermediate" profile without its finite-field DHE suites:
    /// what a public endpoint offers when its clients are apps and browsers
    /// of the last decade. Part by part:
    /// - `NORMAL`: GnuTLS's defaults for everything not named below
    ///   (signature algorithms, certificate types, no compression).
    /// - `-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2`: TLS 1.0 and 1.1 are
    ///   deprecated (RFC 8996) and allow only CBC with SHA-1.
    /// - `-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305` and
    ///   `-MAC-ALL:+AEAD`: authenticated encryption only; CBC suites are
    ///   the ones padding oracles (Lucky13, POODLE) broke. ChaCha20 for
    ///   phones without AES instructions.
    /// - `-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA`: forward secrecy; a stolen key
    ///   must not decrypt recorded traffic, as it does with RSA key
    ///   transport. No DHE-RSA: every TLS 1.2 client offers ECDHE, and
    ///   finite-field DHE costs the server many times the CPU per handshake,
    ///   which a client could force on it. (TLS 1.3 always exchanges keys
    ///   by (EC)DHE, over the groups next.)
    /// - `-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1`:
    ///   elliptic curves only, for the same reason, in TLS 1.3 too.
    public static let recommended = TLSPriorities(checked:
        "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
        + ":-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD"
        + ":-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA"
        + ":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1")

    /// A string GnuTLS accepts (`gnutls-cli --priority STRING --list`
    /// shows what it allows); the error says where it stopped reading.
    public init(_ text: String) throws(TLSPrioritiesError) {
        var cache: gnutls_priority_t?
        var stop: Int?
        let status = text.withCString { start in
            var failedAt: UnsafePointer<CChar>?
            let status = gnutls_priority_init(&cache, start, &failedAt)
            if let failedAt { stop = start.distance(to: failedAt) }
            return status
        }
        guard status == GNUTLS_E_SUCCESS else {
            throw TLSPrioritiesError(text: text, reason: String(cString: gnutls_strerror(status)),
                                     stoppedAt: status == GNUTLS_E_INVALID_REQUEST ? stop : nil)
        }
        gnutls_priority_deinit(cache)
        description = text
    }

    private init(checked text: String) {
        description = text
    }
}

/// A priority string GnuTLS refuses: its reason, and the element it could
/// not read when it names one.
public struct TLSPrioritiesError: Error, Equatable, CustomStringConvertible {
    public let description: String

    init(text: String, reason: String, stoppedAt offset: Int?) {
        let utf8 = Array(text.utf8)
        guard let offset, offset >= 0, offset <= utf8.count else {
            description = "GnuTLS refuses it: \(reason)"
            return
        }
        let element = utf8[offset...].prefix { $0 != UInt8(ascii: ":") }
        description = "GnuTLS refuses it at '\(String(decoding: element, as: UTF8.self))': \(reason)"
    }
}
