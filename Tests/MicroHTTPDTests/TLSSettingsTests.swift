import Foundation
import MicroHTTPD
import Testing
import TopChromeTesting

/// The TLS settings the server is made with, read as GnuTLS reads them.
@Suite struct TLSSettingsTests {
    /// The default is a constant, not parsed at start: GnuTLS must accept it.
    @Test func theRecommendedPrioritiesAreAStringGnuTLSAccepts() throws {
        #expect(try TLSPriorities(TLSPriorities.recommended.description) == .recommended)
    }

    @Test(arguments: [
        ("NORMAL:+VERS-TLS9", "GnuTLS refuses it at '+VERS-TLS9': The request is invalid."),
        ("NORMAL::", "GnuTLS refuses it at '': The request is invalid."),
        ("", "GnuTLS refuses it at '': The request is invalid."),
        ("NORMAL:-VERS-ALL", "GnuTLS refuses it: No or insufficient priorities were set."),
    ])
    func refusedPrioritiesSayWhere(_ text: String, _ message: String) {
        #expect(throws: TLSPrioritiesError.self) { try TLSPriorities(text) }
        do {
            _ = try TLSPriorities(text)
        } catch {
            #expect(error.description == message)
        }
    }

    /// The certificate's notAfter, as openssl reads it.
    @Test func expiryIsTheFirstCertificatesNotAfter() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("expiry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                             "-keyout", folder.appendingPathComponent("key.pem").path,
                             "-out", folder.appendingPathComponent("cert.pem").path, "-days", "3", "-subj", "/CN=expiry"]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        #expect(openssl.waitForExit() == 0)
        let before = Int(Date().timeIntervalSince1970)
        let certificate = try String(contentsOf: folder.appendingPathComponent("cert.pem"), encoding: .utf8)
        let credentials = TLSCredentials(certificatePEM: certificate, privateKeyPEM: "")
        let expiry = try #require(credentials.expiry)
        #expect(abs(expiry - (before + 3 * 86_400)) < 120, "\(expiry) vs \(before)")
        #expect(TLSCredentials(certificatePEM: "not PEM", privateKeyPEM: "").expiry == nil)
    }
}
