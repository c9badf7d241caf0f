import AccessTokens
import Dispatch
import Locking
import MicroHTTPD
import TopChromeCore
import WebSocketFrames

extension WebSocketCloseCode {
    /// The access token that opened the socket has expired: come back with
    /// a new one (401's number in the private range, as graphql-ws has it).
    static let tokenExpired = WebSocketCloseCode(rawValue: 4401)
}

/// One session's WebSocket channel: a watcher of the session (it counts as
/// one, and hears every change, from any replica) and the owner of its
/// socket, which applies the client's changes one at a time, in order.
///
/// Subscribed before the 101 goes out: states that come meanwhile wait as
/// the newest, and the first thing sent is the newest state.
final class SessionSocket: SessionWatcher, WebSocketDelegate, @unchecked Sendable {
    let id: SessionID
    private let store: any SessionStore & SessionChangeFeed
    private let hub: WatcherHub
    /// The access token that opened it, if one did: the revocation cut-off ends it too.
    private let access: AccessToken?
    /// An access token without `write` only follows.
    private let mayWrite: Bool
    /// A client that answers no ping for this long is closed.
    private let silenceLimit: Duration
    /// Messages waiting behind the one being applied, at most.
    static let maxQueued = 64

    private let lock = PthreadLock()
    private var connection: WebSocketConnection?
    private var sent = SentStates()
    /// The newest state, kept until the socket is there to take it.
    private var waiting: Session?
    private var closedEarly = false
    /// The cut-off moved past the token before the socket was there.
    private var revokedEarly = false
    /// The session went before the socket was there: it is told at once.
    private var removed = false
    private var queue: [Result<SocketRequest, SocketRefusal>] = []
    private var applying = false
    private var expiry: DispatchSourceTimer?

    init(id: SessionID, store: any SessionStore & SessionChangeFeed, hub: WatcherHub, access: AccessToken?,
         heartbeatSeconds: Int) {
        self.id = id
        self.store = store
        self.hub = hub
        self.access = access
        mayWrite = access.map { $0.scope.contains(.write) } ?? true
        silenceLimit = .seconds(2 * heartbeatSeconds)
    }

    /// The state the feed read once it listened.
    func start(with session: Session) {
        offer(session, isResynchronization: false)
    }

    /// The socket is there: the newest state goes first, then the client is heard.
    func attach(_ connection: WebSocketConnection, endsAfter seconds: Int64?) {
        lock.withLock {
            self.connection = connection
            if let waiting {
                connection.sendNewest(SocketMessages.state(waiting))
                self.waiting = nil
            }
            if removed {
                connection.send(SocketMessages.deleted(id))
                connection.close(.normal, reason: "the session is gone")
            }
            if closedEarly { connection.close(.goingAway) }
            if revokedEarly { connection.close(.tokenExpired, reason: Self.revoked) }
        }
        if let seconds { end(afterSeconds: seconds) }
    }

    /// The 101 never went out, or the socket could not be taken.
    func abandon() {
        cancelExpiry()
        hub.remove(self, for: id)
    }

    // MARK: The session's side

    func sessionChanged(_ change: SessionChange) -> Bool {
        offer(change.session, isResynchronization: change.isResynchronization)
        return true
    }

    private func offer(_ session: Session, isResynchronization: Bool) {
        lock.withLock {
            guard sent.admit(session.entityTag, isResynchronization: isResynchronization) else { return }
            if let connection {
                connection.sendNewest(SocketMessages.state(session))
            } else {
                waiting = session
            }
        }
    }

    func sessionRemoved(_ id: SessionID) {
        lock.withLock {
            removed = true
            waiting = nil
            connection?.send(SocketMessages.deleted(id))
            connection?.close(.normal, reason: "the session is gone")
        }
    }

    func heartbeat() {
        lock.withLock { connection }?.ping(closingIfSilentFor: silenceLimit)
    }

    /// The server is stopping.
    func close() {
        lock.withLock {
            closedEarly = true
            connection?.close(.goingAway, reason: "the server is stopping")
        }
    }

