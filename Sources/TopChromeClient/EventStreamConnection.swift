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

/// How an event stream's bytes are read: through URLSession on Apple's
/// platforms, with libcurl on Linux (CurlEventStream.swift says why).
enum EventStreamTransport: Sendable, Equatable {
    case urlSession
    #if os(Linux)
    case curl
    #endif

    /// Linux takes Apple's path too when `TOPCHROME_CLIENT_EVENT_STREAMS`
    /// is `urlsession`, so that path's tests run where CI runs (`make
    /// test-client-urlsession`); an app never sets it.
    static let chosen = chosen(by: ProcessInfo.processInfo.environment)

    static func chosen(by environment: [String: String]) -> EventStreamTransport {
        #if os(Linux)
        environment["TOPCHROME_CLIENT_EVENT_STREAMS"] == "urlsession" ? .urlSession : .curl
        #else
        .urlSession
        #endif
    }
}

/// One HTTP request whose answer is read as it arrives. The reader's task
/// ending, or `close()`, closes the connection.
final class EventStreamConnection: Sendable {
    typealias Piece = EventStreamPiece

    let pieces: AsyncThrowingStream<Piece, any Error>
    private let continuation: AsyncThrowingStream<Piece, any Error>.Continuation

    /// `bufferLimit`: pieces a slow reader may fall behind by; beyond that
    /// the connection ends (the stream reconnects with `Last-Event-ID`, so
    /// nothing is lost but the time).
    init(_ request: URLRequest, bufferLimit: Int, transport: EventStreamTransport = .chosen) {
        (pieces, continuation) = AsyncThrowingStream.makeStream(of: Piece.self, bufferingPolicy: .bufferingOldest(bufferLimit))
        switch transport {
        case .urlSession: URLSessionEventStream.start(request, feeding: continuation)
        #if os(Linux)
        case .curl: CurlTransfer.start(request, feeding: continuation)
        #endif
        }
    }

    func close() {
        continuation.finish()
    }

    /// Ends the stream with `error` (a silence past its limit), as if the connection failed.
    func close(failing error: any Error) {
        continuation.finish(throwing: error)
    }
}
