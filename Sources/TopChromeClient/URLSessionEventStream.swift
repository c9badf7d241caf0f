import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An event stream read through a data delegate: Apple's platforms' way
/// (where there is no libcurl to use directly). Linux builds and tests it
/// too, but reads with libcurl (CurlEventStream.swift says why).
enum URLSessionEventStream {
    static func start(_ request: URLRequest, feeding continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = StateFollower.never
        let urlSession = URLSession(configuration: configuration, delegate: Delegate(continuation), delegateQueue: nil)
        let task = urlSession.dataTask(with: request)
        // Also when the reader's task is cancelled: the connection closes.
        continuation.onTermination = { _ in
            task.cancel()
            urlSession.finishTasksAndInvalidate()
        }
        task.resume()
    }

    /// Hands what the connection receives to the stream. The session holds
    /// its delegate until it is invalidated, which `onTermination` does.
    /// The status is taken from the task when the first bytes (or the end)
    /// arrive rather than from a response callback, whose signature differs
    /// between Apple's Foundation and FoundationNetworking.
    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation
        private let lock = NSLock()
        private var announced = false

        init(_ continuation: AsyncThrowingStream<EventStreamPiece, any Error>.Continuation) {
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
