import Foundation
import Testing
import TopChromeTesting

/// The WebSocket channel (`GET /v1/sessions/{id}/socket`) over loopback:
/// the upgrade's checks, the first state, changes from anywhere, and the
/// client's changes answered as the HTTP routes answer them. Runs on
/// either store (`TOPCHROME_TEST_STORE`).
@Suite struct WebSocketLiveTests {
    let server: LiveServer

    init() throws {
        server = try LiveServer()
    }

    func open(_ id: String, headers: [(String, String)] = []) throws -> TestWebSocket {
        try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket", headers: headers)
    }

    @Test func theFirstMessageIsTheCurrentStateWithItsETag() throws {
        let id = try server.createSession(inset: 30)
        let socket = try open(id)
        #expect(socket.handshake.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(socket.handshake.header("Sec-WebSocket-Extensions") == nil)
        let first = try socket.nextMessage()
        #expect(first["type"] as? String == "state")
        #expect(first["etag"] as? String == (try server.etag(id)))
        #expect((first["state"] as? [String: Any])?["inset"] as? Double == 30)
    }

    @Test func aChangeMadeOverHTTPReachesTheSocket() throws {
        let id = try server.createSession()
        let socket = try open(id)
        _ = try socket.next(ofType: "state")
        #expect(try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset":12}"#).status == 200)
        let state = try socket.next(ofType: "state")
        #expect((state["state"] as? [String: Any])?["inset"] as? Double == 12)
        #expect(state["etag"] as? String == (try server.etag(id)))
    }

