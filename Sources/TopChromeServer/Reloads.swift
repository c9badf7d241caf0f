import AccessTokens
import Locking
import MicroHTTPD
import TopChromeAPI

/// Re-reads the files that hold secrets on SIGHUP, as nginx, Consul and
/// Caddy do, so a rotated token or certificate is served without a restart.
/// Remembers what it read last: an unchanged file is said to be unchanged,
/// and an unchanged certificate is not loaded again (the server keeps every
/// certificate it loads until it stops). One reload runs at a time.
final class Reloads: @unchecked Sendable {
    private let lock = PthreadLock()
    private let tokenFile: String?
    private let metricsTokenFile: String?
    private let certificateFile: String?
    private let keyFile: String?
    private let tokenKeysFile: String?
    /// Its cut-off moves when `notBeforeFile` does.
    private var tokenPolicy: TokenVerifier.Policy
    private let notBeforeFile: String?
    /// The JWKS last read, as text: an unchanged file is said to be unchanged.
    private var tokenKeysText: String?
    private var tokenKeys: KeySet?
    private let signingKeyFile: String?
    /// The minting key last read, as PEM text, and the signer made of it.
    private var signingKeyPEM: String?
    private var signer: TokenSigner?
    private var token: String?
    private var metricsToken: String?
    private var credentials: TLSCredentials?
    private let tlsMetrics: TLSMetrics?

    init(configuration: ServiceConfiguration, tlsMetrics: TLSMetrics?) {
        self.tlsMetrics = tlsMetrics
        tokenFile = configuration.auth.tokenFile
        certificateFile = configuration.tls.certificateFile
        keyFile = configuration.tls.keyFile
        token = configuration.auth.token
        metricsTokenFile = configuration.auth.metricsTokenFile
        metricsToken = configuration.auth.metricsToken
        credentials = configuration.httpServer.tls
        tokenKeysFile = configuration.tokens.keysFile
        tokenPolicy = configuration.tokens.policy
        notBeforeFile = configuration.tokens.notBeforeFile
        tokenKeysText = configuration.tokens.keysJWKS
        tokenKeys = configuration.tokens.keysJWKS.flatMap { try? KeySet(jwks: Array($0.utf8)) }
        signingKeyFile = configuration.tokens.signingKeyFile
        signingKeyPEM = configuration.tokens.signingKeyPEM
        signer = configuration.tokens.signer
    }

    /// What one reload did, for its log line.
    struct Outcome: CustomStringConvertible {
        var parts: [String] = []
        /// Something could not be used and the old one stays: worth a warning.
        var keptSomething = false

        var description: String {
            parts.isEmpty ? "nothing to reload (no --auth-token-file, --metrics-token-file, --token-keys, --token-signing-key, --tokens-not-before-file, --tls-cert or --tls-key)" : parts.joined(separator: "; ")
        }
    }

    func run(api: SessionAPI, server: HTTPServer) -> Outcome {
        lock.withLock {
            var outcome = Outcome()
            if let tokenFile {
                reload(&token, from: tokenFile, "--auth-token-file", "bearer token", into: &outcome) { api.replaceAuthToken($0) }
            }
            if let metricsTokenFile {
                reload(&metricsToken, from: metricsTokenFile, "--metrics-token-file", "metrics token", into: &outcome) {
                    api.replaceMetricsToken($0)
                }
            }
            var verifierChanged = false
            if let tokenKeysFile {
                verifierChanged = reloadTokenKeys(from: tokenKeysFile, into: &outcome)
            }
            if let notBeforeFile {
                verifierChanged = reloadCutOff(from: notBeforeFile, into: &outcome) || verifierChanged
            }
            if let signingKeyFile, reloadSigningKey(from: signingKeyFile, into: &outcome), let signer {
                api.replaceTokenSigner(signer, verifier: verifier(signer))
            } else if verifierChanged {
                api.replaceTokenVerifier(verifier(signer))
            }
            if let certificateFile, let keyFile {
                reloadCertificate(from: certificateFile, keyFile, server: server, into: &outcome)
            }
            return outcome
        }
    }

