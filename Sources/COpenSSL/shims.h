// Debian's OpenSSL 3.0, seen from Swift, for TLS to Redis (Debian's hiredis
// 0.14 has none). Each shim wraps one call that Swift cannot make: OpenSSL
// writes these as macros over SSL_ctrl / SSL_CTX_ctrl.
#ifndef COPENSSL_SHIMS_H
#define COPENSSL_SHIMS_H

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/// TLS 1.2 at least: what Redis and managed services speak; older versions are broken.
static inline int topchrome_ssl_ctx_min_tls12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// The name the server's certificate must carry. An IP address is checked
/// against the certificate's IP addresses and sent as no SNI (RFC 6066
/// allows only host names there); a host name is checked and sent as SNI.
static inline int topchrome_ssl_expect_host(SSL *ssl, const char *host) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1) return 1;
    if (SSL_set1_host(ssl, host) != 1) return 0;
    return (int)SSL_set_tlsext_host_name(ssl, host) == 1;
}

#endif
