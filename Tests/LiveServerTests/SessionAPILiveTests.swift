import Foundation
import Testing
import TopChromeTesting

/// The v1 API over loopback HTTP against a real server.
@Suite struct SessionAPILiveTests {
    let server: LiveServer

    init() throws {
        server = try LiveServer { $0.maxBodyBytes = 4096 }
    }

    func expectProblem(_ response: ReceivedResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        let problem = try response.json
        // A body over the limit has a type of its own, which names the limit.
        let type = status == 413 ? "urn:topchrome:problem:content-too-large" : "about:blank"
        #expect(problem["type"] as? String == type, sourceLocation: sourceLocation)
        #expect(problem["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect((problem["title"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        #expect((problem["detail"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
    }

    func state(_ id: String, _ client: TestHTTPClient) throws -> [String: Any] {
        try client.request("GET", "/v1/sessions/\(id)").json
    }

    @Test func createWithoutBody() throws {
        let client = try server.client()
        let response = try client.request("POST", "/v1/sessions")
        #expect(response.status == 201)
        #expect(response.header("Content-Type") == "application/json")
        let body = try response.json
        let id = try #require(body["id"] as? String)
        #expect(id.count == 32)
        #expect(response.header("Location") == "/v1/sessions/\(id)")
        #expect(response.etagVersion == 1)
        #expect(body["inset"] as? Int == 0)
        #expect(body["isRevealed"] as? Bool == true)
        #expect(body["version"] as? Int == 1)
        #expect(body.count == 4)
    }

    @Test func createWithInset() throws {
        let response = try server.client().json("POST", "/v1/sessions", #"{"inset": 59}"#)
        #expect(response.status == 201)
        #expect(try response.json["inset"] as? Int == 59)
    }

    @Test func getAndHead() throws {
        let id = try server.createSession(inset: 47.5)
        let client = try server.client()
        let got = try client.request("GET", "/v1/sessions/\(id)")
        #expect(got.status == 200)
        #expect(got.etagVersion == 1)
        #expect(try got.json["inset"] as? Double == 47.5)
        #expect(try got.json["id"] as? String == id)

        let head = try client.request("HEAD", "/v1/sessions/\(id)")
        #expect(head.status == 200)
        #expect(head.etagVersion == 1)
        #expect(head.header("Content-Length") == got.header("Content-Length"))
        #expect(head.body.isEmpty)
        // The connection still works, so HEAD sent no body bytes.
        #expect(try client.request("GET", "/healthz").status == 200)
    }

    @Test func setInset() throws {
        let id = try server.createSession()
        let client = try server.client()
        let response = try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#)
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(try response.json["inset"] as? Int == 59)
        let again = try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#)
        #expect(try again.json["version"] as? Int == 2, "same inset: no new version")
    }

    @Test func disappear() throws {
        let id = try server.createSession()
        let client = try server.client()
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#)
        let left = try client.request("POST", "/v1/sessions/\(id)/disappear")
        #expect(left.status == 200)
        #expect(try left.json["isRevealed"] as? Bool == true)
        #expect(try left.json["version"] as? Int == 3)
        #expect(try client.json("POST", "/v1/sessions/\(id)/disappear", "{}").status == 200)
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/disappear", #"{"soon": true}"#), 400)
    }

    @Test func delete() throws {
        let id = try server.createSession()
        let client = try server.client()
        let deleted = try client.request("DELETE", "/v1/sessions/\(id)")
        #expect(deleted.status == 204)
        #expect(deleted.body.isEmpty)
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)"), 404)
        try expectProblem(try client.request("DELETE", "/v1/sessions/\(id)"), 404)
    }

    @Test func healthReadinessAndSpec() throws {
        let client = try server.client()
        let health = try client.request("GET", "/healthz")
        #expect(health.status == 200)
        #expect(try health.json["status"] as? String == "ok")
        #expect(try client.request("GET", "/readyz").status == 200)

        let spec = try client.request("GET", "/openapi.yaml")
        #expect(spec.status == 200)
        #expect(spec.header("Content-Type") == "application/yaml")
        let file = try Data(contentsOf: packageRoot.appendingPathComponent("openapi.yaml"))
        let identical = spec.body == Array(file)  // not inside #expect: it would print both documents
        #expect(identical, "served byte for byte (\(spec.body.count) bytes served, \(file.count) in the file)")
    }

    @Test func readinessTurnsOffForShutdown() throws {
        server.service.api.isReady = false
        let response = try server.client().request("GET", "/readyz")
        try expectProblem(response, 503)
        #expect(response.header("Retry-After") != nil)
        #expect(try server.client().request("GET", "/healthz").status == 200, "still alive")
    }

    @Test func sessionCapIs503WithRetryAfter() throws {
        let small = try LiveServer(memoryOnly: true) { $0.maxSessions = 2 }
        _ = try small.createSession()
        let kept = try small.createSession()
        let client = try small.client()
        let refused = try client.request("POST", "/v1/sessions")
        try expectProblem(refused, 503)
        #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(try client.request("DELETE", "/v1/sessions/\(kept)").status == 204)
        #expect(try client.request("POST", "/v1/sessions").status == 201)
    }

    @Test func concurrentClientsEndInTheRightStates() async throws {
        let server = self.server
        let ids = try (0..<40).map { _ in try server.createSession() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    let client = try server.client()
                    for round in 0..<25 {
                        for (index, id) in ids.enumerated() where index % 8 == worker {
                            let y = round % 2 == 0 ? 400 : 0
                            let response = try client.json("POST", "/v1/sessions/\(id)/scroll",
                                                           #"{"contentOffsetY": \#(y), "seq": \#(round)}"#)
                            guard response.status == 200 else { throw TestClientError.malformed(response.text) }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let client = try server.client()
        for id in ids {
            let final = try state(id, client)
            #expect(final["isRevealed"] as? Bool == false, "round 24 scrolled down")
            #expect(final["version"] as? Int == 26)
        }
    }
}
