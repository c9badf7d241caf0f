import MicroHTTPD
import StrictJSON
import TopChromeCore

/// The API's answers: a store's answer made into a response, at once or
/// when it comes, and the state answers and problems every route shares.
extension SessionAPI {
    static let shuttingDown = Problem(status: 503, detail: "The server is shutting down.", headers: [("Retry-After", "1")])

    static let changesUnheard = Problem(
        status: 503, detail: "The session store was lost while waiting for a change, so the session's state is unknown; try again.",
        headers: [("Retry-After", "1")])

    /// Still 404 (no such resource), but a client that mangled the id (upper
    /// case, a UUID's dashes) learns that, rather than that it expired.
    static let notASessionID = Problem.notFound(
        "This is not a session id: an id is 32 lower-case hexadecimal digits (not all zero), without dashes, as POST /v1/sessions returns it.")

    static let unknownSession = Problem.notFound(
        "No session has this id; it may have been deleted or expired after being idle.")

    static let preconditionFailed = Problem(
        status: 412, detail: "If-Match or If-None-Match does not hold for the session's current version; nothing was changed.")

    /// What a client is told when its request reached the store and the answer did not come back.
    static let changeMayHaveHappened = "The change may have been made: read the session to know."
    /// A create's id is in its answer: a client that lost it cannot read the session it may have made.
    static let createMayHaveHappened = "A session may have been created, but its id was lost with the answer: create another."

    /// The response to a store's answer: `made` makes it from the value at
    /// once, into the connection's buffers, for an answer that is there; for
    /// one that comes later the request waits, holding no thread, and `made`
    /// runs on the store's thread.
    static func respond<Made: StoreAnswerResponse>(
        to answer: StoreAnswer<Made.Value>, _ made: Made, endpoint: Int,
        ifUnsure: String = changeMayHaveHappened, reusing buffers: inout ResponseBuffers
    ) throws(Problem) -> MicroHTTPDResponse {
        switch answer {
        case let .now(result):
            var response = try made.response(to: value(result, ifUnsure: ifUnsure), reusing: &buffers)
            // Here, not once the enum is made: setting it there costs a copy in and out.
            if response.endpoint == nil { response.endpoint = endpoint }
            return .complete(response)
        case let .later(answer):
            let pending = PendingResponse()
            answer.whenAnswered { result in
                var buffers = ResponseBuffers()
                do throws(Problem) {
                    pending.complete(with: try made.response(to: value(result, ifUnsure: ifUnsure), reusing: &buffers))
                } catch {
                    pending.complete(with: error.response)
                }
            }
            return .later(pending, endpoint: endpoint)
        }
    }

    /// ``respond(to:_:endpoint:ifUnsure:reusing:)`` for an answer that is a stream.
    static func respond<Value>(to answer: StoreAnswer<Value>, endpoint: Int,
                               _ respond: @escaping @Sendable (Value) throws(Problem) -> StreamingResponse) throws(Problem) -> MicroHTTPDResponse {
        switch answer {
        case let .now(result):
            var response = try respond(value(result))
            response.endpoint = endpoint
            return .stream(response)
        case let .later(answer):
            let pending = PendingResponse()
            answer.whenAnswered { result in
                do throws(Problem) {
                    pending.complete(with: try respond(value(result)))
                } catch {
                    pending.complete(with: error.response)
                }
            }
            return .later(pending, endpoint: endpoint)
        }
    }

    /// The store's value, or the problem a client is told of its error.
    static func value<Value>(_ result: Result<Value, StoreError>, ifUnsure: String = changeMayHaveHappened) throws(Problem) -> Value {
        switch result {
        case let .success(value):
            return value
        case let .failure(.full(capacity?)):
            throw Problem(status: 503, detail: "The server holds its maximum of \(capacity) sessions; try again later.",
                          headers: [("Retry-After", String(retryAfterWhenFull))])
        case .failure(.full(nil)):
            throw Problem(status: 503, detail: "The session store is full (Redis is at its memory limit); nothing was changed. Try again later.",
                          headers: [("Retry-After", String(retryAfterWhenFull))])
        case let .failure(.unavailable(reason, mayHaveApplied)):
            let outcome = " " + (mayHaveApplied ? ifUnsure : "Nothing was changed.")
            throw Problem(status: 503, detail: "The session store did not answer (\(reason)); try again." + outcome,
                          headers: [("Retry-After", "1")])
        case let .failure(.deadlineUnknown(reason)):
            throw Problem(status: 503, detail: "The change was not made: \(reason), so it could not be given a deadline. Nothing was changed.",
                          headers: [("Retry-After", "1")], kind: .deadlineUnknown)
        }
    }


    static func created(_ session: Session, reusing buffers: inout ResponseBuffers) -> CompleteResponse {
        var response = stateAnswer(session, status: 201, reusing: &buffers)
        response.headers.add(name: "Location", value: "/v1/sessions/\(session.id)")
        // The access log ties the session's later lines to its creation.
        response.endpoint = ExchangeEndpoint(template: .sessions, session: session.id).rawValue
        return response
    }

    static func removed(_ outcome: StoreOutcome) throws(Problem) -> CompleteResponse {
        switch outcome {
        case .done: return CompleteResponse(status: 204)
        case .conditionFailed: throw preconditionFailed
        case .notFound: throw unknownSession
        }
    }

    /// A read's answer: 412 if `If-Match` fails, 304 if the client has this version.
    static func read(_ session: Session, _ preconditions: Preconditions,
                             reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
        let tag = session.entityTag
        guard preconditions.matchCondition.holds(for: tag) else { throw preconditionFailed }
        var response = stateAnswer(session, reusing: &buffers)
        if !preconditions.noneMatchCondition.holds(for: tag) {
            // Not modified: the headers of the 200 it stands for. The server
            // sends no body with a 304 but states this body's length, as RFC 9110 wants.
            response.status = 304
        }
        return response
    }

    /// The answer to a change: the state it left, or why it was not made.
    static func changed(_ outcome: StoreOutcome, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
        switch outcome {
        case let .done(session, staleReports):
            var response = Self.stateAnswer(session, reusing: &buffers)
            // Still 200 (the report was received, and the state is current),
            // but a client whose seq went backwards must be able to notice.
            if staleReports > 0 { response.headers.add(name: "TopChrome-Stale-Reports", value: String(staleReports)) }
            return response
        case .conditionFailed: throw Self.preconditionFailed
        case .notFound: throw Self.unknownSession
        }
    }

    static func stateAnswer(_ session: Session, status: Int = 200) -> CompleteResponse {
        var buffers = ResponseBuffers()
        return stateAnswer(session, status: status, reusing: &buffers)
    }

    static func stateAnswer(_ session: Session, status: Int = 200, reusing buffers: inout ResponseBuffers) -> CompleteResponse {
        var headers = buffers.takeHeaders()
        headers.reserveCapacity(128)  // room for the ETag and a Location
        headers.add(name: "Content-Type" as StaticString, value: "application/json" as StaticString)
        headers.addETag(of: session)
        var body = buffers.takeBody()
        StateWriter.write(session, to: &body)
        return CompleteResponse(status: status, headers: headers, body: body)
    }

    static func json(_ status: Int, _ members: KeyValuePairs<String, String>) -> MicroHTTPDResponse {
        var json = JSONWriter()
        json.object { object in
            for (name, value) in members { object.member(name) { $0.string(value) } }
        }
        return MicroHTTPDResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json")]), body: json.bytes)
    }
}
