#if canImport(CCurl)
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

/// One HTTP request whose answer is read as it arrives, with libcurl's easy
/// interface on a thread of its own.
///
/// Not URLSession: FoundationNetworking leaves a write-readiness source
/// armed on a socket after libcurl has asked for reads only, so every
/// request that waits for its answer keeps a core busy. An event stream
/// waits nearly all its life; an app would spend a core on a quiet session.
/// libcurl's own wait is a `poll`, idle until bytes, a timeout or `close()`.
final class EventStreamConnection: Sendable {
    typealias Piece = EventStreamPiece

    let pieces: AsyncThrowingStream<Piece, any Error>
    private let continuation: AsyncThrowingStream<Piece, any Error>.Continuation

    init(_ request: URLRequest, idleTimeout: Double) {
        (pieces, continuation) = AsyncThrowingStream.makeStream(of: Piece.self)
        let transfer = CurlTransfer(request, idleTimeout: idleTimeout, continuation: continuation)
        // Also when the reader's task is cancelled: the connection closes.
        continuation.onTermination = { _ in transfer.cancel() }
        Thread { transfer.run() }.start()
    }

    func close() {
        continuation.finish()
    }
}

/// The transfer behind one `EventStreamConnection`. `run()` owns the easy
/// handle on its thread; `cancel()` may come from any thread and shuts the
/// socket down, which ends libcurl's wait at once.
private final class CurlTransfer: @unchecked Sendable {
    private let request: URLRequest
    private let idleTimeout: Double
    private let continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation

    private let lock = NSLock()
    private var cancelled = false
    private var socket: curl_socket_t?

    // The transfer thread's own.
    private var easy: UnsafeMutableRawPointer?
    private var announced = false
    private var retryAfter: String?
    private var errorText = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE))

    init(_ request: URLRequest, idleTimeout: Double,
         continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation) {
        self.request = request
        self.idleTimeout = idleTimeout
        self.continuation = continuation
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            if let socket { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    private var isCancelled: Bool { lock.withLock { cancelled } }

    func run() {
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
        // Whole seconds: libcurl's unit. Below one byte a second for that
        // long (no state, no heartbeat) the connection counts as dead.
        let idleSeconds = max(1, Int(idleTimeout.rounded(.up)))
        let code = errorText.withUnsafeMutableBufferPointer { errorBuffer -> CURLcode in
            _ = ccurl_setopt_string(easy, CURLOPT_URL, url)
            _ = ccurl_setopt_list(easy, CURLOPT_HTTPHEADER, headers)
            _ = ccurl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer.baseAddress)
            // No signals: the thread is the app's, and so are its handlers.
            _ = ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
            _ = ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT, idleSeconds)
            _ = ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 1)
            _ = ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, idleSeconds)
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
            return curl_easy_perform(easy)
        }
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
        } else if let colon = line.firstIndex(of: ":"),
                  line[..<colon].caseInsensitiveCompare("Retry-After") == .orderedSame {
            retryAfter = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return count
    }

    private func received(_ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        // Returning less than was given ends the transfer.
        if isCancelled { return 0 }
        announce()
        if let bytes, count > 0 { continuation.yield(.body(Data(bytes: bytes, count: count))) }
        return count
    }

    private func announce() {
        guard !announced, let easy else { return }
        announced = true
        var status = 0
        _ = ccurl_response_code(easy, &status)
        continuation.yield(.head(status: status, retryAfter: retryAfter))
    }

    /// The reason in libcurl's words ("Failed to connect to … Connection
    /// refused"), as the URLError a URLSession would have thrown.
    private func failure(_ code: CURLcode) -> URLError {
        let detail = errorText.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
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
#endif
