import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A WebSocket as a session's channel needs it: text messages both ways.
/// `URLSessionWebSocketTask` is the one apps use; tests give their own.
package protocol ChromeSocket: AnyObject, Sendable {
    /// The next text message. Throws `ChromeSocketClosed` once the socket
    /// is closed, `ChromeSocketRefused` when it never opened because the
    /// upgrade was refused or cannot be made here.
    func receive() async throws -> String
    func send(_ text: String) async throws
    /// Closes with 1000 (1001 would say the app goes away; it may not).
    func close()
}

/// Opens a socket for an upgrade request (its URL `ws://` or `wss://`).
package typealias ChromeSocketOpener = @Sendable (URLRequest) -> any ChromeSocket

/// The socket closed, with the code the service gave (4401: its access token expired).
package struct ChromeSocketClosed: Error {
    package var code: Int?
    package init(code: Int?) { self.code = code }
}

/// No socket here: a proxy (or the service) answered the upgrade with
/// `status`, or this platform's networking has no WebSocket (nil).
package struct ChromeSocketRefused: Error {
    package var status: Int?
    package init(status: Int?) { self.status = status }
}

/// `URLSessionWebSocketTask` as a `ChromeSocket`.
final class URLSessionChromeSocket: ChromeSocket, @unchecked Sendable {
    private let task: URLSessionWebSocketTask

    init(_ request: URLRequest, in session: URLSession) {
        task = session.webSocketTask(with: request)
        task.resume()
    }

    static func opener(in session: URLSession) -> ChromeSocketOpener {
        { URLSessionChromeSocket($0, in: session) }
    }

    func receive() async throws -> String {
        let message: URLSessionWebSocketTask.Message
        do {
            message = try await task.receive()
        } catch {
            if task.closeCode != .invalid { throw ChromeSocketClosed(code: task.closeCode.rawValue) }
            if let answer = task.response as? HTTPURLResponse, answer.statusCode != 101 {
                throw ChromeSocketRefused(status: answer.statusCode)
            }
            // FoundationNetworking on a libcurl built without WebSocket (Debian's 7.88).
            if (error as? URLError)?.code == .unsupportedURL { throw ChromeSocketRefused(status: nil) }
            throw error
        }
        switch message {
        case let .string(text): return text
        case .data: throw ChromeSocketClosed(code: 1003)  // the service sends text only
        @unknown default: throw ChromeSocketClosed(code: 1003)
        }
    }

    func send(_ text: String) async throws {
        try await task.send(.string(text))
    }

    func close() {
        task.cancel(with: .normalClosure, reason: nil)
    }
}
