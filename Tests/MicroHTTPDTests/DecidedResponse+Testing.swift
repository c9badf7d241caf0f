@testable import MicroHTTPD

extension DecidedResponse {
    /// The fields of the answer, whichever kind it is.
    var headers: HTTPHeaders {
        switch self {
        case let .complete(response): response.headers
        case let .stream(response): response.headers
        case let .upgrade(response): response.headers
        }
    }
}
