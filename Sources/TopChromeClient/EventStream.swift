import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ChromeSession {
    /// The session's states as the service announces them: the current one
    /// first, then every change, each version once and in order. The stream
    /// reconnects after network errors and restarts of the service (with
    /// `Last-Event-ID`, so nothing is sent twice), ends when the session is
    /// deleted (also when that is found on reconnecting), and throws
    /// `TopChromeError.sessionGone` if it did not exist when the stream
    /// opened. Cancelling the task that reads it closes the connection.
    public nonisolated func states() -> AsyncThrowingStream<SessionState, any Error> {
        states(onConnection: { _ in })
    }

    /// `states()`, telling `onConnection` each time the event stream opens
    /// and each time an attempt fails or an open stream is cut, so a caller
    /// can show that it is offline rather than merely quiet (and give up
    /// if it will). The stream itself keeps reconnecting as `states()` does.
    public nonisolated func states(
        onConnection: @escaping @Sendable (StreamConnectionEvent) -> Void
    ) -> AsyncThrowingStream<SessionState, any Error> {
        states(onConnection: onConnection, onWait: { _ in })
    }

    /// `states(onConnection:)`, also telling `onWait` how many seconds it
    /// waits before each new attempt. A reader that falls behind by more
    /// than `stateBufferLimit` states skips the oldest: the newest state wins.
    package nonisolated func states(
        onConnection: @escaping @Sendable (StreamConnectionEvent) -> Void,
        onWait: @escaping @Sendable (Double) -> Void
    ) -> AsyncThrowingStream<SessionState, any Error> {
        let (stream, output) = AsyncThrowingStream.makeStream(
            of: SessionState.self, bufferingPolicy: .bufferingNewest(max(1, client.configuration.stateBufferLimit)))
        let follower = StateFollower(session: self, onConnection: onConnection, onWait: onWait)
        let task = Task { await follower.run(into: output) }
        output.onTermination = { _ in task.cancel() }
        return stream
    }
}

/// What happened to the connection of a session's event stream.
public enum StreamConnectionEvent: Sendable, Hashable {
    /// The service answered and the stream is open: the first time, or
    /// again after it was cut.
    case connected
    /// An attempt to open the stream failed (no connection, 503, 429), or
    /// the open stream was cut; another attempt follows after a backoff.
    /// `failedAttempts` counts them since the stream was last open, 1 for
    /// the first: a new outage starts at 1. A stream the service ends
    /// cleanly (it is restarting, say) is reopened without this, unless
    /// reopening fails.
    case interrupted(TopChromeError, failedAttempts: Int)
}

/// Keeps one event stream of a session open and turns its events into states.
struct StateFollower: Sendable {
    let session: ChromeSession
    var onConnection: @Sendable (StreamConnectionEvent) -> Void = { _ in }
    var onWait: @Sendable (Double) -> Void = { _ in }
    var client: ChromeService { session.client }

    func run(into output: AsyncThrowingStream<SessionState, any Error>.Continuation) async {
        guard let key = await session.register(output) else { return }
        do {
            try await follow(into: output)
            output.finish()
        } catch {
            output.finish(throwing: error)
        }
        await session.unregister(key)
    }

