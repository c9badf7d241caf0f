import CMicroHTTPD
import Locking

/// Why a certificate and key cannot serve HTTPS; the server keeps what it had.
public struct TLSCredentialsError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// A certificate chain and its private key in the form GnuTLS hands to a
/// handshake. Checked when made (PEM that parses, a key that matches the
/// first certificate), so a handshake never meets a bad one.
///
/// Its GnuTLS objects are freed with it and nowhere else; ``TLSIdentities``
/// keeps it for as long as a handshake may still use it.
final class TLSIdentity: @unchecked Sendable {
    let chain: UnsafeMutablePointer<gnutls_pcert_st>
    let chainLength: UInt32
    let key: gnutls_privkey_t

    /// Longest chain read: leaf, intermediates and a root fit many times over.
    private static let longestChain: UInt32 = 16

    init(_ credentials: TLSCredentials) throws(TLSCredentialsError) {
        // Each object is stored only once every check has passed (a throwing
        // init runs no deinit before that); until then failures free it here.
        let chain = UnsafeMutablePointer<gnutls_pcert_st>.allocate(capacity: Int(Self.longestChain))
        var chainLength = Self.longestChain
        let imported = Self.withDatum(credentials.certificatePEM) { datum in
            gnutls_pcert_list_import_x509_raw(chain, &chainLength, &datum, GNUTLS_X509_FMT_PEM, 0)
        }
        guard imported >= 0, chainLength > 0 else {
            chain.deallocate()
            throw TLSCredentialsError(description: "the certificate is not a PEM certificate chain (\(Self.reason(imported)))")
        }
        let freeChain = {
            for index in 0..<Int(chainLength) { gnutls_pcert_deinit(chain + index) }
            chain.deallocate()
        }
        var made: gnutls_privkey_t?
        guard gnutls_privkey_init(&made) >= 0, let key = made else {
            freeChain()
            throw TLSCredentialsError(description: "GnuTLS could not make room for the private key")
        }
        let keyImported = Self.withDatum(credentials.privateKeyPEM) { datum in
            gnutls_privkey_import_x509_raw(key, &datum, GNUTLS_X509_FMT_PEM, nil, 0)
        }
        guard keyImported >= 0 else {
            gnutls_privkey_deinit(key)
            freeChain()
            throw TLSCredentialsError(description: "the key is not a PEM private key (\(Self.reason(keyImported)))")
        }
        guard let certificateKey = Self.keyID(ofPublicKey: chain.pointee.pubkey),
              certificateKey == Self.keyID(ofPrivateKey: key) else {
            gnutls_privkey_deinit(key)
            freeChain()
            throw TLSCredentialsError(description: "the key does not belong to the certificate")
        }
        self.chain = chain
        self.chainLength = chainLength
        self.key = key
    }

    deinit {
        for index in 0..<Int(chainLength) { gnutls_pcert_deinit(chain + index) }
        chain.deallocate()
        gnutls_privkey_deinit(key)
    }

    /// PEM text as GnuTLS reads it; the copy is wiped after, as it may hold a private key.
    private static func withDatum(_ text: String, _ body: (inout gnutls_datum_t) -> Int32) -> Int32 {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            defer { if let base = buffer.baseAddress { memset(base, 0, buffer.count) } }
            var datum = gnutls_datum_t(data: buffer.baseAddress, size: UInt32(buffer.count))
            return body(&datum)
        }
    }

    /// The public key's identifier, which a certificate and its private key
    /// share. (Two names, not two overloads: both key types are OpaquePointer.)
    private static func keyID(ofPublicKey publicKey: gnutls_pubkey_t?) -> [UInt8]? {
        guard let publicKey else { return nil }
        var id = [UInt8](repeating: 0, count: 64)
        var size = id.count
        guard gnutls_pubkey_get_key_id(publicKey, 0, &id, &size) >= 0 else { return nil }
        return Array(id[..<size])
    }

    private static func keyID(ofPrivateKey privateKey: gnutls_privkey_t) -> [UInt8]? {
        var made: gnutls_pubkey_t?
        guard gnutls_pubkey_init(&made) >= 0, let publicKey = made else { return nil }
        defer { gnutls_pubkey_deinit(publicKey) }
        guard gnutls_pubkey_import_privkey(publicKey, privateKey, 0, 0) >= 0 else { return nil }
        return keyID(ofPublicKey: publicKey)
    }

    private static func reason(_ status: Int32) -> String {
        status < 0 ? String(cString: gnutls_strerror(status)) : "no certificate found"
    }
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