    private func reload(_ token: inout String?, from path: String, _ option: String, _ name: String,
                        into outcome: inout Outcome, replace: (String) -> Void) {
        let new: String
        do {
            new = try ServiceConfiguration.bearerToken(inFile: path, option)
        } catch {
            outcome.keptSomething = true
            outcome.parts.append("kept the old \(name): \(error)")
            return
        }
        guard new != token else {
            outcome.parts.append("\(name) unchanged")
            return
        }
        replace(new)
        token = new
        outcome.parts.append("\(name) replaced")
    }

    /// The JWKS file's keys with the minting key's public half, as at start.
    private func verifier(_ signer: TokenSigner?) -> TokenVerifier {
        // There was a key at start (else nothing is reloaded), and keys are only ever replaced by keys.
        TokenSettings.verifier(keys: tokenKeys, signer: signer, policy: tokenPolicy) ?? TokenVerifier(keys: KeySet(keys: []), policy: tokenPolicy)
    }

    /// A rotated JWKS: tokens signed with a new key pass, those of a removed key no longer do.
    /// Returns whether the keys changed.
    private func reloadTokenKeys(from path: String, into outcome: inout Outcome) -> Bool {
        guard let (text, keys) = reread(path, "--token-keys", "token keys", was: tokenKeysText, into: &outcome,
                                        TokenSettings.keySet) else { return false }
        tokenKeys = keys
        tokenKeysText = text
        outcome.parts.append("token keys replaced (\(keys.keys.count) key\(keys.keys.count == 1 ? "" : "s"))")
        return true
    }

    /// A file of `option` read again and read as `parse` reads it; nil, said
    /// in `outcome`, when it is as it `was` or cannot be read (the old one is kept).
    private func reread<Value>(_ path: String, _ option: String, _ what: String, was: String?, into outcome: inout Outcome,
                               _ parse: (String, String, String) throws -> Value) -> (String, Value)? {
        do {
            let text = try ServiceConfiguration.contents(of: path, option)
            guard text != was else {
                outcome.parts.append("\(what) unchanged")
                return nil
            }
            return (text, try parse(text, path, option))
        } catch {
            outcome.keptSomething = true
            outcome.parts.append("kept the old \(what): \(error)")
            return nil
        }
    }

    /// A moved revocation cut-off: tokens issued before it are refused from
    /// now on, and what they opened is ended by the API as it takes the
    /// new verifier. Returns whether the cut-off moved.
    private func reloadCutOff(from path: String, into outcome: inout Outcome) -> Bool {
        let cutOff: Int64
        do {
            cutOff = try TokenSettings.notBefore(inFile: path, "--tokens-not-before-file")
        } catch {
            outcome.keptSomething = true
            outcome.parts.append("kept the old token cut-off: \(error)")
            return false
        }
        guard cutOff != tokenPolicy.notBefore else {
            outcome.parts.append("token cut-off unchanged")
            return false
        }
        tokenPolicy.notBefore = cutOff
        outcome.parts.append("token cut-off moved to \(cutOff)")
        return true
    }

    /// A rotated minting key: new tokens are signed with it, and those of the old key are no longer accepted.
    /// Returns whether the key changed.
    private func reloadSigningKey(from path: String, into outcome: inout Outcome) -> Bool {
        guard let (pem, new) = reread(path, "--token-signing-key", "token signing key", was: signingKeyPEM, into: &outcome,
                                      TokenSettings.signer) else { return false }
        signer = new
        signingKeyPEM = pem
        outcome.parts.append("token signing key replaced (kid \(new.keyID))")
        return true
    }

    private func reloadCertificate(from certificateFile: String, _ keyFile: String, server: HTTPServer,
                                   into outcome: inout Outcome) {
        let new: TLSCredentials
        do {
            new = TLSCredentials(certificatePEM: try ServiceConfiguration.contents(of: certificateFile, "--tls-cert"),
                                 privateKeyPEM: try ServiceConfiguration.contents(of: keyFile, "--tls-key"))
            guard new != credentials else {
                tlsMetrics?.record(.unchanged)
                outcome.parts.append("TLS certificate and key unchanged")
                return
            }
            try server.replaceTLSCredentials(new)
        } catch {
            tlsMetrics?.record(.failed)
            outcome.keptSomething = true
            outcome.parts.append("kept the old TLS certificate and key: \(error)")
            return
        }
        credentials = new
        tlsMetrics?.record(.replaced, served: new)
        outcome.parts.append("TLS certificate and key replaced (new connections get them)")
    }
}