    /// A reconnection names the last event it has, so the service does not
    /// send that state again.
    func request(lastEventID: String, refusedToken: String? = nil) async throws -> URLRequest {
        var request = try await client.request("GET", "v1/sessions/\(session.id)/events", refusedToken: refusedToken)
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        // Silence is `StreamIdleWatch`'s to judge, with the limit the service names.
        request.timeoutInterval = Self.never
        if !lastEventID.isEmpty { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
        return request
    }

    private func follow(into output: AsyncThrowingStream<SessionState, any Error>.Continuation) async throws {
        var parser = ServerSentEventParser()
        /// The last state yielded, and its event id (`<version>.<tag>`).
        var lastYielded: (id: String, state: SessionState)?
        // The backoff starts again only after a connection that stayed up
        // `stableConnectionInterval`: an answer that is cut at once (a
        // proxy, a captive portal, a crashing server) is retried ever more
        // slowly, not every few hundred milliseconds forever.
        var retry = 0
        var failures = 0
        /// The heartbeat's interval the service last named, in seconds.
        var heartbeat: Double?
        let configuredIdleLimit = client.configuration.streamIdleTimeout
        /// The token the service refused or the last stream ended with: the
        /// next connection asks for a new one.
        var refusedToken: String?
        let tokensRenew = if case .provider = client.token { true } else { false }
        /// Waits before the next attempt, the backoff grown unless the last
        /// connection stayed up `stableConnectionInterval`.
        func waitBeforeNext(_ interruption: TopChromeError?, connectedAt: ContinuousClock.Instant?, retryAfter: Double?) async throws {
            if let connectedAt, ContinuousClock.now - connectedAt >= .seconds(client.configuration.stableConnectionInterval) {
                retry = 0
            }
            if let interruption {
                failures += 1
                onConnection(.interrupted(interruption, failedAttempts: failures))
                client.log("session \(session.id): event stream interrupted (\(interruption))")
            }
            var policy = client.configuration.retry
            if let milliseconds = parser.reconnectionTime {
                // `retry:` sets the first delay; the backoff grows from it.
                policy.initialDelay = min(Double(milliseconds) / 1000, policy.maximumDelay)
            }
            let delay = policy.delay(retry: retry, retryAfter: retryAfter, random: Double.random(in: 0..<1))
            onWait(delay)
            try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            retry += 1
        }
        while true {
            try Task.checkCancellation()
            if await session.mayOpenSocket {
                let renewing = refusedToken
                refusedToken = nil
                switch try await followOverSocket(refusedToken: renewing, lastYielded: &lastYielded, into: output) {
                case .deleted:
                    return
                case let .tokenEnded(token) where renewing == nil:
                    refusedToken = token
                    continue
                case .tokenEnded:
                    // Refused again with a new token: the event stream's answer says why.
                    break
                case .notOffered:
                    break
                case let .cut(interruption, connectedAt):
                    if connectedAt != nil { failures = 0 }
                    try await waitBeforeNext(interruption, connectedAt: connectedAt, retryAfter: nil)
                    continue
                }
            }
            let request: URLRequest
            let renewing = refusedToken != nil
            do {
                request = try await self.request(lastEventID: parser.lastEventID, refusedToken: refusedToken)
                refusedToken = nil
            } catch let error as CancellationError {
                throw error
            } catch {
                throw TopChromeError.rejected(Problem(status: 401, detail: "no token: \(error)"))
            }
            parser.startNewStream()

            var retryAfter: Double?
            var interruption: TopChromeError?
            var connectedAt: ContinuousClock.Instant?
            let connection = EventStreamConnection(request, bufferLimit: 1024)
            var idleWatch = StreamIdleWatch(connection)
            idleWatch.restart(seconds: StreamIdleLimit.seconds(configured: configuredIdleLimit, heartbeat: heartbeat), answered: false)
            defer {
                idleWatch.stop()
                connection.close()
            }
            do {
                var status: Int?
                var refusal = Data()
                var tokenEnded = false
                reading: for try await piece in connection.pieces {
                    if case let .head(200, _, _, heartbeatHeader, _) = piece, let named = StreamIdleLimit.heartbeat(header: heartbeatHeader) {
                        heartbeat = named
                    }
                    idleWatch.restart(seconds: StreamIdleLimit.seconds(configured: configuredIdleLimit, heartbeat: heartbeat),
                                      answered: true)
                    switch piece {
                    case let .head(code, retryAfterHeader, contentType, _, challenge):
                        status = code
                        // Refused at the door (expired, revoked, rotated): once with a new one.
                        if tokensRenew, !renewing, ChromeService.refusesTokenAsInvalid(status: code, challenge: challenge) {
                            tokenEnded = true
                            break reading
                        }
                        retryAfter = retryAfterHeader.flatMap(ChromeService.seconds(retryAfter:))
                        if code == 200 {
                            // Anything but an event stream is not the service
                            // (a captive portal's page, a proxy's answer): a failure.
                            guard Self.isEventStream(contentType) else {
                                throw TopChromeError.malformedResponse(
                                    "the event stream's answer is \(contentType ?? "untyped"), not text/event-stream")
                            }
                            connectedAt = .now
                            failures = 0
                            onConnection(.connected)
                        }
                    case let .body(data) where status == 200:
                        for event in parser.feed(data) {
                            switch event.type {
                            case "state":
                                let state = try ChromeService.decodeState(Data(event.data.utf8))
                                // By id, not version, and inequality, not "greater than": a
                                // service restored from an older state file or a Redis
                                // failover counts again from a lower version, or names
                                // another state with a version already seen, and its state
                                // is still the truth to show. A restart renames every state:
                                // the one already shown, under a new id, is not shown again.
                                if event.lastEventID != lastYielded?.id {
                                    await session.learn(state)
                                    if state != lastYielded?.state { output.yield(state) }
                                    lastYielded = (event.lastEventID, state)
                                }
                            case "deleted":
                                return
                            case "expired":
                                // The service ends a stream when its token
                                // expires: on at once with a new one, from
                                // the last event, so no state is missed.
                                tokenEnded = true
                                break reading
                            default:
                                break
                            }
                        }
                    case let .body(data):
                        refusal.append(data)
                    }
                }
                if tokenEnded {
                    refusedToken = ChromeService.bearerToken(of: request) ?? ""
                    continue
                }
                switch status.map({ ChromeService.classify(status: $0, body: refusal, sessionID: session.id, retryAfter: nil) }) {
                case .failure(.sessionGone) where lastYielded != nil:
                    // Deleted (or expired) while the stream was cut: the
                    // end its `deleted` event would have brought.
                    return
                case let .failure(error):
                    if case .sessionGone = error { await session.streamFoundSessionGone() }
                    throw error
                case let .retryable(error, _):
                    interruption = error
                case .success, nil:
                    interruption = nil
                }
            } catch let error as TopChromeError {
                // An answer that is not the service's (not an event stream, a
                // state that does not read) is a failure to retry with backoff.
                guard case .malformedResponse = error else { throw error }
                try Task.checkCancellation()
                interruption = error
            } catch {
                // The connection failed or was cut: reconnect, unless the reader left.
                try Task.checkCancellation()
                interruption = .transport(error)
            }
            try await waitBeforeNext(interruption, connectedAt: connectedAt, retryAfter: retryAfter)
        }
    }

    /// "Never" as a timeout URLSession takes: a year, since FoundationNetworking
    /// traps on an infinite one (converting it to whole milliseconds).
    static let never: Double = 365 * 86_400

    /// `text/event-stream`, with or without parameters, in any case.
    static func isEventStream(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream"
    }
}
