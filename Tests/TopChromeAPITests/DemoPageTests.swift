import COpenSSL
import Foundation
import ContractTestSupport
import Testing
@testable import TopChromeAPI

/// The demo page's answer says what the page may do (issue 32 §9): a
/// policy that names its own script and style by hash, keeps other pages
/// from framing it, and forbids type sniffing.
@Suite struct DemoPageTests {
    @Test func theDemoPageCarriesItsSecurityHeaders() throws {
        let fixture = ContractFixture(.answersNow)
        let response = try fixture.client.request("GET", "/")
        #expect(response.status == 200)
        #expect(response.header("X-Content-Type-Options") == "nosniff")
        let policy = try #require(response.header("Content-Security-Policy"))
        let directives = policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(directives.contains("frame-ancestors 'none'"))
        #expect(directives.contains("default-src 'none'"))
        #expect(directives.contains("connect-src 'self'"))
    }

    /// The hashes in the policy are those of the page's inline script and
    /// style as a browser hashes them (the text between the tags): with a
    /// stale one the browser would refuse to run the page.
    @Test func thePolicyNamesThePagesScriptAndStyle() throws {
        let policy = try #require(demoPageSecurityHeaders.first { $0.0 == "Content-Security-Policy" }?.1)
        for (tag, directive) in [("script", "script-src"), ("style", "style-src")] {
            let inner = try #require(demoPage.components(separatedBy: "<\(tag)>").dropFirst().first?
                .components(separatedBy: "</\(tag)>").first)
            let expected = "\(directive) 'sha256-\(Self.sha256Base64(inner))'"
            #expect(policy.contains(expected), "the page's \(tag) now hashes to: \(expected)")
        }
    }

    static func sha256Base64(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil)
        return Data(digest.prefix(Int(length))).base64EncodedString()
    }
}
