// Debian's OpenSSL 3.0, seen from Swift, for TLS to Redis (Debian's hiredis
// 0.14 has none) and for the signatures of access tokens (JWS). Each shim
// wraps a call that Swift cannot make (OpenSSL writes some as macros over
// SSL_ctrl / SSL_CTX_ctrl) or keeps pointer work out of Swift.
#ifndef COPENSSL_SHIMS_H
#define COPENSSL_SHIMS_H

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>

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

/// A public key from its DER SubjectPublicKeyInfo (the caller wraps a JWK's
/// raw Ed25519 or P-256 point in the fixed prefix of its type); NULL if
/// OpenSSL refuses it, e.g. a point that is not on the curve.
static inline EVP_PKEY *topchrome_public_key_from_der(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    return d2i_PUBKEY(NULL, &cursor, (long)length);
}

/// A private key from PEM text (PKCS #8, as `openssl genpkey` writes it); NULL if unreadable.
static inline EVP_PKEY *topchrome_private_key_from_pem(const char *pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return key;
}

/// The raw 32-byte public half of an Ed25519 key (what a JWK's `x` holds); 1 on success.
static inline int topchrome_ed25519_raw_public_key(const EVP_PKEY *key, unsigned char out[32]) {
    size_t length = 32;
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519) return 0;
    return EVP_PKEY_get_raw_public_key(key, out, &length) == 1 && length == 32;
}

/// 1 if `signature` is `key`'s Ed25519 signature of `data` (EdDSA signs the
/// message itself: no digest is named).
static inline int topchrome_ed25519_verify(EVP_PKEY *key, const unsigned char *signature, size_t signature_length,
                                           const unsigned char *data, size_t length) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519) return 0;
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context == NULL) return 0;
    int valid = EVP_DigestVerifyInit(context, NULL, NULL, NULL, key) == 1
        && EVP_DigestVerify(context, signature, signature_length, data, length) == 1;
    EVP_MD_CTX_free(context);
    return valid;
}

/// Signs `data` with an Ed25519 private key into `signature` (64 bytes); 1 on success.
static inline int topchrome_ed25519_sign(EVP_PKEY *key, const unsigned char *data, size_t length,
                                         unsigned char signature[64]) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519) return 0;
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    if (context == NULL) return 0;
    size_t signature_length = 64;
    int signed_ = EVP_DigestSignInit(context, NULL, NULL, NULL, key) == 1
        && EVP_DigestSign(context, signature, &signature_length, data, length) == 1 && signature_length == 64;
    EVP_MD_CTX_free(context);
    return signed_;
}

/// 1 if `rs` (JWS's ES256 form: r then s, 32 bytes each, RFC 7518 §3.4) is
/// `key`'s P-256 signature of SHA-256(`data`). OpenSSL checks DER, so the
/// pair is re-encoded here.
static inline int topchrome_es256_verify(EVP_PKEY *key, const unsigned char rs[64],
                                         const unsigned char *data, size_t length) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return 0;
    ECDSA_SIG *pair = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, 32, NULL), *s = BN_bin2bn(rs + 32, 32, NULL);
    if (pair == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(pair, r, s) != 1) {
        BN_free(r); BN_free(s); ECDSA_SIG_free(pair);
        return 0;
    }
    unsigned char *der = NULL;
    int der_length = i2d_ECDSA_SIG(pair, &der);
    ECDSA_SIG_free(pair);
    if (der_length <= 0) return 0;
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int valid = context != NULL && EVP_DigestVerifyInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestVerify(context, der, (size_t)der_length, data, length) == 1;
    EVP_MD_CTX_free(context);
    OPENSSL_free(der);
    return valid;
}

/// HMAC-SHA-256 of `data` under `secret` into `mac`; 1 on success.
static inline int topchrome_hs256(const unsigned char *secret, size_t secret_length,
                                  const unsigned char *data, size_t length, unsigned char mac[32]) {
    unsigned int mac_length = 0;
    return HMAC(EVP_sha256(), secret, (int)secret_length, data, length, mac, &mac_length) != NULL && mac_length == 32;
}

/// 1 if `mac` is HMAC-SHA-256 of `data` under `secret`, compared in constant time.
static inline int topchrome_hs256_verify(const unsigned char *secret, size_t secret_length,
                                         const unsigned char mac[32], const unsigned char *data, size_t length) {
    unsigned char expected[32];
    return topchrome_hs256(secret, secret_length, data, length, expected) && CRYPTO_memcmp(expected, mac, 32) == 0;
}

/// An Ed25519 private key from its raw 32-byte seed (a JWK's `d`); NULL if refused.
static inline EVP_PKEY *topchrome_ed25519_private_key(const unsigned char seed[32]) {
    return EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
}

#endif
