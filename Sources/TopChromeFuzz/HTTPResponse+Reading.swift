import MicroHTTPD

/// What the harness reads of an answer. An answer that comes later has no
/// fields yet (none to check) and no status: the harness never asks it for one.
extension HTTPResponse {
    var pending: PendingResponse? {
        guard case let .later(pending, _) = self else { return nil }
        return pending
    }

    var stream: ResponseStream? {
        guard case let .stream(response) = self else { return nil }
        return response.stream
    }

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
        case .later: HTTPHeaders()
        }
    }

    var body: [UInt8] {
        guard case let .complete(response) = self else { return [] }
        return response.body
    }
}
