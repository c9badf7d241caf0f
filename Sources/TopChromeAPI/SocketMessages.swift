import StrictJSON
import TopChromeCore

/// A client's message on the WebSocket channel: a change, as the HTTP
/// route that makes it takes it (`body` is that route's body, read by the
/// same rules), and an optional `id` the answer echoes.
struct SocketRequest {
    enum Change {
        case scroll(ScrollBody<ChromeInput>)
        case inset(Double)
        case behavior(RevealSettings)
        case disappear
    }

    /// Client ids longer than this are refused: the server echoes them.
    static let maxIDLength = 64

    var id: String?
    var change: Change

    /// Throws the problem to answer with; `id` is what could be read of it.
    static func read(_ text: String) throws(SocketRefusal) -> SocketRequest {
        let value: JSONValue
        do {
            value = try JSONReader.parse(Array(text.utf8))
        } catch {
            throw SocketRefusal(id: nil, problem: .badRequest("malformed JSON at byte \(error.offset): \(error.message)"))
        }
        guard case let .object(members) = value else {
            throw SocketRefusal(id: nil, problem: .badRequest("a message must be a JSON object, not \(value.typeName)"))
        }
        var id: String?
        if let given = members["id"] {
            guard case let .string(text) = given, text.utf8.count <= maxIDLength else {
                throw SocketRefusal(id: nil, problem: .badRequest("\"id\" must be a string of at most \(maxIDLength) bytes"))
            }
            id = text
        }
        do throws(BodyError) {
            if let unknown = members.keys.filter({ !["type", "id", "body"].contains($0) }).min() {
                throw BodyError(detail: "the message: unknown field \"\(unknown.prefix(64))\" (it takes only \"body\", \"id\", \"type\")")
            }
            let body = members["body"]
            let change: Change = switch members["type"] {
            case .string("scroll")?:
                .scroll(Self.scrollBody(try RequestBodies.scrollReports(parsed: body)))
            case .string("inset")?: .inset(try RequestBodies.inset(parsed: body))
            case .string("behavior")?: .behavior(try RequestBodies.behavior(parsed: body))
            case .string("disappear")?:
                try { () throws(BodyError) -> Change in
                    try RequestBodies.disappear(parsed: body)
                    return .disappear
                }()
            default:
                throw BodyError(detail: "\"type\" must be \"scroll\", \"inset\", \"behavior\" or \"disappear\"")
            }
            return SocketRequest(id: id, change: change)
        } catch {
            throw SocketRefusal(id: id, problem: .badRequest(error.detail))
        }
    }

    private static func scrollBody(_ reports: [ScrollReport]) -> ScrollBody<ChromeInput> {
        reports.count == 1 ? .report(.scroll(reports[0])) : .batch(reports.map(ChromeInput.scroll))
    }
}

/// A message refused: the client hears why, with its id if it gave one.
struct SocketRefusal: Error {
    var id: String?
    var problem: Problem
}

/// What the server sends on the channel, as JSON text.
enum SocketMessages {
    /// `{"type":"state","etag":…,"state":{…}}`: the session as the event
    /// stream sends it, and its ETag as HTTP gives it (usable in `If-Match`).
    static func state(_ session: Session) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.object { object in
            object.member("type") { $0.string("state") }
            object.member("etag") { $0.string("\"\(session.entityTag)\"") }
            object.member("state") { $0.raw(String(decoding: StateWriter.json(session), as: UTF8.self)) }
        }
        return json.bytes
    }

    /// A change made: the state's ETag, its `lastSeq`, stale reports ignored,
    /// if any, and the state itself, as HTTP answers it: the watchers' copy
    /// of it may come later (Redis publishes after the change) or, for a
    /// slow reader, never (a newer one replaced it).
    static func applied(_ id: String?, _ session: Session, staleReports: Int) -> [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.object { object in
            object.member("type") { $0.string("answer") }
            if let id { object.member("id") { $0.string(id) } }
            object.member("etag") { $0.string("\"\(session.entityTag)\"") }
            if let lastSeq = session.state.lastAppliedSeq { object.member("lastSeq") { $0.number(lastSeq) } }
            if staleReports > 0 { object.member("staleReports") { $0.number(staleReports) } }
            object.member("state") { $0.raw(String(decoding: StateWriter.json(session), as: UTF8.self)) }
        }
        return json.bytes
    }

    /// A refusal: the problem the HTTP route would answer with, as its JSON.
    static func refused(_ refusal: SocketRefusal) -> [UInt8] {
        var json = JSONWriter()
        json.object { object in
            object.member("type") { $0.string("answer") }
            if let id = refusal.id { object.member("id") { $0.string(id) } }
            object.member("problem") { $0.raw(String(decoding: refusal.problem.response.body, as: UTF8.self)) }
        }
        return json.bytes
    }

    /// The session is gone (deleted, or expired): the socket closes after it.
    static func deleted(_ id: SessionID) -> [UInt8] {
        var json = JSONWriter()
        json.object { object in
            object.member("type") { $0.string("deleted") }
            object.member("id") { $0.string(id.description) }
        }
        return json.bytes
    }
}
