import MicroHTTPD

/// What the tests read of an answer the API gave at once; an answer that
/// comes later has none of these yet, and a test that gets one fails here.
extension HTTPResponse {
    var status: Int {
        switch self {
        case let .complete(response): response.status
        case let .stream(response): response.status
        case .later: preconditionFailure("the answer comes later")
        }
    }

    var headers: HTTPHeaders {
        switch self {
        case let .complete(response): response.headers
        case let .stream(response): response.headers
        case .later: preconditionFailure("the answer comes later")
        }
    }

    var body: [UInt8] {
        guard case let .complete(response) = self else { preconditionFailure("not a complete answer") }
        return response.body
    }

    /// The stream, if the answer is one.
    var stream: ResponseStream? {
        guard case let .stream(response) = self else { return nil }
        return response.stream
    }
}
