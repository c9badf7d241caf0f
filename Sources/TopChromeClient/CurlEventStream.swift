#if os(Linux)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An event stream read with libcurl's easy interface on a thread of its
/// own: Linux's way.
///
/// Not URLSession: FoundationNetworking leaves a write-readiness source
/// armed on a socket after libcurl has asked for reads only, so every
/// request that waits for its answer keeps a core busy. An event stream
/// waits nearly all its life; an app would spend a core on a quiet session.
/// libcurl's own wait is a `poll`, idle until bytes, a timeout or `close()`.
///
/// `run()` owns the easy handle on its thread; `cancel()` may come from any
/// thread and shuts the socket down, which ends libcurl's wait at once.
final class CurlTransfer: @unchecked Sendable {
    private let request: URLRequest
    private let continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation

    private let lock = NSLock()
    private var cancelled = false
    private var socket: curl_socket_t?

    // The transfer thread's own.
    private var easy: UnsafeMutableRawPointer?
    private var announced = false
    private var retryAfter: String?
    private var contentType: String?
    private var heartbeat: String?
    private var challenge: String?

    private init(_ request: URLRequest, continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation) {
        self.request = request
        self.continuation = continuation
    }

    static func start(_ request: URLRequest, feeding continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation) {
        let transfer = CurlTransfer(request, continuation: continuation)
        // Also when the reader's task is cancelled: the connection closes.
        continuation.onTermination = { _ in transfer.cancel() }
        Thread { transfer.run() }.start()
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            if let socket { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    private var isCancelled: Bool { lock.withLock { cancelled } }

    private func run() {
        guard CurlTransfer.libraryReady, let url = request.url?.absoluteString, let easy = curl_easy_init() else {
            continuation.finish(throwing: URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "libcurl could not start a transfer"]))
            return
        }
        self.easy = easy
        var headers: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            headers = curl_slist_append(headers, "\(name): \(value)")
        }
        defer {
            curl_slist_free_all(headers)
            curl_easy_cleanup(easy)
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_setopt_string(easy, CURLOPT_URL, url)
        _ = ccurl_setopt_list(easy, CURLOPT_HTTPHEADER, headers)
        // No signals: the thread is the app's, and so are its handlers.
        _ = ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // No timeouts of libcurl's: silence is `StreamIdleWatch`'s to judge,
        // with the limit the service names once it answers.
        _ = ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        _ = ccurl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { bytes, size, count, me in
            CurlTransfer.from(me).received(bytes, size * count)
        }
        _ = ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        _ = ccurl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { bytes, size, count, me in
            CurlTransfer.from(me).receivedHeader(bytes, size * count)
        }
        // Called at least once a second: how a cancel before the socket
        // exists (resolving the name, say) ends the transfer.
        _ = ccurl_setopt_long(easy, CURLOPT_NOPROGRESS, 0)
        _ = ccurl_setopt_pointer(easy, CURLOPT_XFERINFODATA, me)
        _ = ccurl_setopt_progress_callback(easy) { me, _, _, _, _ in
            CurlTransfer.from(me).isCancelled ? 1 : 0
        }
        _ = ccurl_setopt_pointer(easy, CURLOPT_SOCKOPTDATA, me)
        _ = ccurl_setopt_sockopt_callback(easy) { me, socket, _ in
            CurlTransfer.from(me).opened(socket)
        }
        _ = ccurl_setopt_pointer(easy, CURLOPT_CLOSESOCKETDATA, me)
        _ = ccurl_setopt_closesocket_callback(easy) { me, socket in
            CurlTransfer.from(me).close(socket)
        }
        let code = curl_easy_perform(easy)
        if isCancelled {
            continuation.finish()
        } else if code == CURLE_OK {
            announce()
            continuation.finish()
        } else {
            continuation.finish(throwing: failure(code))
        }
    }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> CurlTransfer {
        Unmanaged<CurlTransfer>.fromOpaque(pointer!).takeUnretainedValue()
    }

    /// Once libcurl is set up for the process (thread-safe since 7.84; a
    /// Swift static is initialised once).
    private static let libraryReady = curl_global_init(Int(CURL_GLOBAL_SSL)) == CURLE_OK

