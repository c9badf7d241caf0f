import Testing
@testable import TopChromeServer

/// `--request-timeout`: seconds (a fraction allowed) for a request's head
/// and body to arrive, 0 for no deadline.
@Suite struct RequestTimeoutOptionTests {
    @Test func requestTimeoutInSecondsAndZeroForNone() throws {
        #expect(try serve(["--request-timeout", "2.5"]).httpServer.requestTimeout == .milliseconds(2500))
        #expect(try serve(["--request-timeout", "0"]).httpServer.requestTimeout == nil)
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--request-timeout", "-1"]) }
    }
}
