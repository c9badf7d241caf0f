#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import MicroHTTPD
import TopChromeTesting

/// When libmicrohttpd refuses to start, it has closed the listening socket
/// or not, depending on why; the server closes it only in the second case.
struct ListeningSocketTests {
    @Test func aSocketTheLibraryLeftOpenIsClosed() throws {
        let listening = try ListeningSocket(host: "127.0.0.1", port: 0, backlog: 8)
        #expect(connects(to: listening.port), "listening before")
        listening.closeUnlessClosed()
        #expect(!connects(to: listening.port), "closed after")
    }

    /// The library closed it, and another thread's socket has its number
    /// now: closing the number again would take that socket from its owner.
    @Test func aNumberThatNamesAnotherSocketNowIsLeftAlone() throws {
        let listening = try ListeningSocket(host: "127.0.0.1", port: 0, backlog: 8)
        let other = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(other >= 0)
        // Closes the listening socket and gives its number to `other` in one
        // step, so no other test's socket is caught in between.
        let replaced = dup2(other, listening.descriptor) == listening.descriptor
        close(other)
        try #require(replaced)
        listening.closeUnlessClosed()
        #expect(fcntl(listening.descriptor, F_GETFD) != -1, "the other socket is still open")
        close(listening.descriptor)
    }

    private func connects(to port: Int) -> Bool {
        guard let socket = try? connectedSocket(port: port) else { return false }
        close(socket)
        return true
    }
}
