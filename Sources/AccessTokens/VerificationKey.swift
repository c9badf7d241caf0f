import COpenSSL
import StrictJSON

/// One key of a JWKS (RFC 7517) and the one algorithm it verifies: Ed25519
/// (`OKP`), P-256 (`EC`) or an HMAC secret (`oct`). Holds OpenSSL's parsed
/// public key, which is read-only once made and so shared by threads.
public final class VerificationKey: @unchecked Sendable {
    public let id: String?
    public let algorithm: SigningAlgorithm
    private let publicKey: OpaquePointer?
    private let secret: [UInt8]

    /// DER SubjectPublicKeyInfo before the raw key (RFC 8410 for Ed25519,
    /// RFC 5480 for an uncompressed P-256 point): a JWK holds only the raw part.
    private static let ed25519Prefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
    private static let p256Prefix: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                                              0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04]

    /// Shortest HMAC secret taken: RFC 7518 §3.2 asks for at least the hash's size.
    static let minimumSecretBytes = 32

    /// Reads one JWK; the message of a refusal names the member at fault.
    public init(jwk: JSONValue) throws(KeySetError) {
        guard case let .object(members) = jwk else { throw KeySetError("a key is not a JSON object") }
        func text(_ name: String) throws(KeySetError) -> String? {
            guard let value = members[name] else { return nil }
            guard case let .string(text) = value else { throw KeySetError("a key's '\(name)' is not a string") }
            return text
        }
        func bytes(_ name: String, count: Int? = nil) throws(KeySetError) -> [UInt8] {
            guard let encoded = try text(name), let decoded = Base64URL.decode(encoded.utf8) else {
                throw KeySetError("a key's '\(name)' is missing or not base64url")
            }
            if let count, decoded.count != count { throw KeySetError("a key's '\(name)' is not \(count) bytes") }
            return decoded
        }
        if let use = try text("use"), use != "sig" { throw KeySetError("a key's 'use' is '\(use)', not 'sig'") }
        id = try text("kid")
        switch (try text("kty"), try text("crv")) {
        case ("OKP", "Ed25519"):
            algorithm = .eddsa
            publicKey = try Self.publicKey(der: Self.ed25519Prefix + bytes("x", count: 32))
            secret = []
        case ("EC", "P-256"):
            algorithm = .es256
            publicKey = try Self.publicKey(der: Self.p256Prefix + bytes("x", count: 32) + bytes("y", count: 32))
            secret = []
        case ("oct", nil):
            algorithm = .hs256
            publicKey = nil
            secret = try bytes("k")
            guard secret.count >= Self.minimumSecretBytes else {
                throw KeySetError("an HS256 key's 'k' is shorter than \(Self.minimumSecretBytes) bytes")
            }
        case let (kty, crv):
            throw KeySetError("a key's type \(kty ?? "(none)")/\(crv ?? "(none)") is not one of OKP/Ed25519, EC/P-256, oct")
        }
        if let alg = try text("alg"), alg != algorithm.rawValue {
            throw KeySetError("a key's 'alg' \(alg) does not match its type (\(algorithm.rawValue))")
        }
    }

    /// An Ed25519 key made from its private half (for the tokens this service mints).
    init(id: String, ed25519 publicKey: OpaquePointer) {
        self.id = id
        algorithm = .eddsa
        self.publicKey = publicKey
        secret = []
    }

    deinit {
        if let publicKey { EVP_PKEY_free(publicKey) }
    }

    private static func publicKey(der: [UInt8]) throws(KeySetError) -> OpaquePointer {
        guard let key = topchrome_public_key_from_der(der, der.count) else {
            throw KeySetError("a key's point is not a valid public key")
        }
        return key
    }

    /// Whether `signature` signs `input` (the token's `header.claims` as sent) under this key.
    func verifies(_ signature: [UInt8], of input: ArraySlice<UInt8>) -> Bool {
        input.withUnsafeBufferPointer { data in
            switch algorithm {
            case .eddsa:
                guard let publicKey, signature.count == 64 else { return false }
                return topchrome_ed25519_verify(publicKey, signature, 64, data.baseAddress, data.count) == 1
            case .es256:
                guard let publicKey, signature.count == 64 else { return false }
                return topchrome_es256_verify(publicKey, signature, data.baseAddress, data.count) == 1
            case .hs256:
                guard signature.count == 32 else { return false }
                return topchrome_hs256_verify(secret, secret.count, signature, data.baseAddress, data.count) == 1
            }
        }
    }
}

/// A key file that cannot be used, and why.
public struct KeySetError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
