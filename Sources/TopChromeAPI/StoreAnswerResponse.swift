import MicroHTTPD
import TopChromeCore

/// How a route makes its response from a store's value. A value rather than
/// a closure: an escaping closure, even one that captures nothing, cost an
/// allocation per request on the memory store's path, whose answer is there at once.
protocol StoreAnswerResponse: Sendable {
    associatedtype Value: Sendable
    func response(to value: Value, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse
}

/// The routes' ways of answering, one per kind of store call.
extension SessionAPI {
    /// A new session's answer: 201, its state and where it lives.
    struct Created: StoreAnswerResponse {
        func response(to session: Session, reusing buffers: inout ResponseBuffers) -> CompleteResponse {
            SessionAPI.created(session, reusing: &buffers)
        }
    }

    struct Removed: StoreAnswerResponse {
        func response(to outcome: StoreOutcome, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
            try SessionAPI.removed(outcome)
        }
    }

    /// A read's answer, under the request's preconditions.
    struct Read: StoreAnswerResponse {
        let preconditions: Preconditions

        func response(to session: Session?, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
            guard let session else { throw SessionAPI.unknownSession }
            return try SessionAPI.read(session, preconditions, reusing: &buffers)
        }
    }

    struct Changed: StoreAnswerResponse {
        func response(to outcome: StoreOutcome, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
            try SessionAPI.changed(outcome, reusing: &buffers)
        }
    }
}
