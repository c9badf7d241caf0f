import AccessTokens
import Foundation
import Testing

/// SIGHUP on the real `topchrome`: it re-reads the token file and the TLS
/// certificate and key, keeps what it had when the new ones cannot be used,
/// and never stops.
///
/// Foundation's `Process` starts the server with most signals blocked,
/// SIGHUP among them: a server that did not wait for SIGHUP would leave it
/// pending here, where from a shell it dies (exit 129). Each test therefore
/// waits for the reload's log line, which only a server that handles SIGHUP writes.
@Suite struct ReloadLiveTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// Writes `text` to `name` in the test's folder (replacing it, as a rotation does); returns its path.
    @discardableResult
    func write(_ text: String, to name: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Waits until the server has logged `count` lines containing `text`, on either output.
    func waitForLog(_ server: RunningServer, _ text: String, count: Int = 1) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let lines = (server.standardOutput + server.standardError).split(separator: "\n")
            if lines.count(where: { $0.contains(text) }) >= count { return true }
            if !server.process.isRunning { return false }
            usleep(20_000)
        }
        return false
    }

    func create(on client: TestHTTPClient, token: String) throws -> Int {
        try client.request("POST", "/v1/sessions", headers: [("Authorization", "Bearer \(token)")]).status
    }

    @Test func sighupDoesNotStopTheServerAndTheStopStillTakesTheSnapshot() throws {
        let stateFile = folder.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", stateFile])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let id = try #require(try client.request("POST", "/v1/sessions").json["id"] as? String)

        server.signal(SIGHUP)
        #expect(waitForLog(server, "topchrome reload: nothing to reload"))
        server.signal(SIGHUP)
        #expect(waitForLog(server, "topchrome reload: nothing to reload", count: 2))
        #expect(server.process.isRunning)
        #expect(try client.request("GET", "/v1/sessions/\(id)").status == 200, "the open connection still answers")
        let created = try #require(try TestHTTPClient(port: server.port).request("POST", "/v1/sessions").json["id"] as? String)

        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        let restarted = try RunningServer(["--port", "0", "--state-file", stateFile])
        _ = try restarted.waitUntilListening()
        let again = try TestHTTPClient(port: restarted.port)
        #expect(try again.request("GET", "/v1/sessions/\(id)").status == 200, "the stop after a reload took its snapshot")
        #expect(try again.request("GET", "/v1/sessions/\(created)").status == 200)
        restarted.signal(SIGTERM)
        #expect(restarted.waitForExit(within: 10) == 0)
    }

    @Test func sighupRotatesTheBearerToken() throws {
        let tokenFile = try write("old-token\n", to: "token")
        let server = try RunningServer(["--port", "0", "--auth-token-file", tokenFile])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        #expect(try create(on: client, token: "old-token") == 201)
        #expect(try create(on: client, token: "new-token") == 401)

        try write("new-token\n", to: "token")
        server.signal(SIGHUP)
        #expect(waitForLog(server, "bearer token replaced"))
        #expect(try create(on: client, token: "new-token") == 201)
        #expect(try create(on: client, token: "old-token") == 401)
        #expect(!(server.standardOutput + server.standardError).contains("new-token"), "the token is never logged")

        server.signal(SIGHUP)
        #expect(waitForLog(server, "bearer token unchanged"))
        #expect(try create(on: client, token: "new-token") == 201)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// nil: the file is gone.
    /// The scraper's token rotates as the API's does.
    @Test func sighupRotatesTheMetricsToken() throws {
        let tokenFile = try write("old-metrics-token\n", to: "metrics-token")
        let server = try RunningServer(["--port", "0", "--metrics-token-file", tokenFile])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        func scrape(_ token: String) throws -> Int {
            try client.request("GET", "/metrics", headers: [("Authorization", "Bearer \(token)")]).status
        }
        #expect(try scrape("old-metrics-token") == 200)
        #expect(try scrape("new-metrics-token") == 401)
        try write("new-metrics-token\n", to: "metrics-token")
        server.signal(SIGHUP)
        #expect(waitForLog(server, "metrics token replaced"))
        #expect(try scrape("new-metrics-token") == 200)
        #expect(try scrape("old-metrics-token") == 401)
        try write("two words\n", to: "metrics-token")
        server.signal(SIGHUP)
        #expect(waitForLog(server, "kept the old metrics token"))
        #expect(try scrape("new-metrics-token") == 200)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    @Test(arguments: ["", "  \n", "two words\n", nil])
    func aTokenFileThatCannotBeUsedKeepsTheOldToken(_ contents: String?) throws {
        let tokenFile = try write("old-token\n", to: "token")
        let server = try RunningServer(["--port", "0", "--auth-token-file", tokenFile])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)

        if let contents { try write(contents, to: "token") } else { try FileManager.default.removeItem(atPath: tokenFile) }
        server.signal(SIGHUP)
        #expect(waitForLog(server, "warn topchrome reload: kept the old bearer token: --auth-token-file: "))
        #expect(try create(on: client, token: "old-token") == 201)
        #expect(try create(on: client, token: "two") == 401)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// The answer's status to a new HTTPS connection that trusts only `ca`; "000" when the handshake fails.
    func status(_ port: Int, trusting ca: String) throws -> String {
        try run("/usr/bin/curl", ["-s", "-m", "5", "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code}",
                                  "https://localhost:\(port)/healthz"]).output
    }

    /// One sample of `/metrics` over HTTPS (`name` with its labels, as written); nil when absent.
    func metric(_ name: String, _ port: Int, trusting ca: String) throws -> Double? {
        let text = try run("/usr/bin/curl", ["-s", "-m", "5", "--cacert", ca, "https://localhost:\(port)/metrics"]).output
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.dropFirst(name.count + 1)) }
    }

    @Test func sighupRotatesTheTLSCertificate() throws {
        let first = try AccessLiveTests.ThrowawayPKI(days: 1), second = try AccessLiveTests.ThrowawayPKI(days: 3)
        let server = try RunningServer(["--port", "0", "--tls-cert", try write(first.certificatePEM, to: "cert.pem"),
                                        "--tls-key", try write(first.keyPEM, to: "key.pem")])
        _ = try server.waitUntilListening()
        #expect(try status(server.port, trusting: first.caPath) == "200")
        #expect(try status(server.port, trusting: second.caPath) == "000")
        let now = Date().timeIntervalSince1970
        let firstExpiry = try #require(try metric("topchrome_tls_certificate_expiry_timestamp_seconds", server.port, trusting: first.caPath))
        #expect(abs(firstExpiry - (now + 86_400)) < 300, "the served certificate's notAfter: \(firstExpiry), now \(now)")
        #expect(try metric(#"topchrome_tls_reloads_total{result="replaced"}"#, server.port, trusting: first.caPath) == 0)
        #expect(try metric("topchrome_tls_last_reload_successful", server.port, trusting: first.caPath) == 1)

        try write(second.certificatePEM, to: "cert.pem")
        try write(second.keyPEM, to: "key.pem")
        server.signal(SIGHUP)
        #expect(waitForLog(server, "TLS certificate and key replaced"))
        #expect(try status(server.port, trusting: second.caPath) == "200", "a new connection gets the new certificate")
        #expect(try status(server.port, trusting: first.caPath) == "000")
        let secondExpiry = try #require(try metric("topchrome_tls_certificate_expiry_timestamp_seconds", server.port, trusting: second.caPath))
        #expect(abs(secondExpiry - firstExpiry - 2 * 86_400) < 300, "the new certificate's: \(secondExpiry)")
        #expect(try metric(#"topchrome_tls_reloads_total{result="replaced"}"#, server.port, trusting: second.caPath) == 1)

        server.signal(SIGHUP)
        #expect(waitForLog(server, "TLS certificate and key unchanged"))
        #expect(try status(server.port, trusting: second.caPath) == "200")
        #expect(try metric(#"topchrome_tls_reloads_total{result="unchanged"}"#, server.port, trusting: second.caPath) == 1)
        #expect(try metric(#"topchrome_tls_reloads_total{result="failed"}"#, server.port, trusting: second.caPath) == 0)
        #expect(try metric("topchrome_tls_certificate_expiry_timestamp_seconds", server.port, trusting: second.caPath) == secondExpiry)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    @Test(arguments: ["not PEM", "another certificate's key", "no key file"])
    func tlsFilesThatCannotServeKeepTheOldCertificate(_ fault: String) throws {
        let first = try AccessLiveTests.ThrowawayPKI(), second = try AccessLiveTests.ThrowawayPKI()
        let keyFile = try write(first.keyPEM, to: "key.pem")
        let server = try RunningServer(["--port", "0", "--tls-cert", try write(first.certificatePEM, to: "cert.pem"),
                                        "--tls-key", keyFile])
        _ = try server.waitUntilListening()

        switch fault {
        case "not PEM":
            try write("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", to: "cert.pem")
            try write(second.keyPEM, to: "key.pem")
        case "another certificate's key":
            try write(second.certificatePEM, to: "cert.pem")
        default:
            try write(second.certificatePEM, to: "cert.pem")
            try FileManager.default.removeItem(atPath: keyFile)
        }
        server.signal(SIGHUP)
        #expect(waitForLog(server, "warn topchrome reload: kept the old TLS certificate and key: "))
        #expect(try status(server.port, trusting: first.caPath) == "200", "the old certificate still serves")
        #expect(try status(server.port, trusting: second.caPath) == "000")
        #expect(try metric(#"topchrome_tls_reloads_total{result="failed"}"#, server.port, trusting: first.caPath) == 1)
        #expect(try metric("topchrome_tls_last_reload_successful", server.port, trusting: first.caPath) == 0)
        let expiry = try #require(try metric("topchrome_tls_certificate_expiry_timestamp_seconds", server.port, trusting: first.caPath))
        #expect(abs(expiry - (Date().timeIntervalSince1970 + 86_400)) < 300, "still the old certificate's: \(expiry)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }
}

/// `--token-keys` on SIGHUP: a rotated JWKS takes effect without a restart.
@Suite struct TokenKeysReloadLiveTests {
    @Test func aKeyRotatedInTheJWKSFileTakesEffectOnSighup() throws {
        let reloads = try ReloadLiveTests()
        let old = try TokenSigner(seed: Array(repeating: 5, count: 32), keyID: "old")
        let new = try TokenSigner(seed: Array(repeating: 6, count: 32), keyID: "new")
        let keys = try reloads.write(String(decoding: old.jwks, as: UTF8.self), to: "jwks.json")
        let token = try reloads.write("admin-token-0123456789abcdef0123456", to: "token")
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0", "--token-keys", keys, "--auth-token-file", token])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let created = try client.request("POST", "/v1/sessions", headers: [("Authorization", "Bearer admin-token-0123456789abcdef0123456")])
        let id = try #require(try created.json["id"] as? String)
        let now = Int64(Date().timeIntervalSince1970)
        func read(with signer: TokenSigner) throws -> Int {
            let token = signer.token(sessionID: id, scope: "read", now: now, lifetime: 600)
            return try client.request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "Bearer \(token)")]).status
        }
        #expect(try read(with: old) == 200)
        #expect(try read(with: new) == 401)

        try reloads.write(String(decoding: new.jwks, as: UTF8.self), to: "jwks.json")
        server.signal(SIGHUP)
        #expect(reloads.waitForLog(server, "token keys replaced (1 key)"))
        #expect(try read(with: new) == 200)
        #expect(try read(with: old) == 401, "the remembered token of the removed key is forgotten")

        try reloads.write("{\"keys\": []}", to: "jwks.json")
        server.signal(SIGHUP)
        #expect(reloads.waitForLog(server, "kept the old token keys"))
        #expect(try read(with: new) == 200)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }
}
