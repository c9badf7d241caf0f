import Foundation
import Testing
@testable import TopChromeServer

/// `--tls-priorities`: checked by GnuTLS as it is read; pointless without a
/// certificate, so refused there.
@Suite struct TLSPrioritiesOptionTests {
    @Test func readCheckedAndRefusedWithoutACertificate() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pem-\(UUID().uuidString)")
        try "not read as PEM until the start".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let tls = ["--tls-cert", file.path, "--tls-key", file.path]
        #expect(try serve(tls).tls.priorities == .recommended)
        #expect(try serve(tls + ["--tls-priorities", "NORMAL"]).tls.priorities.description == "NORMAL")
        #expect(try serve(tls, ["TOPCHROME_TLS_PRIORITIES": "SECURE256"]).httpServer.tlsPriorities.description == "SECURE256")
        #expect(throws: ServiceConfiguration.UsageError(description: "--tls-priorities is not a priority string GnuTLS accepts (GnuTLS refuses it at 'CHACHA': The request is invalid.)")) {
            try serve(tls + ["--tls-priorities", "NORMAL:-VERS-TLS1.0:CHACHA:+AEAD"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_TLS_PRIORITIES is not a priority string GnuTLS accepts (GnuTLS refuses it: No or insufficient priorities were set.)")) {
            try serve(tls, ["TOPCHROME_TLS_PRIORITIES": "NORMAL:-CIPHER-ALL"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "--tls-priorities sets what HTTPS handshakes may use and does nothing without --tls-cert and --tls-key; add them, or remove it")) {
            try serve(["--tls-priorities", "NORMAL"])
        }
    }
}
