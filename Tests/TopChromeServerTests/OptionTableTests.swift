import Foundation
import Testing
@testable import TopChromeServer

/// The option table is the one place an option is declared: what help says
/// and what the flag and the variable do all come from it.
struct OptionTableTests {
    /// Each option's help line shows the default the property holds, and
    /// that default, read as the option's value, is the default again.
    @Test func helpShowsEachOptionsRealDefault() throws {
        let defaults = ServiceConfiguration()
        let lines = ServiceConfiguration.usage.split(separator: "\n")
        for option in ServiceConfiguration.options {
            let line = try #require(lines.first { $0.hasPrefix("  --\(option.name) ") }, "\(option.name)")
            #expect(!line.contains("{default}"), "\(line)")
            guard let shown = option.default?(defaults) else { continue }
            #expect(line.contains(shown), "\(line) does not show \(shown)")
            var read = ServiceConfiguration()
            try option.apply(shown, "--\(option.name)", &read)
            #expect(read == defaults, "--\(option.name) \(shown) is not the default")
        }
        // Only these say their default in words (the machine's cores; no CA file, the system's store;
        // a priority string too long for a help line).
        let inWords = ServiceConfiguration.options.filter { $0.default == nil && $0.help(defaults).contains("default") }
        #expect(Set(inWords.map(\.name)) == ["threads", "redis-ca-file", "tls-priorities"])
    }

    /// The flag and the environment variable of every option set the same
    /// thing, and something the default does not.
    @Test func flagAndVariableReachTheSameProperty() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("options-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret").path
        try "s3cret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let jwks = directory.appendingPathComponent("jwks.json").path
        try #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#
            .write(toFile: jwks, atomically: true, encoding: .utf8)
        let signingKey = directory.appendingPathComponent("signing.pem").path
        // PKCS #8 of the Ed25519 seed 7…7, as `openssl genpkey -algorithm ed25519` writes a key.
        try "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH\n-----END PRIVATE KEY-----\n"
            .write(toFile: signingKey, atomically: true, encoding: .utf8)
        let cutOff = directory.appendingPathComponent("not-before").path
        try "1800000000\n".write(toFile: cutOff, atomically: true, encoding: .utf8)
        let redis = ["--store", "redis://h:1"]
        // A value other than the default for each option, and the options it needs beside it.
        let samples: [String: (value: String, with: [String])] = [
            "host": ("0.0.0.0", []), "port": ("9000", []), "threads": ("3", []), "max-sessions": ("5", []),
            "max-body-bytes": ("1024", []), "reveal-threshold": ("2.5", []), "session-ttl": ("0", []),
            "shutdown-timeout": ("2.5", []), "idle-timeout": ("0", []), "request-timeout": ("2.5", []), "max-connections": ("7", []),
            "max-connections-per-ip": ("2", []), "connection-memory": ("16384", []), "heartbeat": ("1", []), "create-rate": ("3", []), "create-burst": ("7", []),
            "max-watchers": ("9", []), "max-watchers-per-session": ("3", []), "max-wait": ("5", []),
            "socket-messages-per-second": ("50", []),
            "auth-token-file": (secret, []), "metrics-token-file": (secret, []), "tls-cert": (secret, ["--tls-key", secret]),
            "tls-key": (secret, ["--tls-cert", secret]), "tls-priorities": ("NORMAL", ["--tls-cert", secret, "--tls-key", secret]),
            "log-format": ("json", []), "log-level": ("debug", []),
            "log-errors-to": ("stderr", []), "trusted-proxy": ("10.0.0.0/8", []), "state-file": (secret, []),
            "store": ("redis://h:1", []), "redis-password-file": (secret, redis),
            "redis-username": ("topchrome", redis + ["--redis-password-file", secret]),
            "redis-ca-file": ("/etc/ssl/certs/ca-certificates.crt", ["--store", "rediss://h:1"]),
            "sentinel-password-file": (secret, ["--store", "redis-sentinel://h:1/m"]),
            "sentinel-username": ("watcher", ["--store", "redis-sentinel://h:1/m", "--sentinel-password-file", secret]),
            "redis-key-prefix": ("other:", redis), "redis-timeout": ("2.5", redis), "redis-wait-replicas": ("1", redis), "redis-connections": ("3", redis),
            "cors-origin": ("https://app.example.com", []), "snapshot-interval": ("5", ["--state-file", secret]),
            "fsync": ("always", ["--state-file", secret]),
            "token-keys": (jwks, []), "token-audience": ("chrome", ["--token-keys", jwks]),
            "token-issuer": ("backend", ["--token-keys", jwks]), "token-leeway": ("5", ["--token-keys", jwks]),
            "tokens-not-before": ("1800000000", ["--token-keys", jwks]),
            "tokens-not-before-file": (cutOff, ["--token-keys", jwks]),
            "token-signing-key": (signingKey, ["--auth-token-file", secret]),
            "token-max-ttl": ("120", ["--token-signing-key", signingKey, "--auth-token-file", secret]),
        ]
        // Read into an OpenSSL context, which needs a real certificate and key:
        // RedisSecurityOptionsTests reads them both ways.
        let needingAKeyPair: Set = ["redis-cert", "redis-key"]
        #expect(Set(ServiceConfiguration.options.map(\.name)) == Set(samples.keys).union(needingAKeyPair))
        for option in ServiceConfiguration.options {
            guard let sample = samples[option.name] else { continue }
            let flagged = try serve(sample.with + ["--\(option.name)", sample.value])
            #expect(try serve(sample.with, [option.environmentName: sample.value]) == flagged, "\(option.name)")
            // (Without the option its companion may be refused: that differs too.)
            #expect((try? serve(sample.with)) != flagged, "\(option.name) changed nothing")
        }
    }
}
