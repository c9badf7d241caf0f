#if canImport(Glibc)
import Glibc
#endif
import MemorySessionStore
import MicroHTTPD
import StrictJSON
import TopChromeServer
import TopChromeCore
import TopChromeTesting

/// The real service, never started: requests go straight to its `SessionAPI`.
/// Small limits, so that every limit is within a fuzzer's reach.
final class Harness: Sendable {
    /// Open, as by default.
    static let open = Harness(authToken: nil)
    /// With `--auth-token`: every /v1 request needs `Authorization: Bearer fuzz-token`.
    static let guarded = Harness(authToken: "fuzz-token")

    let configuration: ServiceConfiguration
    let service: TopChromeService
    /// Entity tags compared as strings (RFC 9110), so `"03"` does not match
    /// version 3; `TOPCHROME_FUZZ_LENIENT_ETAGS=1` accepts the numeric reading.
    let strictTags: Bool

    private init(authToken: String?) {
        var configuration = ServiceConfiguration()
        configuration.limits.maxSessions = 4
        configuration.limits.maxBodyBytes = 3000
        configuration.sessions.ttl = 0
        configuration.limits.maxWatchers = 3
        configuration.limits.maxWatchersPerSession = 2
        // Long-polls end within a second, so their timers do not pile up.
        configuration.limits.maxWaitSeconds = 1
        configuration.auth.token = authToken
        // The model keeps no clock: inputs create sessions thousands of
        // times a second, so the creation limit (its own tests) is off.
        configuration.limits.createRate = 0
        self.configuration = configuration
        service = TopChromeService(configuration: configuration)
        strictTags = getenv("TOPCHROME_FUZZ_LENIENT_ETAGS").map { String(cString: $0) } != "1"
    }

    var store: InMemorySessionStore { service.backend.memoryStore! }
}

/// What a request came to.
enum Outcome: Hashable, CustomStringConvertible {
    case status(Int)
    case pending
    case stream

    var description: String {
        switch self {
        case let .status(code): String(code)
        case .pending: "pending (long-poll)"
        case .stream: "stream"
        }
    }
}

/// One input's sessions and the requests run against them.
///
/// Before the first request: `{s0}` is a new session (inset 0, revealed,
/// version 1); `{s1}` has scrolled down with seq 10 and had its inset set
/// to 47 (hidden, version 3, last seq 10); `{gone}` was created and deleted;
/// `{new}` is the last session a request created (else `{gone}`). The
/// store also holds a session under the all-zero id, which no request can
/// name: were a malformed id to stand in for some id, that is the session
/// it would reach, and the model requires that it is never changed.
/// Afterwards every session is deleted; all long-polls must then be
/// answered, all streams finished and no watcher left.
struct World {
    let harness: Harness
    let s0: SessionID
    let s1: SessionID
    let gone: SessionID
    /// The all-zero id, refused by every parser; planted behind the API's back.
    static let unnameable = SessionID(high: 0, low: 0)
    private(set) var known: [SessionID]
    private(set) var newest: SessionID?
    private var pendings: [PendingResponse] = []
    private var streams: [ResponseStream] = []
    private var store: InMemorySessionStore { harness.store }

