import ContractTestSupport
import Foundation
import Testing
import TopChromeTesting

/// What of the v1 API only a socket shows: what the server adds to the
/// API's answers (lengths, HEAD and 304 without bodies) and many clients
/// at once. The contract itself is `SessionAPIContractTests`, which runs
/// over loopback HTTP too.
@Suite struct SessionAPILiveTests {
    let server: LiveServer

    init() throws {
        server = try LiveServer { $0.limits.maxBodyBytes = 4096 }
    }

    @Test func headStatesTheLengthAndSendsNoBody() throws {
        let id = try server.createSession(inset: 47.5)
        let client = try server.client()
        let got = try client.request("GET", "/v1/sessions/\(id)")
        let head = try client.request("HEAD", "/v1/sessions/\(id)")
        #expect(head.header("Content-Length") == got.header("Content-Length"))
        #expect(head.body.isEmpty)
        // The connection still works, so HEAD sent no body bytes.
        #expect(try client.request("GET", "/healthz").status == 200)
    }

    @Test func aNotModifiedStatesTheLengthOnceAndSendsNoBody() throws {
        let id = try server.createSession()
        let client = try server.client()
        let full = try client.request("GET", "/v1/sessions/\(id)")
        let unchanged = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try #require(full.header("ETag")))])
        #expect(unchanged.body.isEmpty)
        let lengths = unchanged.headers.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        #expect(lengths == [full.header("Content-Length")], "a 304 states the 200's length, once")
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
            let final = try client.state(id)
            #expect(final["isRevealed"] as? Bool == false, "round 24 scrolled down")
            #expect(final["version"] as? Int == 26)
        }
    }
}
