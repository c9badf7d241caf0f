#if os(Linux)
import CCurl
import Glibc
import Testing
@testable import TopChromeClient

/// An event stream's failures in the client's words, which is what
/// `topchrome watch` shows: never libcurl's messages.
@Suite struct TransferFailureTests {
    func reason(_ code: CURLcode, _ systemError: Int32 = 0, answered: Bool = false) -> String {
        TransferFailure.reason(code, systemError: systemError, answered: answered)
    }

    @Test func eachKindOfFailureIsNamed() {
        #expect(reason(CURLE_COULDNT_CONNECT, ECONNREFUSED) == "connection refused")
        #expect(reason(CURLE_COULDNT_CONNECT, EHOSTUNREACH) == "no route to the server")
        #expect(reason(CURLE_COULDNT_RESOLVE_HOST) == "DNS failed: the server's name does not resolve")
        #expect(reason(CURLE_OPERATION_TIMEDOUT) == "timed out: no answer")
        #expect(reason(CURLE_OPERATION_TIMEDOUT, answered: true) == "timed out: nothing more arrived")
        #expect(reason(CURLE_SSL_CONNECT_ERROR) == "TLS failed: no secure connection could be made")
        #expect(reason(CURLE_PEER_FAILED_VERIFICATION).hasPrefix("TLS failed: the server's certificate is not trusted"))
        #expect(reason(CURLE_GOT_NOTHING) == "the server closed the connection without answering")
        #expect(reason(CURLE_RECV_ERROR, ECONNRESET) == "the connection was reset")
    }
}
#endif
