import Foundation
import MicroHTTPD

/// Requests to a responder (the API) in this process, handed over as the
/// server hands them, without sockets: what the API decides, apart from
/// what the server adds (lengths, dates, HEAD and 304 without bodies). An
/// answer that comes later is waited for, as the server's suspended
/// connection would.
public struct InProcessClient: ContractClient, Sendable {
    private let responder: any HTTPResponder
    /// A body longer than this reaches the responder as the server hands
    /// it one: empty, and flagged too large.
    private let maxBodyBytes: Int
    /// How long an answer that comes later is waited for.
    private let patience: Duration

    public init(_ responder: any HTTPResponder, maxBodyBytes: Int, patience: Duration = .seconds(10)) {
        self.responder = responder
        self.maxBodyBytes = maxBodyBytes
        self.patience = patience
    }

    /// The answer, once there is one; a stream's body is left in its stream.
    public func execute(_ method: String, _ path: String, headers: [(String, String)],
                        body: [UInt8]?) throws -> ReceivedResponse {
        let response = try answer(method, path, headers: headers, body: body ?? [])
        return ReceivedResponse(status: response.status, headers: response.headers.fields, body: response.body)
    }

    /// The responder's own answer, once decided: complete, or a stream.
    public func answer(_ method: String, _ path: String, headers: [(String, String)] = [],
                       body: [UInt8] = []) throws -> MicroHTTPDResponse {
        let tooLarge = body.count > maxBodyBytes
        let request = MicroHTTPDRequest(method: method, path: path, headers: HTTPHeaders(headers),
                                  body: tooLarge ? [] : body, isBodyTooLarge: tooLarge)
        let response = responder.respond(to: request)
        guard let pending = response.pending else { return response }
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while clock.now < deadline {
            if let answer = pending.answer { return answer }
            Thread.sleep(forTimeInterval: 0.000_5)
        }
        throw NoAnswerInTime(method: method, path: path, patience: patience)
    }
}

/// An answer that was to come later did not come in time.
public struct NoAnswerInTime: Error, CustomStringConvertible {
    public let method: String
    public let path: String
    public let patience: Duration
    public var description: String { "\(method) \(path): no answer within \(patience)" }
}
