import ContractTestSupport
import ContractTestSupport
import Foundation
import Testing
import TopChromeTesting

/// The v1 API's contract for reading and changing sessions, asked on every
/// transport (``ContractTransport``): in this process on a store that
/// answers at once and on one that answers later, and over loopback HTTP.
/// What only a socket shows (framing, lengths, connections) is in the live tests.
@Suite struct SessionAPIContractTests {
    @Test(arguments: ContractTransport.allCases)
    func createWithoutBody(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let response = try api.client.request("POST", "/v1/sessions")
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

    @Test(arguments: ContractTransport.allCases)
    func createWithInsetAndRead(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession(inset: 47.5)
        let got = try api.client.request("GET", "/v1/sessions/\(id)")
        #expect(got.status == 200)
        #expect(got.etagVersion == 1)
        #expect(try got.json["inset"] as? Double == 47.5)
        #expect(try got.json["id"] as? String == id)
        let head = try api.client.request("HEAD", "/v1/sessions/\(id)")
        #expect(head.status == 200)
        #expect(head.etagVersion == 1)
        #expect(head.header("ETag") == got.header("ETag"))

        let inset59 = try api.client.json("POST", "/v1/sessions", #"{"inset": 59}"#)
        #expect(inset59.status == 201)
        #expect(try inset59.json["inset"] as? Int == 59)
    }

    /// HEAD of an event stream: its headers, and no watcher opened.
    @Test(arguments: ContractTransport.allCases)
    func headOfEventsOpensNoWatcher(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let head = try api.client.request("HEAD", "/v1/sessions/\(id)/events")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(api.api.watcherCount == 0)
    }

    @Test(arguments: ContractTransport.allCases)
    func conditionalGet(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        let etag = try api.etag(id)
        let unchanged = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag)])
        #expect(unchanged.status == 304)
        #expect(unchanged.etagVersion == 1)
        #expect(try client.request("GET", "/v1/sessions/\(id)",
                                   headers: [("If-None-Match", "\"7.000000000000\""), ("If-None-Match", etag)]).status == 304,
                "a field on two lines is one list")
        #expect(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "*")]).status == 304)
        #expect(try client.request("HEAD", "/v1/sessions/\(id)", headers: [("If-None-Match", "W/" + etag)]).status == 304)
        #expect(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "\"1\"")]).status == 200,
                "a bare version (the format before tags) names no state")

        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        let changed = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag)])
        #expect(changed.status == 200)
        #expect(changed.etagVersion == 2)
        #expect(try changed.json["isRevealed"] as? Bool == false)
    }

    @Test(arguments: ContractTransport.allCases)
    func ifMatchGuardsEveryChange(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        let stale = [("If-Match", "\"9\"")]
        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: stale), 412)
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#, headers: stale), 412)
        try expectProblem(try client.request("POST", "/v1/sessions/\(id)/disappear", headers: stale), 412)
        try expectProblem(try client.request("DELETE", "/v1/sessions/\(id)", headers: stale), 412)
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)", headers: stale), 412)
        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#,
                                          headers: [("If-None-Match", "*")]), 412)
        #expect(try api.state(id)["version"] as? Int == 1, "nothing changed")

        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: [("If-Match", "\"1\"")]), 412)
        let current = try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: [("If-Match", try api.etag(id))])
        #expect(current.status == 200)
        #expect(current.etagVersion == 2)
        #expect(try client.request("DELETE", "/v1/sessions/\(id)", headers: [("If-Match", current.header("ETag") ?? "")]).status == 204)
    }

    /// A tag without its quotes is no entity tag: 400 saying how to send
    /// it, not a 412, for either field on every method.
    @Test(arguments: ContractTransport.allCases)
    func anUnquotedEntityTagIs400(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        for name in ["If-Match", "If-None-Match"] {
            let bare = [(name, "1")]
            for response in [try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: bare),
                             try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#, headers: bare),
                             try client.request("POST", "/v1/sessions/\(id)/disappear", headers: bare),
                             try client.request("DELETE", "/v1/sessions/\(id)", headers: bare),
                             try client.request("GET", "/v1/sessions/\(id)", headers: bare),
                             try client.request("GET", "/v1/sessions/\(id)", headers: bare + [("Prefer", "wait=5")])] {
                try expectProblem(response, 400)
                #expect(response.text.contains(name) && response.text.contains(#"quoted as ETag gives them (\"7.0a1b2c3d4e5f\", not 7.0a1b2c3d4e5f)"#),
                        "\(response.text)")
            }
            try expectProblem(try client.request("GET", "/v1/sessions/\(id)", headers: [(name, #""1", 2"#)]), 400)
        }
        #expect(try api.state(id)["version"] as? Int == 1, "nothing changed")
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-Match", #""01", W/"1", "a,b""#)]), 412)
        #expect(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "W/" + (try api.etag(id)))]).status == 304)
    }

    @Test(arguments: ContractTransport.withSocket)
    func setInset(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let response = try api.client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#)
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(try response.json["inset"] as? Int == 59)
        let again = try api.client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#)
        #expect(try again.json["version"] as? Int == 2, "same inset: no new version")
    }

    /// Both axes: a horizontal report neither hides nor reveals.
    @Test(arguments: ContractTransport.withSocket)
    func scrollFollowsTheRules(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession(inset: 59)
        func scroll(_ body: String) throws -> [String: Any] {
            let response = try api.client.json("POST", "/v1/sessions/\(id)/scroll", body)
            #expect(response.status == 200, "\(response.text)")
            return try response.json
        }
        #expect(try scroll(#"{"contentOffsetY": 1.0001}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 1}"#)["isRevealed"] as? Bool == true)
        #expect(try scroll(#"{"contentOffsetY": 200, "contentInsetTop": 59}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 0, "axis": "horizontal"}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 0, "axis": "vertical"}"#)["isRevealed"] as? Bool == true)
        let top = try scroll(#"{"contentOffsetY": -59, "contentInsetTop": 59}"#)
        #expect(top["isRevealed"] as? Bool == true)
        #expect(top["version"] as? Int == 5)
    }

    @Test(arguments: ContractTransport.withSocket)
    func staleReportsAreIgnored(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        let down = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 400, "seq": 20}"#)
        #expect(try down.json["isRevealed"] as? Bool == false)
        let late = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 19}"#)
        #expect(late.status == 200)
        #expect(try late.json["isRevealed"] as? Bool == false)
        #expect(try late.json["version"] as? Int == 2)
        let newer = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 21}"#)
        #expect(try newer.json["isRevealed"] as? Bool == true)
    }

    /// A stale report is accepted (200, the current state) and counted in
    /// the answer, so a client whose seq went backwards notices.
    @Test(arguments: ContractTransport.withSocket)
    func staleReportsAreIgnoredAndCounted(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        let fresh = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500, "seq": 10}"#)
        #expect(fresh.status == 200)
        #expect(fresh.header("TopChrome-Stale-Reports") == nil)
        let stale = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 5}"#)
        #expect(stale.status == 200)
        #expect(stale.header("TopChrome-Stale-Reports") == "1")
        #expect(try stale.json["isRevealed"] as? Bool == false, "ignored")
        #expect(try stale.json["version"] as? Int == 2)
        let batch = try client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 600, "seq": 9}, {"contentOffsetY": 700, "seq": 11}, {"contentOffsetY": 0, "seq": 11}, {"contentOffsetY": 800}]"#)
        #expect(batch.header("TopChrome-Stale-Reports") == "2")
        let later = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 12}"#)
        #expect(later.header("TopChrome-Stale-Reports") == nil)
        #expect(try later.json["isRevealed"] as? Bool == true)
    }

    @Test(arguments: ContractTransport.withSocket)
    func batchAnswersTheStateAfterAll(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let response = try api.client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 500, "seq": 1}, {"contentOffsetY": 0, "seq": 3}, {"contentOffsetY": 900, "seq": 2}]"#)
        #expect(response.status == 200)
        #expect(try response.json["isRevealed"] as? Bool == true)
        #expect(try response.json["version"] as? Int == 3)
    }

    @Test(arguments: ContractTransport.withSocket)
    func disappearAndDelete(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#)
        let left = try client.request("POST", "/v1/sessions/\(id)/disappear")
        #expect(left.status == 200)
        #expect(try left.json["isRevealed"] as? Bool == true)
        #expect(try left.json["version"] as? Int == 3)
        #expect(try client.json("POST", "/v1/sessions/\(id)/disappear", "{}").status == 200)
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/disappear", #"{"soon": true}"#), 400)

        let deleted = try client.request("DELETE", "/v1/sessions/\(id)")
        #expect(deleted.status == 204)
        #expect(deleted.body.isEmpty)
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)"), 404)
        try expectProblem(try client.request("DELETE", "/v1/sessions/\(id)"), 404)
    }

    @Test(arguments: ContractTransport.allCases)
    func sessionCapIs503WithRetryAfter(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport, capacity: 2)
        _ = try api.createSession()
        let kept = try api.createSession()
        let refused = try api.client.request("POST", "/v1/sessions")
        try expectProblem(refused, 503)
        #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 0)
        #expect(try api.client.request("DELETE", "/v1/sessions/\(kept)").status == 204)
        #expect(try api.client.request("POST", "/v1/sessions").status == 201)
    }

    @Test(arguments: ContractTransport.allCases)
    func healthReadinessAndSpec(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let health = try api.client.request("GET", "/healthz")
        #expect(health.status == 200)
        #expect(try health.json["status"] as? String == "ok")
        #expect(try api.client.request("GET", "/readyz").status == 200)

        let spec = try api.client.request("GET", "/openapi.yaml")
        #expect(spec.status == 200)
        #expect(spec.header("Content-Type") == "application/yaml")
        let file = try Data(contentsOf: packageRoot.appendingPathComponent("openapi.yaml"))
        let identical = spec.body == Array(file)  // not inside #expect: it would print both documents
        #expect(identical, "served byte for byte (\(spec.body.count) bytes served, \(file.count) in the file)")

        api.api.isReady = false
        let stopping = try api.client.request("GET", "/readyz")
        try expectProblem(stopping, 503)
        #expect(stopping.header("Retry-After") != nil)
        #expect(try api.client.request("GET", "/healthz").status == 200, "still alive")
    }
}