    /// The cut-off moved past the token's `iat`: the same close as at `exp`,
    /// with its own reason, so a client gets a new token either way.
    func endIfRevoked(by policy: TokenVerifier.Policy) -> Bool {
        guard let access, policy.revokes(issuedAt: access.issuedAt) else { return false }
        lock.withLock {
            revokedEarly = true
            connection?.close(.tokenExpired, reason: Self.revoked)
        }
        cancelExpiry()
        return true
    }

    private static let revoked = "the access token was revoked"

    /// An access token opened the socket: it closes at the token's `exp`.
    private func end(afterSeconds seconds: Int64) {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(wallDeadline: .now() + .seconds(Int(max(seconds, 0))))
        timer.setEventHandler { [self] in
            lock.withLock { connection }?.close(.tokenExpired, reason: "the access token has expired")
            cancelExpiry()
        }
        lock.withLock { expiry = timer }
        timer.resume()
    }

    private func cancelExpiry() {
        let timer = lock.withLock { () -> DispatchSourceTimer? in
            defer { expiry = nil }
            return expiry
        }
        timer?.cancel()
    }

    // MARK: The client's side

    func received(_ message: String, on connection: WebSocketConnection) {
        var request = Result { () throws(SocketRefusal) -> SocketRequest in try SocketRequest.read(message) }
        if case let .success(read) = request, !mayWrite {
            request = .failure(SocketRefusal(id: read.id, problem: AccessGate.insufficientScope))
        }
        let startNow: Bool? = lock.withLock {
            guard queue.count < Self.maxQueued else { return nil }
            queue.append(request)
            defer { applying = true }
            return !applying
        }
        switch startNow {
        case nil: connection.close(.policyViolation, reason: "too many messages waiting")
        case true?: applyQueued(on: connection)
        case false?: break
        }
    }

    /// Applies queued messages in order; one the store answers later
    /// resumes the rest from its answer.
    private func applyQueued(on connection: WebSocketConnection) {
        while let next = lock.withLock({ () -> Result<SocketRequest, SocketRefusal>? in
            guard !queue.isEmpty else {
                applying = false
                return nil
            }
            return queue.removeFirst()
        }) {
            let request: SocketRequest
            switch next {
            case let .failure(refusal):
                connection.send(SocketMessages.refused(refusal))
                continue
            case let .success(read):
                request = read
            }
            switch apply(request.change) {
            case let .now(result):
                answer(request.id, result, on: connection)
            case let .later(later):
                let requestID = request.id
                later.whenAnswered { [self] result in
                    answer(requestID, result, on: connection)
                    applyQueued(on: connection)
                }
                return
            }
        }
    }

    private func apply(_ change: SocketRequest.Change) -> StoreAnswer<StoreOutcome> {
        switch change {
        case let .scroll(.report(input)): store.requestApply(input, to: id, if: .always)
        case let .scroll(.batch(inputs)): store.requestApply(inputs, to: id, if: .always)
        case let .inset(inset): store.requestApply(.setInset(inset), to: id, if: .always)
        case let .behavior(settings): store.requestApply(.setBehavior(settings), to: id, if: .always)
        case .disappear: store.requestApply(.disappear, to: id, if: .always)
        }
    }

    private func answer(_ requestID: String?, _ result: Result<StoreOutcome, StoreError>, on connection: WebSocketConnection) {
        do throws(Problem) {
            switch try SessionAPI.value(result) {
            case let .done(session, staleReports):
                // Asked for: an id given. The state itself comes as every watcher's does.
                if requestID != nil || staleReports > 0 {
                    connection.send(SocketMessages.applied(requestID, session, staleReports: staleReports))
                }
            case .conditionFailed: throw SessionAPI.preconditionFailed
            case .notFound: throw SessionAPI.unknownSession
            }
        } catch {
            connection.send(SocketMessages.refused(SocketRefusal(id: requestID, problem: error)))
        }
    }

    func ended(_ connection: WebSocketConnection, code: WebSocketCloseCode) {
        cancelExpiry()
        lock.withLock {
            self.connection = nil
            queue = []
        }
        hub.remove(self, for: id)
    }
}