    @Test func reportsAreAnsweredWithTheirLastSeqAndStaleOnesIgnored() throws {
        let id = try server.createSession()
        let socket = try open(id)
        _ = try socket.next(ofType: "state")
        try socket.send(text: #"{"type":"scroll","id":"a","body":[{"contentOffsetY":0,"seq":5},{"contentOffsetY":80,"seq":6}]}"#)
        let answer = try socket.next(ofType: "answer")
        #expect(answer["id"] as? String == "a")
        #expect(answer["lastSeq"] as? Int == 6)
        #expect(answer["etag"] as? String == (try server.etag(id)))
        try socket.send(text: #"{"type":"scroll","id":"b","body":{"contentOffsetY":0,"seq":4}}"#)
        let stale = try socket.next(ofType: "answer")
        #expect(stale["id"] as? String == "b")
        #expect(stale["staleReports"] as? Int == 1)
        #expect(stale["lastSeq"] as? Int == 6)
    }

    @Test func insetBehaviorAndDisappearMirrorTheirRoutes() throws {
        let id = try server.createSession()
        let socket = try open(id)
        _ = try socket.next(ofType: "state")
        try socket.send(text: #"{"type":"inset","id":"1","body":{"inset":44}}"#)
        // The answer carries the state, as the HTTP route's answer does.
        let inset = try #require(try socket.next(ofType: "answer")["state"] as? [String: Any])
        #expect(inset["inset"] as? Double == 44)
        #expect(inset["version"] as? Int == (try server.client().request("GET", "/v1/sessions/\(id)").json["version"] as? Int))
        try socket.send(text: #"{"type":"behavior","id":"2","body":{"behavior":"pinned"}}"#)
        _ = try socket.next(ofType: "answer")
        try socket.send(text: #"{"type":"disappear","id":"3"}"#)
        _ = try socket.next(ofType: "answer")
        let state = try server.client().request("GET", "/v1/sessions/\(id)").json
        #expect(state["inset"] as? Double == 44)
        #expect(state["behavior"] as? String == "pinned")
    }

    @Test func aRefusedMessageGetsTheHTTPProblemAndChangesNothing() throws {
        let id = try server.createSession()
        let before = try server.etag(id)
        let socket = try open(id)
        _ = try socket.next(ofType: "state")
        // The same sentence as POST …/scroll answers for this body.
        let body = #"[{"contentOffsetY":1,"seq":1},{"contentOffsetY":"x"}]"#
        let http = try server.client().json("POST", "/v1/sessions/\(id)/scroll", body)
        try socket.send(text: #"{"type":"scroll","id":"bad","body":\#(body)}"#)
        let answer = try socket.next(ofType: "answer")
        let problem = try #require(answer["problem"] as? [String: Any])
        #expect(answer["id"] as? String == "bad")
        #expect(problem["status"] as? Int == 400)
        #expect(problem["type"] as? String == "about:blank")
        #expect(problem["detail"] as? String == (try http.json["detail"] as? String))
        for text in ["not json", #"[1]"#, #"{"type":"teleport"}"#, #"{"type":"inset","body":{"inset":1},"extra":1}"#] {
            try socket.send(text: text)
            let refused = try socket.next(ofType: "answer")
            #expect((refused["problem"] as? [String: Any])?["status"] as? Int == 400, "\(text)")
        }
        #expect(try server.etag(id) == before)
    }

    @Test func theUpgradeIsRefusedWithProblems() throws {
        let id = try server.createSession()
        let client = try server.client()
        let unknown = try client.request("GET", "/v1/sessions/\(String(repeating: "ab", count: 16))/socket",
                                          headers: Self.upgradeHeaders)
        #expect(unknown.status == 404)
        #expect(unknown.header("Content-Type") == "application/problem+json")
        let plain = try server.client().request("GET", "/v1/sessions/\(id)/socket")
        #expect(plain.status == 426)
        var badKey = Self.upgradeHeaders
        badKey[3] = ("Sec-WebSocket-Key", "short")
        #expect(try server.client().request("GET", "/v1/sessions/\(id)/socket", headers: badKey).status == 400)
        var oldVersion = Self.upgradeHeaders
        oldVersion[2] = ("Sec-WebSocket-Version", "8")
        let version = try server.client().request("GET", "/v1/sessions/\(id)/socket", headers: oldVersion)
        #expect(version.status == 426)
        #expect(version.header("Sec-WebSocket-Version") == "13")
        #expect(try server.client().request("POST", "/v1/sessions/\(id)/socket", headers: Self.upgradeHeaders).status == 405)
    }

    static let upgradeHeaders = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                                 ("Sec-WebSocket-Key", TestWebSocket.key)]

    @Test func aDeletedSessionIsToldAndTheSocketClosesNormally() throws {
        let id = try server.createSession()
        let socket = try open(id)
        _ = try socket.next(ofType: "state")
        #expect(try server.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
        #expect(try socket.next(ofType: "deleted")["id"] as? String == id)
        #expect(try socket.closeCode() == 1000)
    }

    @Test func aSocketCountsAsAWatcher() throws {
        let server = try LiveServer { $0.limits.maxWatchers = 1 }
        let id = try server.createSession()
        var socket: TestWebSocket? = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket")
        _ = try socket?.next(ofType: "state")
        #expect(try server.client().request("GET", "/v1/sessions/\(id)/events").status == 503)
        #expect(throws: TestClientError.self) { try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket") }
        try socket?.send(.close, [0x03, 0xE8])
        #expect(try socket?.closeCode() == 1000)
        socket = nil
        #expect(eventually { server.service.watcherCount == 0 })
    }

    @Test func stoppingTheServerClosesSocketsWithGoingAway() throws {
        let server = try LiveServer()
        let id = try server.createSession()
        let socket = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket")
        _ = try socket.next(ofType: "state")
        let stopped = DispatchQueue.global()
        stopped.async { server.service.stop() }
        #expect(try socket.closeCode() == 1001)
        try socket.send(.close, [0x03, 0xE9])
        #expect(eventually { socket.isClosedByServer() })
    }
}

/// The request timeout is for HTTP requests: once upgraded, a connection's
/// bytes are the socket's, and the sweep that answers 408 leaves it alone.
@Suite struct WebSocketRequestTimeoutLiveTests {
    @Test func aBusySocketOutlivesTheRequestTimeout() throws {
        let server = try LiveServer { $0.http.requestTimeout = 0.3 }
        let id = try server.createSession()
        let socket = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket")
        _ = try socket.next(ofType: "state")
        let until = ContinuousClock.now + .seconds(1.5)
        var answered = 0
        while ContinuousClock.now < until {
            try socket.send(text: #"{"type":"disappear","id":"\#(answered)"}"#)
            _ = try socket.next(ofType: "answer")
            answered += 1
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(answered > 0)
        #expect(server.service.connections.refusals(.requestTimeout) == 0)
    }
}

/// A client that does not read costs the server one state, the newest,
/// not every state since it stopped: states are coalesced for it.
@Suite struct WebSocketSlowReaderLiveTests {
    @Test func aReaderThatStallsGetsTheNewestStateNotEveryOne() throws {
        let server = try LiveServer()
        let id = try server.createSession()
        let socket = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket", receiveBuffer: 2048)
        _ = try socket.next(ofType: "state")
        let writer = try server.client()
        let changes = 4000
        for step in 1...changes {
            #expect(try writer.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": \#(step % 2 == 0 ? 10 : 20)}"#).status == 200)
        }
        let newest = try server.etag(id)
        var received = 0
        while true {
            let state = try socket.next(ofType: "state")
            received += 1
            if state["etag"] as? String == newest { break }
        }
        // Every one of them would have been kept for it otherwise.
        #expect(received < changes / 2, "\(received) states of \(changes)")
    }
}
