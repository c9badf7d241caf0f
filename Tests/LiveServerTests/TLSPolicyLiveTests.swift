import Foundation
import MicroHTTPD
import Testing

/// What HTTPS handshakes may agree on, asked of a live server by OpenSSL's
/// `s_client` over loopback: by default TLS 1.2 and 1.3 only, with
/// forward-secret AEAD suites only; `--tls-priorities` changes it.
@Suite struct TLSPolicyLiveTests {
    /// The protocol and suite a handshake with these `s_client` arguments
    /// agreed on ("TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256"), as its brief
    /// report names them; nil when it failed.
    static func handshake(_ port: Int, _ arguments: [String], trusting ca: String) throws -> String? {
        let result = try run("/usr/bin/openssl", ["s_client", "-brief", "-connect", "127.0.0.1:\(port)", "-CAfile", ca,
                                                   "-verify_return_error"] + arguments)
        let lines = result.output.split(separator: "\n")
        func field(_ name: String) -> String? {
            lines.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
        }
        guard result.status == 0, let version = field("Protocol version"), let suite = field("Ciphersuite") else { return nil }
        return "\(version) \(suite)"
    }

    static func server(_ pki: AccessLiveTests.ThrowawayPKI, priorities: TLSPriorities = .recommended) throws -> LiveServer {
        try LiveServer(memoryOnly: true) {
            $0.tls.certificatePEM = pki.certificatePEM
            $0.tls.keyPEM = pki.keyPEM
            $0.tls.priorities = priorities
        }
    }

    /// OpenSSL 3 offers TLS 1.0 and 1.1 at all only at security level 0.
    /// AES256-SHA and AES128-GCM-SHA256 carry the key by RSA (no forward
    /// secrecy); ECDHE-RSA-AES128-SHA is forward-secret but CBC, not AEAD;
    /// FFDHE groups in TLS 1.3 are left out by choice (GnuTLS's `NORMAL`
    /// takes ffdhe2048). No DHE-RSA case: libmicrohttpd sets no DH
    /// parameters, so TLS 1.2's DHE suites fail with any priorities.
    @Test(arguments: [
        ["-tls1", "-cipher", "DEFAULT@SECLEVEL=0"],
        ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"],
        ["-tls1_2", "-cipher", "AES256-SHA"],
        ["-tls1_2", "-cipher", "AES128-GCM-SHA256"],
        ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"],
        ["-tls1_3", "-groups", "ffdhe2048"],
    ])
    func refusedByDefault(_ arguments: [String]) throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let server = try Self.server(pki)
        #expect(try Self.handshake(server.port, arguments, trusting: pki.caPath) == nil)
        #expect(try Self.handshake(server.port, ["-tls1_3"], trusting: pki.caPath) != nil, "the server still serves")
    }

    @Test(arguments: [
        (["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"], "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256"),
        (["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"], "TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384"),
        (["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"], "TLSv1.2 ECDHE-RSA-CHACHA20-POLY1305"),
        (["-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"], "TLSv1.3 TLS_AES_128_GCM_SHA256"),
        (["-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"], "TLSv1.3 TLS_CHACHA20_POLY1305_SHA256"),
        (["-tls1_3", "-groups", "X25519"], "TLSv1.3 TLS_AES_256_GCM_SHA384"),
    ])
    func acceptedByDefault(_ arguments: [String], agreed: String) throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let server = try Self.server(pki)
        #expect(try Self.handshake(server.port, arguments, trusting: pki.caPath) == agreed)
    }

    /// HTTP over the handshakes that remain, not only the handshake.
    @Test func curlOverTLS12AndTLS13() throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let server = try Self.server(pki)
        for version in [["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"]] {
            let answer = try run("/usr/bin/curl", ["-s", "-m", "5", "--cacert", pki.caPath, "-o", "/dev/null", "-w", "%{http_code}"]
                                 + version + ["https://localhost:\(server.port)/healthz"])
            #expect(answer.output == "200", "\(version)")
        }
    }

    /// An operator's string replaces the default: here TLS 1.2 alone, with
    /// GnuTLS's usual suites, RSA key transport among them.
    @Test func prioritiesReplaceTheDefault() throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let server = try Self.server(pki, priorities: try TLSPriorities("NORMAL:-VERS-ALL:+VERS-TLS1.2:+RSA"))
        #expect(try Self.handshake(server.port, ["-tls1_3"], trusting: pki.caPath) == nil)
        #expect(try Self.handshake(server.port, ["-tls1_2", "-cipher", "AES128-GCM-SHA256"], trusting: pki.caPath)
                == "TLSv1.2 AES128-GCM-SHA256")
    }

    /// The same through the command line and `check-config`: a string
    /// GnuTLS refuses is a usage error (exit 2) naming where it stopped.
    @Test func theFlagIsReadAndCheckedAtStart() throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let tls = ["--tls-cert", "\(pki.directory.path)/server.pem", "--tls-key", "\(pki.directory.path)/server.key"]
        let bad = try CheckConfigTests.check(tls + ["--tls-priorities", "NORMAL:+VERS-TLS9"])
        #expect(bad.status == 2)
        #expect(bad.errors.contains("--tls-priorities is not a priority string GnuTLS accepts (GnuTLS refuses it at '+VERS-TLS9'"),
                "\(bad.errors)")
        let start = try CommandLineTests.run(tls + ["--port", "0", "--tls-priorities", "NORMAL:-VERS-ALL"])
        #expect(start.status == 2, "\(start.errors)")
        #expect(try CheckConfigTests.check(tls + ["--tls-priorities", "NORMAL:-VERS-TLS1.3"]).status == 0)

        let server = try ProcessLifecycleTests.RunningServer(["--port", "0"] + tls + ["--tls-priorities", "NORMAL:-VERS-TLS1.3"])
        _ = try server.waitUntilListening()
        #expect(try Self.handshake(server.port, ["-tls1_3"], trusting: pki.caPath) == nil)
        #expect(try Self.handshake(server.port, ["-tls1_2"], trusting: pki.caPath)?.hasPrefix("TLSv1.2") == true)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }
}
