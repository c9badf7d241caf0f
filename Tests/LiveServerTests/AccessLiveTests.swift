import Foundation
import Testing
import TopChromeTesting

/// Who gets in: the bearer token and TLS, over real connections.
@Suite struct AccessLiveTests {
    @Test func bearerTokenGuardsTheAPI() throws {
        let server = try LiveServer(memoryOnly: true) { $0.auth.token = "s3cret-token" }
        let client = try server.client()

        let missing = try client.request("POST", "/v1/sessions")
        #expect(missing.status == 401)
        #expect(missing.header("Content-Type") == "application/problem+json")
        #expect(missing.header("WWW-Authenticate") == #"Bearer realm="topchrome""#)

        let wrong = try client.request("POST", "/v1/sessions", headers: [("Authorization", "Bearer s3cret-tokeN")])
        #expect(wrong.status == 401)
        #expect(wrong.header("WWW-Authenticate")?.contains("invalid_token") == true)
        #expect(try client.request("POST", "/v1/sessions", headers: [("Authorization", "Basic czNjcmV0")]).status == 401)
        #expect(try client.request("GET", "/v1/sessions/\(String(repeating: "0", count: 32))").status == 401,
                "no probing of ids without the token")
        #expect(server.service.backend.memoryStore!.count == 0)

        let created = try client.request("POST", "/v1/sessions", headers: [("Authorization", "Bearer s3cret-token")])
        #expect(created.status == 201)
        let id = try #require(try created.json["id"] as? String)
        #expect(try client.request("GET", "/v1/sessions/\(id)", headers: [("Authorization", "bearer s3cret-token")]).status == 200)

        #expect(try client.request("GET", "/healthz").status == 200, "probes stay open")
        #expect(try client.request("GET", "/readyz").status == 200)
    }

    @Test func tlsServesHTTPSAndRefusesPlainHTTP() throws {
        let pki = try ThrowawayPKI()
        let server = try LiveServer(memoryOnly: true) {
            $0.tls.certificatePEM = pki.certificatePEM
            $0.tls.keyPEM = pki.keyPEM
        }
        #expect(server.service.url.hasPrefix("https://"))
        let url = "https://localhost:\(server.port)"
        let created = try run("/usr/bin/curl", ["-s", "--cacert", pki.caPath, "-X", "POST", "-w", "\n%{http_code}", "\(url)/v1/sessions"])
        #expect(created.status == 0)
        #expect(created.output.hasSuffix("\n201"), "\(created.output)")
        #expect(created.output.contains("\"isRevealed\":true"))

        let untrusted = try run("/usr/bin/curl", ["-s", "-o", "/dev/null", "\(url)/healthz"])
        #expect(untrusted.status != 0, "a certificate from an unknown CA is refused by the client")

        let plain = try run("/usr/bin/curl", ["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/healthz"])
        #expect(plain.status != 0 || plain.output == "000", "plain HTTP gets no HTTP answer on a TLS port")
    }

    /// A throwaway CA and a certificate for localhost/127.0.0.1 it signed
    /// for `days` days, made with openssl.
    struct ThrowawayPKI {
        let directory: URL
        var caPath: String { directory.appendingPathComponent("ca.pem").path }
        let certificatePEM: String
        let keyPEM: String

        init(days: Int = 1) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("topchrome-pki-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let dir = directory.path
            let steps: [[String]] = [
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem",
                 "-days", "1", "-subj", "/CN=TopChrome Test CA"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr",
                 "-subj", "/CN=localhost"],
                ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
                 "-CAcreateserial", "-out", "\(dir)/server.pem", "-days", String(days),
                 "-extfile", "\(dir)/san.cnf"],
            ]
            try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: "\(dir)/san.cnf", atomically: true, encoding: .utf8)
            for step in steps {
                let result = try run("/usr/bin/openssl", step)
                guard result.status == 0 else { throw TestClientError.malformed("openssl \(step[0]) failed: \(result.output)") }
            }
            certificatePEM = try String(contentsOfFile: "\(dir)/server.pem", encoding: .utf8)
            keyPEM = try String(contentsOfFile: "\(dir)/server.key", encoding: .utf8)
        }
    }
}

/// Runs a program to its end; its exit status and what it printed (stdout
/// and stderr).
func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    try Process.runToEnd(program, arguments)
}
