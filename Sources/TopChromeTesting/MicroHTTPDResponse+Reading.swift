import MicroHTTPD

/// What a test or the fuzz harness reads of an answer the API gave at once.
/// An answer that comes later has no status yet (asking for one traps) and
/// no fields yet; only a complete answer has a body.
extension MicroHTTPDResponse {
    public var status: Int {
        switch self {
        case let .complete(response): response.status
        case let .stream(response): response.status
        case .later: preconditionFailure("the answer comes later")
        }
    }

    public var headers: HTTPHeaders {
        switch self {
        case let .complete(response): response.headers
        case let .stream(response): response.headers
        case .later: HTTPHeaders()
        }
    }

    public var body: [UInt8] {
        guard case let .complete(response) = self else { return [] }
        return response.body
    }

    /// The stream, if the answer is one.
    public var stream: ResponseStream? {
        guard case let .stream(response) = self else { return nil }
        return response.stream
    }

    /// The promise of an answer, if it comes later.
    public var pending: PendingResponse? {
        guard case let .later(pending, _) = self else { return nil }
        return pending
    }
}
