import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Following over the session's WebSocket: its first message is the state
/// now, then every change, as the event stream sends them; while it is
/// open the session's changes go on it too.
extension StateFollower {
    /// How a socket's round ended.
    enum SocketEnd {
        /// The session is gone (its `deleted` message).
        case deleted
        /// No socket here this round: the event stream instead.
        case notOffered
        /// The token was refused at the upgrade or expired (4401): again with a new one.
        case tokenEnded(String)
        /// The socket was cut (`nil`: the service closed it cleanly, stopping).
        case cut(TopChromeError?, connectedAt: ContinuousClock.Instant?)
    }

    /// Statuses the event stream's request sorts out as it does for itself
    /// (a refused token, a session gone, the service busy): only other
    /// refusals of the upgrade (a proxy's) say there is no socket here.
    private static let refusalsOfTheService: Set<Int> = [401, 403, 404, 429, 503]

    func followOverSocket(refusedToken: String?, lastYielded: inout (id: String, state: SessionState)?,
                          into output: AsyncThrowingStream<SessionState, any Error>.Continuation) async throws -> SocketEnd {
        var request = try await client.request("GET", "v1/sessions/\(session.id)/socket", refusedToken: refusedToken)
        request.url = request.url.flatMap(Self.webSocketURL)
        request.timeoutInterval = Self.never
        let token = ChromeService.bearerToken(of: request) ?? ""
        let socket = client.openSocket(request)
        let link = SessionSocketLink(socket, sessionID: session.id, answerTimeout: client.configuration.requestTimeout)
        var connectedAt: ContinuousClock.Instant?
        let end: SocketEnd
        do {
            end = try await withTaskCancellationHandler {
                while true {
                    let text = try await socket.receive()
                    guard let message = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                        throw TopChromeError.malformedResponse("a socket message that is not a JSON object: \(text.prefix(200))")
                    }
                    switch message["type"] as? String {
                    case "state":
                        if connectedAt == nil {
                            connectedAt = .now
                            await session.socketOpened(link)
                            onConnection(.connected)
                        }
                        guard let body = message["state"], let etag = message["etag"] as? String else {
                            throw TopChromeError.malformedResponse("a state message without its state or etag")
                        }
                        let state = try ChromeService.decodeState(try JSONSerialization.data(withJSONObject: body))
                        // The ETag's inside is the event stream's event id: the
                        // same state is not shown twice across the two.
                        let id = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                        if id != lastYielded?.id {
                            await session.learn(state)
                            if state != lastYielded?.state { output.yield(state) }
                            lastYielded = (id, state)
                        }
                    case "answer":
                        if let id = message["id"] as? String {
                            await link.answered(id, with: SessionSocketLink.outcome(of: message, sessionID: session.id))
                        }
                    case "deleted":
                        return .deleted
                    default:
                        continue  // kinds a newer service sends
                    }
                }
            } onCancel: {
                socket.close()
            }
        } catch let refusal as ChromeSocketRefused {
            if case .provider = client.token, refusedToken == nil, refusal.status == 401 {
                end = .tokenEnded(token)
            } else {
                if !(refusal.status.map { Self.refusalsOfTheService.contains($0) } ?? false) {
                    client.log("session \(session.id): no WebSocket here (\(refusal.status.map { "the upgrade answered \($0)" } ?? "not supported")); HTTP and the event stream instead")
                    await session.socketNotOffered()
                }
                end = .notOffered
            }
        } catch let closed as ChromeSocketClosed {
            switch closed.code {
            case 4401?: end = .tokenEnded(token)
            case 1001?: end = .cut(nil, connectedAt: connectedAt)
            default: end = .cut(.transport("the socket closed (\(closed.code.map(String.init) ?? "no code"))", code: nil), connectedAt: connectedAt)
            }
        } catch let error as TopChromeError {
            end = .cut(error, connectedAt: connectedAt)
        } catch {
            end = .cut(.transport(error), connectedAt: connectedAt)
        }
        socket.close()
        await session.socketEnded(link)
        await link.end()
        try Task.checkCancellation()
        return end
    }

    /// `http(s)://` as `ws(s)://`: URLSession opens a WebSocket by its scheme.
    static func webSocketURL(_ url: URL) -> URL? {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        parts.scheme = parts.scheme?.lowercased() == "https" ? "wss" : "ws"
        return parts.url
    }
}