    private func opened(_ socket: curl_socket_t) -> Int32 {
        lock.withLock {
            self.socket = socket
            // Cancelled while connecting: make the next wait end at once.
            if cancelled { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
        return CURL_SOCKOPT_OK
    }

    /// Forgets the socket before closing it, so a late `cancel()` never shuts
    /// down a descriptor the process has since reused.
    private func close(_ socket: curl_socket_t) -> Int32 {
        lock.withLock {
            if self.socket == socket { self.socket = nil }
            return Glibc.close(socket)
        }
    }

    /// A response's head may be preceded by an interim one (100 Continue):
    /// each status line starts the header fields afresh.
    private func receivedHeader(_ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let bytes else { return count }
        let line = String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            retryAfter = nil
            contentType = nil
            heartbeat = nil
        } else if let colon = line.firstIndex(of: ":") {
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            if line[..<colon].caseInsensitiveCompare("Retry-After") == .orderedSame {
                retryAfter = value
            } else if line[..<colon].caseInsensitiveCompare("Content-Type") == .orderedSame {
                contentType = value
            } else if line[..<colon].caseInsensitiveCompare("TopChrome-Heartbeat") == .orderedSame {
                heartbeat = value
            } else if line[..<colon].caseInsensitiveCompare("WWW-Authenticate") == .orderedSame {
                challenge = value
            }
        }
        return count
    }

    private func received(_ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        // Returning less than was given ends the transfer.
        if isCancelled { return 0 }
        announce()
        if let bytes, count > 0, case .dropped = continuation.yield(.body(Data(bytes: bytes, count: count))) {
            // The reader fell behind by the whole buffer: end the transfer
            // (the stream reconnects from its last event id).
            return 0
        }
        return count
    }

    private func announce() {
        guard !announced, let easy else { return }
        announced = true
        var status = 0
        _ = ccurl_response_code(easy, &status)
        continuation.yield(.head(status: status, retryAfter: retryAfter, contentType: contentType, heartbeat: heartbeat,
                                 challenge: challenge))
    }

    /// The reason in our words (``TransferFailure``), as the URLError a
    /// URLSession would have thrown.
    private func failure(_ code: CURLcode) -> URLError {
        var systemError = 0
        if let easy { _ = ccurl_os_errno(easy, &systemError) }
        let reason = TransferFailure.reason(code, systemError: Int32(truncatingIfNeeded: systemError), answered: announced)
        let kind: URLError.Code = switch code {
        case CURLE_COULDNT_RESOLVE_HOST: .cannotFindHost
        case CURLE_COULDNT_CONNECT: .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION: .secureConnectionFailed
        default: .networkConnectionLost
        }
        return URLError(kind, userInfo: [NSLocalizedDescriptionKey: reason])
    }
}
/// Why a transfer failed, in the client's own words: what a person reading
/// "cannot reach URL (…)" can act on (refused, timed out, DNS, TLS), not
/// libcurl's messages, which name its internals and change between versions.
enum TransferFailure {
    static func reason(_ code: CURLcode, systemError: Int32, answered: Bool) -> String {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST:
            return "DNS failed: the server's name does not resolve"
        case CURLE_COULDNT_RESOLVE_PROXY:
            return "DNS failed: the proxy's name does not resolve"
        case CURLE_COULDNT_CONNECT:
            switch systemError {
            case ECONNREFUSED: return "connection refused"
            case ENETUNREACH, EHOSTUNREACH: return "no route to the server"
            case ETIMEDOUT: return "connecting timed out"
            case 0: return "cannot connect"
            default: return "cannot connect: \(String(cString: strerror(systemError)))"
            }
        case CURLE_OPERATION_TIMEDOUT:
            return answered ? "timed out: nothing more arrived" : "timed out: no answer"
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            return "TLS failed: no secure connection could be made"
        case CURLE_PEER_FAILED_VERIFICATION:
            return "TLS failed: the server's certificate is not trusted here, or is not for this name"
        case CURLE_GOT_NOTHING:
            return "the server closed the connection without answering"
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_WEIRD_SERVER_REPLY:
            return "the answer is not HTTP (an https server asked with http://?)"
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE:
            return systemError == ECONNRESET ? "the connection was reset" : "the connection was cut"
        default:
            return "the connection failed (libcurl error \(code.rawValue))"
        }
    }
}
#endif
