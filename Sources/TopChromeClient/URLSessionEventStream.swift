import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an event stream's connection hands its reader, as it arrives.
enum EventStreamPiece: Sendable {
    /// `heartbeat`: the `TopChrome-Heartbeat` header, the service's interval
    /// in seconds; `challenge`: `WWW-Authenticate` (why a token was refused).
    case head(status: Int, retryAfter: String?, contentType: String?, heartbeat: String?, challenge: String?)
    case body(Data)
}

// Linux reads event streams with libcurl (CurlEventStream.swift says why);
// `make test-client-urlsession` builds this path on Linux as well, with
// TOPCHROME_URLSESSION_EVENT_STREAMS, so it is compiled and run there.
#if !os(Linux) || TOPCHROME_URLSESSION_EVENT_STREAMS
/// One HTTP request whose answer is read as it arrives, through a data
/// delegate (where there is no libcurl to use directly: Apple's platforms;
/// see CurlEventStream.swift for why Linux does not use URLSession here).
final class EventStreamConnection: NSObject, URLSessionDataDelegate, Sendable {
    typealias Piece = EventStreamPiece

    let pieces: AsyncThrowingStream<Piece, any Error>
    private let continuation: AsyncThrowingStream<Piece, any Error>.Continuation
    private let task: URLSessionDataTask
    private let urlSession: URLSession

    /// `bufferLimit`: pieces a slow reader may fall behind by; beyond that
    /// the connection ends (the stream reconnects with `Last-Event-ID`, so
    /// nothing is lost but the time).
    init(_ request: URLRequest, bufferLimit: Int) {
        (pieces, continuation) = AsyncThrowingStream.makeStream(of: Piece.self, bufferingPolicy: .bufferingOldest(bufferLimit))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = StateFollower.never
        let delegate = Delegate(continuation)
        urlSession = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        task = urlSession.dataTask(with: request)
        super.init()
        let task = self.task, urlSession = self.urlSession
        // Also when the reader's task is cancelled: the connection closes.
        continuation.onTermination = { _ in
            task.cancel()
            urlSession.finishTasksAndInvalidate()
        }
        task.resume()
    }

    func close() {
        continuation.finish()
    }

    /// Ends the stream with `error` (a silence past its limit), as if the connection failed.
    func close(failing error: any Error) {
        continuation.finish(throwing: error)
    }

    /// Hands what the connection receives to the stream. The session holds
    /// its delegate until it is invalidated, which `onTermination` does.
    /// The status is taken from the task when the first bytes (or the end)
    /// arrive rather than from a response callback, whose signature differs
    /// between Apple's Foundation and FoundationNetworking.
    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let continuation: AsyncThrowingStream<Piece, any Error>.Continuation
        private let lock = NSLock()
        private var announced = false

        init(_ continuation: AsyncThrowingStream<Piece, any Error>.Continuation) {
            self.continuation = continuation
        }

        private func announce(_ task: URLSessionTask) {
            guard lock.withLock({ () -> Bool in
                defer { announced = true }
                return !announced
            }) else { return }
            let http = task.response as? HTTPURLResponse
            continuation.yield(.head(status: http?.statusCode ?? 0, retryAfter: http?.value(forHTTPHeaderField: "Retry-After"),
                                     contentType: http?.value(forHTTPHeaderField: "Content-Type"),
                                     heartbeat: http?.value(forHTTPHeaderField: "TopChrome-Heartbeat"),
                                     challenge: http?.value(forHTTPHeaderField: "WWW-Authenticate")))
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            announce(dataTask)
            if case .dropped = continuation.yield(.body(data)) {
                dataTask.cancel()
                continuation.finish(throwing: URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the reader fell behind"]))
            }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            if let error {
                continuation.finish(throwing: error)
            } else {
                announce(task)
                continuation.finish()
            }
        }
    }
}
#endif