    init(_ harness: Harness) {
        self.harness = harness
        let store = harness.store
        check(store.count == 0, "sessions left over from the previous input: \(store.count)")
        check(harness.service.watcherCount == 0, "watchers left over from the previous input")
        do {
            s0 = try store.create(inset: 0).id
            s1 = try store.create(inset: 59).id
            gone = try store.create(inset: 0).id
        } catch {
            fail("cannot create the fixture sessions: \(error)")
        }
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 500, seq: 10)), .setInset(47)], to: s1)
        _ = store.remove(gone)
        do {
            try store.restore([Session(id: World.unnameable, state: ChromeState(inset: 0), tag: store.epoch)])
        } catch {
            fail("cannot plant the all-zero session: \(error)")
        }
        check(store.session(s1)?.state == ChromeState(inset: 47, isRevealed: false, version: 3, lastAppliedSeq: 10),
              "fixture session s1 is not as documented: \(String(describing: store.session(s1)))")
        known = [s0, s1, World.unnameable]
    }

    func expand(_ text: String) -> String {
        guard text.contains("{") else { return text }
        return text.replacingOccurrences(of: "{s0}", with: s0.description)
            .replacingOccurrences(of: "{s1}", with: s1.description)
            .replacingOccurrences(of: "{gone}", with: gone.description)
            .replacingOccurrences(of: "{new}", with: (newest ?? gone).description)
            .replacingOccurrences(of: "{epoch}", with: epoch)
    }

    /// The store's tag, which every ETag it gives carries: scripts write `"3.{epoch}"`.
    var epoch: String { String(decoding: store.epoch.hex, as: UTF8.self) }

    /// The ETag's text (unquoted) for `state` in this store.
    func etag(_ state: ChromeState) -> String { "\(state.version).\(epoch)" }

    /// Runs one request through the real API and checks the answer against
    /// the model; false when the server closes the connection after it, so
    /// nothing that follows on it is read.
    @discardableResult
    mutating func perform(_ scripted: ScriptedRequest) -> Bool {
        let configuration = harness.configuration
        let headers = scripted.headers.map { ($0.0, expand($0.1)) }
        let tooLarge = scripted.body.count > configuration.limits.maxBodyBytes
        let request = MicroHTTPDRequest(
            method: scripted.method, path: expand(scripted.path), version: scripted.version,
            headers: HTTPHeaders(headers), body: tooLarge ? [] : scripted.body, isBodyTooLarge: tooLarge)
        let body = scripted.body
        // Built only when a check fails: most requests pass.
        let context = { World.describe(request, tooLarge: tooLarge, originalBody: body) }

        let resource = HTTPModel.resource(request.path)
        let target = resource?.1
        var before: [SessionID: ChromeState] = [:]
        for id in known + (target.map { [$0] } ?? []) { before[id] = store.session(id)?.state }
        let countBefore = store.count
        let watchersBefore = harness.service.watcherCount
        let expected = expectedOutcomes(request, resource: resource, state: target.flatMap { before[$0] },
                                        count: countBefore, watchers: watchersBefore)

        // The server refuses some heads before the API sees them (MicroHTTPD's access handler).
        let fault = request.headers.headFault(version: request.version)
        if fault == nil {
            check(FramingModel.readings(headers, version: request.version).count == 1,
                  "a head whose body could be read more than one way went to the API: bytes of its body could be routed as a request\n\(context())")
        }
        let response = fault.map { MicroHTTPDResponse.complete(harness.service.api.refusal(of: $0)) } ?? harness.service.api.respond(to: request)

        // HEAD of a stream is its headers alone: a status, not a stream.
        let outcome: Outcome = response.pending != nil ? .pending
            : response.stream != nil && request.method != "HEAD" ? .stream : .status(response.status)
        check(expected.contains(outcome),
              "answered \(outcome), the model expects one of \(expected.map(\.description).sorted())\n\(context())\n\(World.describe(response))")
        checkHeaders(response, context)

        var after: [SessionID: ChromeState] = [:]
        for id in before.keys { after[id] = store.session(id)?.state }
        /// Every session but `except` is as it was.
        func othersUnchanged(except changed: SessionID?) {
            for (id, state) in before where id != changed {
                check(after[id] == state, "session \(id) changed from \(state) to \(String(describing: after[id])) "
                      + "though the request answered \(outcome)\n\(context())")
            }
        }

        if let (kind, id) = resource, kind.namesSession, id == nil {
            // A head refused for its framing is answered before the path is read.
            check(fault != nil || outcome == .status(404) || outcome == .status(405) || outcome == .status(401)
                  || outcome == .status(400) || outcome == .status(413),
                  "a malformed id answered \(outcome)\n\(context())")
            check(store.session(World.unnameable)?.state == before[World.unnameable],
                  "a malformed id changed the all-zero session\n\(context())")
        }

        switch outcome {
        case let .status(status) where status >= 400:
            othersUnchanged(except: nil)
            check(store.count == countBefore, "a refused request changed the number of sessions\n\(context())")
            checkProblem(response, status: status, resource: resource?.0, context)
        case .status(201):
            othersUnchanged(except: nil)
            check(store.count == countBefore + 1, "201 without a new session\n\(context())")
            guard let location = response.headers["Location"], location.hasPrefix("/v1/sessions/"),
                  let id = HTTPModel.sessionID(location.utf8.dropFirst("/v1/sessions/".utf8.count)),
                  let state = store.session(id)?.state else {
                fail("201 without a Location of a session that exists\n\(context())\n\(World.describe(response))")
            }
            let asked = BodyModel.newSession(request.body)
            check(state == asked, "new session is \(state), the body asked for \(String(describing: asked))\n\(context())")
            checkState(response, id: id, state: state, context)
            known.append(id)
            newest = id
        case .status(204):
            guard let id = target else { fail("204 for no session\n\(context())") }
            othersUnchanged(except: id)
            check(after[id] == nil, "204 but the session is still there\n\(context())")
            check(store.count == countBefore - 1, "204 but the number of sessions went from \(countBefore) to \(store.count)")
            check(response.body.isEmpty, "204 with a body\n\(context())")
        case .status(200), .status(304):
            guard let (kind, id) = resource else { fail("\(outcome) for no resource\n\(context())") }
            if let type = kind.contentType {
                // Not a session's state: health, readiness, openapi.yaml, metrics, the demo page, HEAD of events.
                othersUnchanged(except: nil)
                check(response.headers["Content-Type"] == type, "Content-Type is not \(type)\n\(context())\n\(World.describe(response))")
                return true
            }
            guard let id else { fail("\(outcome) for a malformed id\n\(context())") }
            guard let state = after[id] else { fail("answered \(outcome) for a session that is gone\n\(context())") }
            let expectedState = expectedState(kind, request: request, before: before[id]!)
            check(state == expectedState, "session is \(state), the model expects \(expectedState)\n\(context())")
            othersUnchanged(except: id)
            checkState(response, id: id, state: state, context)
        case .status(101):
            // The socket's watch ends when the answer is let go without its 101 sent, as here.
            othersUnchanged(except: nil)
            check(response.headers["Sec-WebSocket-Accept"] != nil, "a 101 without Sec-WebSocket-Accept\n\(context())")
        case .pending:
            othersUnchanged(except: nil)
            if let pending = response.pending { pendings.append(pending) }
        case .stream:
            othersUnchanged(except: nil)
            if let stream = response.stream {
                check(stream.isOpen, "a new event stream is already closed\n\(context())")
                streams.append(stream)
            }
        default:
            fail("unexpected outcome \(outcome)\n\(context())")
        }
        return fault == nil
    }

    /// Deletes every session, then checks nothing is left waiting.
    mutating func tearDown() {
        for id in known { _ = store.remove(id) }
        check(store.count == 0, "sessions left after deleting all known ones: \(store.count)")
        check(harness.service.watcherCount == 0,
              "\(harness.service.watcherCount) watchers still registered after every session was deleted")
        for pending in pendings {
            check(pending.isCompleted, "a long-poll of a deleted session was never answered")
        }
        for stream in streams {
            check(!stream.isOpen, "an event stream of a deleted session is still open")
            // The server breaks the stream's reference to its watcher when it
            // releases the response; without a server, do it here.
            stream.onClose {}
        }
        pendings = []
        streams = []
    }

    // MARK: The model

    private func expectedOutcomes(
        _ request: MicroHTTPDRequest, resource: (HTTPModel.Resource, SessionID?)?, state: ChromeState?,
        count: Int, watchers: Int
    ) -> Set<Outcome> {
        let headers = request.headers.fields.map { ($0.name, $0.value) }
        let strict = harness.strictTags
        let capacity = harness.configuration.limits.maxSessions
        return Chooser.all { choose -> Outcome in
            if let status = FramingModel.refusal(headers, version: request.version) { return .status(status) }
            if let token = harness.configuration.auth.token, request.path == "/v1" || request.path.hasPrefix("/v1/"),
               !choose(HTTPModel.authorized(HTTPModel.header(headers, "Authorization"), token: token)) {
                return .status(401)
            }
            guard let (kind, id) = resource else { return .status(404) }
            // HEAD is GET without a body, but for the socket: an upgrade has no head to show.
            let method = request.method == "HEAD" && kind.allowed.contains("GET") && kind != .socket ? "GET" : request.method
            guard kind.allowed.contains(method) else { return .status(405) }
            // The harness mints nothing (no --token-signing-key), so its paths
            // are 404 to their methods, before the body is looked at.
            if kind.isMinting { return .status(404) }
            if request.isBodyTooLarge { return .status(413) }
            // A malformed id names nothing: 404 before the body is read as JSON.
            if kind.namesSession, id == nil { return .status(404) }
            if kind.takesBody {
                if !request.body.isEmpty, let type = HTTPModel.header(headers, "Content-Type"),
                   !choose(HTTPModel.isJSON(type)) { return .status(415) }
                let valid = switch kind {
                case .sessions: BodyModel.newSession(request.body) != nil
                case .inset: BodyModel.inset(request.body) != nil
                case .behavior: BodyModel.behavior(request.body) != nil
                case .scroll: BodyModel.scroll(request.body) != nil
                default: BodyModel.disappear(request.body)
                }
                guard valid else { return .status(400) }
            }
            let ifMatch = HTTPModel.combined(headers, "If-Match")
            let ifNoneMatch = HTTPModel.combined(headers, "If-None-Match")
            // Entity tags are read by the operations on a session, before it is looked up.
            if [.session, .inset, .behavior, .scroll, .disappear].contains(kind),
               !choose(HTTPModel.tagsWellFormed(ifMatch)) || !choose(HTTPModel.tagsWellFormed(ifNoneMatch)) {
                return .status(400)
            }
            switch kind {
            case .health, .readiness, .openAPI, .metrics, .demo:
                return .status(200)
            case .tokens, .keySet:
                return .status(404)  // not reached: answered with the method
            case .sessions:
                return .status(count >= capacity ? 503 : 201)
            case .socket:
                // The handshake is read before the session is looked up; a socket counts as a watcher.
                if let refusal = HTTPModel.handshakeRefusal(headers) { return .status(refusal) }
                guard state != nil else { return .status(404) }
                return watchers > 0 && choose(.either) ? .status(503) : .status(101)
            case .events:
                guard state != nil else { return .status(404) }
                if method != request.method { return .status(200) }  // HEAD: the headers, no stream
                return watchers > 0 && choose(.either) ? .status(503) : .stream
            case .session where method == "GET":
                guard let state else { return .status(404) }
                // A long-poll (`Prefer: wait` with If-None-Match) subscribes
                // before it reads, on both stores: 503 at the watchers' limit;
                // then If-Match is checked against the state the feed read
                // (412 at once from a store in this process); else whatever
                // it answers comes through the wait.
                if ifNoneMatch != nil, choose(HTTPModel.wantsWait(HTTPModel.combined(headers, "Prefer"))) {
                    if watchers > 0 && choose(.either) { return .status(503) }
                    guard choose(HTTPModel.ifMatchHolds(ifMatch, etag: etag(state), strictTags: strict)) else {
                        return .status(412)
                    }
                    return .pending
                }
                guard choose(HTTPModel.ifMatchHolds(ifMatch, etag: etag(state), strictTags: strict)) else {
                    return .status(412)
                }
                if choose(HTTPModel.ifNoneMatchHolds(ifNoneMatch, etag: etag(state), strictTags: strict)) {
                    return .status(200)
                }
                guard choose(HTTPModel.wantsWait(HTTPModel.combined(headers, "Prefer"))) else { return .status(304) }
                return watchers > 0 && choose(.either) ? .status(503) : .pending
            case .session, .inset, .behavior, .scroll, .disappear:
                guard let state else { return .status(404) }
                guard choose(HTTPModel.ifMatchHolds(ifMatch, etag: etag(state), strictTags: strict)),
                      choose(HTTPModel.ifNoneMatchHolds(ifNoneMatch, etag: etag(state), strictTags: strict)) else {
                    return .status(412)
                }
                return .status(kind == .session ? 204 : 200)
            }
        }
    }

    private func expectedState(_ kind: HTTPModel.Resource, request: MicroHTTPDRequest, before: ChromeState) -> ChromeState {
        StateModel.after(kind, body: request.body, before: before, threshold: harness.configuration.sessions.revealThreshold)
    }
}
