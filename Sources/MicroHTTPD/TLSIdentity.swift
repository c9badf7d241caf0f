import CMicroHTTPD
import Locking

/// Why a certificate and key cannot serve HTTPS; the server keeps what it had.
public struct TLSCredentialsError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

extension TLSCredentials {
    /// Checks that these could serve HTTPS, as a start or a reload does,
    /// without serving (`topchrome check-config`): PEM that parses and a key
    /// that belongs to the certificate.
    public func validate() throws(TLSCredentialsError) {
        _ = try TLSIdentity(self)
    }
}

extension TLSCredentials {
    /// When the first certificate of the chain, the one clients check,
    /// stops being valid (Unix time); nil when GnuTLS cannot read it.
    public var expiry: Int? {
        var made: gnutls_x509_crt_t?
        guard gnutls_x509_crt_init(&made) >= 0, let certificate = made else { return nil }
        defer { gnutls_x509_crt_deinit(certificate) }
        guard withDatum(certificatePEM, { gnutls_x509_crt_import(certificate, &$0, GNUTLS_X509_FMT_PEM) }) >= 0 else {
            return nil
        }
        let time = gnutls_x509_crt_get_expiration_time(certificate)
        return time == -1 ? nil : Int(time)
    }
}

/// A certificate chain and its private key in the form GnuTLS hands to a
/// handshake. Checked when made (PEM that parses, a key that matches the
/// first certificate), so a handshake never meets a bad one.
/// ``TLSIdentities`` keeps it for as long as a handshake may still use it.
final class TLSIdentity: Sendable {
    private let certificates: CertificateChain
    private let privateKey: PrivateKey

    var chain: UnsafeMutablePointer<gnutls_pcert_st> { certificates.first }
    var chainLength: UInt32 { certificates.count }
    var key: gnutls_privkey_t { privateKey.key }

    init(_ credentials: TLSCredentials) throws(TLSCredentialsError) {
        let certificates = try CertificateChain(pem: credentials.certificatePEM)
        let privateKey = try PrivateKey(pem: credentials.privateKeyPEM)
        guard let certificateKey = keyID(ofPublicKey: certificates.first.pointee.pubkey),
              certificateKey == keyID(ofPrivateKey: privateKey.key) else {
            throw TLSCredentialsError(description: "the key does not belong to the certificate")
        }
        self.certificates = certificates
        self.privateKey = privateKey
    }
}

/// The certificates of a PEM chain, leaf first, freed with this owner and nowhere else.
private final class CertificateChain: @unchecked Sendable {
    let first: UnsafeMutablePointer<gnutls_pcert_st>
    let count: UInt32

    /// Longest chain read: leaf, intermediates and a root fit many times over.
    private static let longest: UInt32 = 16

    init(pem: String) throws(TLSCredentialsError) {
        let first = UnsafeMutablePointer<gnutls_pcert_st>.allocate(capacity: Int(Self.longest))
        var count = Self.longest
        let status = withDatum(pem) { gnutls_pcert_list_import_x509_raw(first, &count, &$0, GNUTLS_X509_FMT_PEM, 0) }
        guard status >= 0, count > 0 else {
            first.deallocate()  // GnuTLS keeps nothing it failed to import
            let reason = status < 0 ? String(cString: gnutls_strerror(status)) : "no certificate found"
            throw TLSCredentialsError(description: "the certificate is not a PEM certificate chain (\(reason))")
        }
        self.first = first
        self.count = count
    }

    deinit {
        for index in 0..<Int(count) { gnutls_pcert_deinit(first + index) }
        first.deallocate()
    }
}

/// A private key, freed with this owner and nowhere else.
private final class PrivateKey: @unchecked Sendable {
    let key: gnutls_privkey_t

    init(pem: String) throws(TLSCredentialsError) {
        var made: gnutls_privkey_t?
        guard gnutls_privkey_init(&made) >= 0, let key = made else {
            throw TLSCredentialsError(description: "GnuTLS could not make room for the private key")
        }
        self.key = key  // from here on, deinit frees it, this init failing or not
        let status = withDatum(pem) { gnutls_privkey_import_x509_raw(key, &$0, GNUTLS_X509_FMT_PEM, nil, 0) }
        guard status >= 0 else {
            throw TLSCredentialsError(description: "the key is not a PEM private key (\(String(cString: gnutls_strerror(status))))")
        }
    }

    deinit {
        gnutls_privkey_deinit(key)
    }
}

/// PEM text as GnuTLS reads it; the copy is wiped after, as it may hold a private key.
private func withDatum(_ text: String, _ body: (inout gnutls_datum_t) -> Int32) -> Int32 {
    var bytes = Array(text.utf8)
    return bytes.withUnsafeMutableBufferPointer { buffer in
        defer { if let base = buffer.baseAddress { memset(base, 0, buffer.count) } }
        var datum = gnutls_datum_t(data: buffer.baseAddress, size: UInt32(buffer.count))
        return body(&datum)
    }
}

/// The public key's identifier, which a certificate and its private key
/// share. (Two names, not two overloads: both key types are OpaquePointer.)
private func keyID(ofPublicKey publicKey: gnutls_pubkey_t?) -> [UInt8]? {
    guard let publicKey else { return nil }
    var id = [UInt8](repeating: 0, count: 64)
    var size = id.count
    guard gnutls_pubkey_get_key_id(publicKey, 0, &id, &size) >= 0 else { return nil }
    return Array(id[..<size])
}

private func keyID(ofPrivateKey privateKey: gnutls_privkey_t) -> [UInt8]? {
    var made: gnutls_pubkey_t?
    guard gnutls_pubkey_init(&made) >= 0, let publicKey = made else { return nil }
    defer { gnutls_pubkey_deinit(publicKey) }
    guard gnutls_pubkey_import_privkey(publicKey, privateKey, 0, 0) >= 0 else { return nil }
    return keyID(ofPublicKey: publicKey)
}
/// Every identity a server loaded, the last one current. New handshakes
/// take the current one; none is freed before the server stops, since a
/// handshake that took one may still be using it when a reload replaces it
/// (reloads are rare, and an identity is a few kilobytes).
final class TLSIdentities: @unchecked Sendable {
    private let lock = PthreadLock()
    private var loaded: [TLSIdentity] = []

    /// What a handshake beginning now presents; nil before the first is loaded.
    var current: TLSIdentity? {
        lock.withLock { loaded.last }
    }

    func add(_ identity: TLSIdentity) {
        lock.withLock { loaded.append(identity) }
    }

    /// Once the daemon has stopped no handshake runs: only the current one is worth keeping.
    func dropAllButCurrent() {
        lock.withLock { loaded = Array(loaded.suffix(1)) }
    }
}
