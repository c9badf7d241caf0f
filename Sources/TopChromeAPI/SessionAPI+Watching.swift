import AccessTokens
import MicroHTTPD
import TopChromeCore

/// Requests that watch a session: long-polls and event streams. Each
/// subscribes first, then starts from the state the feed answers with once
/// it listens to the session (at once in this process, later from Redis):
/// no change can fall between.
extension SessionAPI {
    /// A long-poll: answers when the session reaches a version the client
    /// does not have, or with 304 when the time is up. Holds no thread
    /// meanwhile. The preconditions are checked against the state the feed read.
    func waitForChange(of id: SessionID, _ preconditions: Preconditions, seconds: Int, access: AccessToken?,
                       endpoint: Int) throws(Problem) -> MicroHTTPDResponse {
        let watcher = LongPollWatcher(id: id, isNew: preconditions.noneMatchCondition, waitSeconds: seconds, access: access)
        try watch(id, by: watcher, answering: watcher.pending) { [watchers, accessGate] current throws(Problem) in
            guard preconditions.matchCondition.holds(for: current.entityTag) else { throw Self.preconditionFailed }
            watcher.start(with: current, hub: watchers)
            Self.endIfRevokedMeanwhile(watcher, accessGate, watchers)
        }
        // A client that left frees its watcher's place now, not at the end of
        // its wait. Only once the watch is on: the handler holds the watcher
        // that holds the answer until the answer comes, and a watch refused
        // here (too many watchers) never gets one; the request is not
        // suspended before this returns, so no departure is missed.
        watcher.pending.onClientLeft { [watchers] in watchers.remove(watcher, for: id) }
        return .later(watcher.pending, endpoint: endpoint)
    }

    /// Server-Sent Events: the current state at once, then every change.
    /// `endsAfter`: seconds until the access token that opened it expires.
    func eventStream(of id: SessionID, lastEventID: String?, access: AccessToken?, endsAfter: Int64?,
                     endpoint: Int) throws(Problem) -> MicroHTTPDResponse {
        let lastEventID = lastEventID.flatMap { EntityTag($0.trimmingOWS.utf8) }
        let stream = ResponseStream()
        let watcher = EventStreamWatcher(id: id, stream: stream, access: access)
        // Only for a stream that goes out: the server closes it, which ends
        // the watch; one that never goes out would hold its watcher (and
        // through it the store) forever.
        let response: @Sendable () -> StreamingResponse = { [watchers, eventStreamHeaders, accessGate] in
            stream.onClose {
                watcher.cancelExpiry()
                watchers.remove(watcher, for: id)
            }
            if let endsAfter { watcher.end(afterSeconds: endsAfter) }
            Self.endIfRevokedMeanwhile(watcher, accessGate, watchers)
            var response = StreamingResponse(status: 200, headers: eventStreamHeaders, stream: stream)
            response.endpoint = endpoint
            return response
        }
        switch try subscribe(watcher, to: id) {
        case let .now(result):
            let current = try started(watcher, of: id, result)
            watcher.start(with: current, lastEventID: lastEventID)
            return .stream(response())
        case let .later(answer):
            let pending = PendingResponse()
            answer.whenAnswered { [watchers] result in
                do throws(Problem) {
                    let current = try Self.started(watcher, of: id, result, hub: watchers)
                    watcher.start(with: current, lastEventID: lastEventID)
                    pending.complete(with: response())
                } catch {
                    pending.complete(with: error.response)
                }
            }
            return .later(pending, endpoint: endpoint)
        }
    }

    /// A cut-off that moved between the token's check and the watch's start
    /// found no watch to end: the watch, subscribed now, looks for itself.
    static func endIfRevokedMeanwhile(_ watcher: any SessionWatcher, _ accessGate: AccessGate?, _ hub: WatcherHub) {
        if let accessGate, watcher.endIfRevoked(by: accessGate.policy) { hub.remove(watcher, for: watcher.id) }
    }

    /// Subscribes the watcher; `start` runs with the session once the feed
    /// listens to it. If there is none, the store failed, or `start` throws,
    /// the watch ends: at once, the problem is thrown; later, `pending`
    /// answers with it.
    private func watch(_ id: SessionID, by watcher: any SessionWatcher, answering pending: PendingResponse,
                       start: @escaping @Sendable (Session) throws(Problem) -> Void) throws(Problem) {
        switch try subscribe(watcher, to: id) {
        case let .now(result):
            try start(started(watcher, of: id, result))
        case let .later(answer):
            answer.whenAnswered { [watchers] result in
                do throws(Problem) {
                    try start(Self.started(watcher, of: id, result, hub: watchers))
                } catch {
                    watchers.remove(watcher, for: id)
                    pending.complete(with: error.response)
                }
            }
        }
    }

    /// Subscribes the watcher, unless the server is stopping.
    func subscribe(_ watcher: any SessionWatcher, to id: SessionID) throws(Problem) -> StoreAnswer<Session?> {
        // Stopping: watchers are being closed; a new one would be cut off at once.
        guard isReady else { throw Self.shuttingDown }
        do {
            return try store.requestSubscribe(watcher, to: id)
        } catch {
            throw Self.refused(error)
        }
    }

    /// The session a watch starts from; without one (none, or the store
    /// failed) the watch ends and the problem is thrown.
    func started(_ watcher: any SessionWatcher, of id: SessionID,
                         _ result: Result<Session?, StoreError>) throws(Problem) -> Session {
        try Self.started(watcher, of: id, result, hub: watchers)
    }

    static func started(_ watcher: any SessionWatcher, of id: SessionID, _ result: Result<Session?, StoreError>,
                                hub: WatcherHub) throws(Problem) -> Session {
        do throws(Problem) {
            guard let current = try value(result) else { throw unknownSession }
            return current
        } catch {
            hub.remove(watcher, for: id)
            throw error
        }
    }

    private static func refused(_ refusal: SubscriptionRefusal) -> Problem {
        let detail = switch refusal {
        case let .tooManySubscribers(limit): "The server has its maximum of \(limit) watchers; try again later."
        case let .tooManyForSession(limit): "This session has its maximum of \(limit) watchers; try again later."
        }
        // The connection is closed too: a client refused a watcher would
        // otherwise hold a connection the descriptor budget keeps for requests.
        return Problem(status: 503, detail: detail,
                       headers: [("Retry-After", String(Self.retryAfterWhenWatched)), ("Connection", "close")])
    }

    /// An event stream's answer to HEAD. An endless body has no length to
    /// state (RFC 9110 §8.6): a stream, ended before it began.
    static func emptyEventStream(_ headers: HTTPHeaders) -> StreamingResponse {
        let stream = ResponseStream()
        stream.finish()
        return StreamingResponse(status: 200, headers: headers, stream: stream)
    }

    /// `X-Accel-Buffering: no` keeps reverse proxies (nginx) from holding events back.
    static func eventStreamHeaders(heartbeatSeconds: Int) -> HTTPHeaders {
        HTTPHeaders([
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
            ("TopChrome-Heartbeat", String(heartbeatSeconds)),
        ])
    }
}
