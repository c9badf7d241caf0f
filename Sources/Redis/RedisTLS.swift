import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// TLS for every connection of a client (`rediss://`), over OpenSSL: Debian's
/// hiredis 0.14 has none, so a connection reads and writes through a
/// `TLSSession` and hiredis only parses the replies.
///
/// One OpenSSL context per client, made once: the CA file and the client's
/// certificate are read here, so a file that cannot be used stops a start
/// instead of failing every connection. Without a CA file the system's
/// trust store is used (a managed Redis's certificate from a public CA).
public final class RedisTLS: @unchecked Sendable, Equatable, CustomStringConvertible {
    public let caFile: String?
    public let certificateFile: String?
    public let keyFile: String?
    /// Immutable once made; OpenSSL lets sessions of many threads share it.
    fileprivate let context: OpaquePointer

    /// Why TLS material cannot be used, in OpenSSL's words.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// OpenSSL set up without its clean-up at exit: that frees OpenSSL's own
    /// state while a connection's I/O thread may still be closing a TLS
    /// session with it, and the process then dies on a double free
    /// instead of exiting (seen: `check-config` against a Redis whose
    /// certificate it refused, exit status 6 where 2 was due). What a
    /// process holds is the system's to take back at exit anyway.
    private static let initialized: Bool = OPENSSL_init_ssl(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1

    /// `certificateFile` and `keyFile` go together: a client certificate for
    /// servers that check clients (`tls-auth-clients yes`).
    public init(caFile: String?, certificateFile: String? = nil, keyFile: String? = nil) throws(Failure) {
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw Failure(description: "a client certificate and its key go together")
        }
        _ = Self.initialized
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw Failure(description: Self.openSSLErrors()) }
        func fail(_ what: String) -> Failure {
            let failure = Failure(description: "\(what): \(Self.openSSLErrors())")
            SSL_CTX_free(context)
            return failure
        }
        guard topchrome_ssl_ctx_min_tls12(context) == 1 else { throw fail("TLS 1.2") }
        if let caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else { throw fail("CA file '\(caFile)'") }
        } else {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw fail("the system's trust store") }
        }
        if let certificateFile, let keyFile {
            guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
                throw fail("certificate '\(certificateFile)'")
            }
            guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else { throw fail("key '\(keyFile)'") }
            guard SSL_CTX_check_private_key(context) == 1 else { throw fail("key '\(keyFile)' and certificate '\(certificateFile)'") }
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.context = context
    }

    deinit { SSL_CTX_free(context) }

    /// The same files: a configuration read twice is the same configuration.
    public static func == (lhs: RedisTLS, rhs: RedisTLS) -> Bool {
        (lhs.caFile, lhs.certificateFile, lhs.keyFile) == (rhs.caFile, rhs.certificateFile, rhs.keyFile)
    }

    public var description: String {
        "TLS (CA: \(caFile ?? "the system's trust store")\(certificateFile.map { ", client certificate \($0)" } ?? ""))"
    }

    /// OpenSSL's queued errors, oldest first, and the queue emptied: the
    /// queue is per thread, and a reason left there would be read as the next one's.
    static func openSSLErrors() -> String {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "unknown error" : reasons.joined(separator: "; ")
    }
}

/// One connection's TLS over its (non-blocking) socket. Not thread-safe: its
/// connection uses it under its lock, on its I/O thread.
///
/// The handshake runs in the connection's poll loop: what OpenSSL wants
/// next (to read or to write) is what the loop waits for.
final class TLSSession {
    private let ssl: OpaquePointer
    private let host: String
    private(set) var established = false
    /// The handshake or the last write waits for the socket to take bytes.
    private(set) var wantsWrite = false
    /// Whether we offer a client certificate, and whether the server has
    /// sent a byte since the handshake: with TLS 1.3 a Redis that wants a
    /// certificate we lack (`tls-auth-clients yes`) lets the handshake end
    /// and then drops the connection, which is a refusal, not an outage.
    private let presentsCertificate: Bool
    private var heard = false

    init(_ tls: RedisTLS, fd: Int32, host: String) throws(HiredisFailure) {
        guard let ssl = SSL_new(tls.context) else { throw HiredisFailure(reason: "TLS: \(RedisTLS.openSSLErrors())") }
        guard SSL_set_fd(ssl, fd) == 1, topchrome_ssl_expect_host(ssl, host) == 1 else {
            let reason = RedisTLS.openSSLErrors()
            SSL_free(ssl)
            throw HiredisFailure(reason: "TLS setup for \(host): \(reason)")
        }
        SSL_set_connect_state(ssl)
        self.ssl = ssl
        self.host = host
        presentsCertificate = tls.certificateFile != nil
    }

    /// Frees the session, not the socket: the hiredis context owns and closes it.
    deinit { SSL_free(ssl) }

    /// Takes the handshake a step further; true once it is done. A
    /// certificate refused (unknown CA, another host's name) is a refusal:
    /// retrying will not change it.
    func handshake() throws(HiredisFailure) -> Bool {
        if established { return true }
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            established = true
            wantsWrite = false
            return true
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            wantsWrite = false
            return false
        case SSL_ERROR_WANT_WRITE:
            wantsWrite = true
            return false
        default:
            let verdict = SSL_get_verify_result(ssl)
            if verdict != X509_V_OK {
                let words = String(cString: X509_verify_cert_error_string(verdict))
                _ = RedisTLS.openSSLErrors()
                throw HiredisFailure(reason: "TLS: the certificate of \(host) was refused: \(words)", refused: true)
            }
            throw HiredisFailure(reason: "TLS handshake with \(host) failed: \(failure(result))")
        }
    }

    /// Writes what the connection takes now; how many bytes went (0 when it must wait).
    func write(_ bytes: UnsafeRawBufferPointer) throws(HiredisFailure) -> Int {
        guard !bytes.isEmpty else { return 0 }
        let result = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if result > 0 {
            wantsWrite = false
            return Int(result)
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_WRITE:
            wantsWrite = true
            return 0
        case SSL_ERROR_WANT_READ:
            return 0
        default:
            throw dropped("TLS write: \(failure(result))")
        }
    }

    /// Reads everything decrypted so far into `sink` (false: it could not
    /// take them), until the socket has no more: bytes OpenSSL holds
    /// already decrypted would never wake a poll.
    func read(into sink: (UnsafeRawBufferPointer) -> Bool) throws(HiredisFailure) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let result = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if result > 0 {
                heard = true
                let taken = buffer.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0.prefix(Int(result)))) }
                if !taken { throw HiredisFailure(reason: "out of memory") }
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: return
            case SSL_ERROR_WANT_WRITE:
                wantsWrite = true
                return
            case SSL_ERROR_ZERO_RETURN: throw dropped("Server closed the connection")
            default: throw dropped("TLS read: \(failure(result))")
            }
        }
    }

    /// A connection that failed: refused when the server, without a
    /// certificate from us, dropped it before any reply.
    private func dropped(_ reason: String) -> HiredisFailure {
        guard !presentsCertificate, !heard else { return HiredisFailure(reason: reason) }
        return HiredisFailure(reason: "TLS: \(host) ended the connection before any reply, as a Redis that wants a client certificate does (\(reason))",
                              refused: true)
    }

    /// Why a call failed: OpenSSL's queue, or the socket's error, or the peer gone.
    private func failure(_ result: Int32) -> String {
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_SYSCALL {
            let error = errno
            _ = RedisTLS.openSSLErrors()
            return error == 0 ? "the server closed the connection" : String(cString: strerror(error))
        }
        return RedisTLS.openSSLErrors()
    }
}
