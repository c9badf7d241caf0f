import ContractTestSupport
import Testing
import TopChromeCore
import TopChromeTesting

/// What the v1 API refuses, and how: bad JSON, unknown members, wrong
/// types, bodies over the limit, unknown sessions, malformed ids, wrong
/// methods, a missing token. Each refusal is a problem+json answer and
/// changes nothing, on every transport (``ContractTransport``).
@Suite struct SessionAPIContractEdgesTests {
    @Test(arguments: ContractTransport.withSocket, [
        #"{"contentOffsetY": "#, #"{"contentOffsetY": null}"#, #"{"contentOffsetY": "1"}"#, #"{"contentOffsetY": 1e400}"#,
        #"{"contentOffsetY": 1, "zoom": 2}"#, #"[]"#, #"{"contentOffsetY": 1, "seq": -1}"#, #"{"contentOffsetY": 1, "axis": "z"}"#,
        "", "\u{0}", #"{"contentOffsetY": 5, "contentOffsetY": 500}"#, #"{"contentOffsetY": 500, "seq": 1e-400}"#,
        #"{"contentOffsetY": 500, "seq": 9007199254740991.00000001}"#, #"{"contentOffsetY": 500, "seq": 2.5}"#,
        #"[{"contentOffsetY": 500}, {"contentOffsetY": "far"}]"#,
    ])
    func badScrollBodiesAre400AndChangeNothing(_ transport: ContractTransport, _ body: String) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        try expectProblem(try api.client.json("POST", "/v1/sessions/\(id)/scroll", body), 400)
        let after = try api.state(id)
        #expect(after["isRevealed"] as? Bool == true)
        #expect(after["version"] as? Int == 1)
    }

    @Test(arguments: ContractTransport.withSocket)
    func oversizedBatchIs400(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport, maxBodyBytes: 65_536)
        let id = try api.createSession()
        let reports = "[" + Array(repeating: #"{"contentOffsetY":1}"#, count: 1025).joined(separator: ",") + "]"
        try expectProblem(try api.client.json("POST", "/v1/sessions/\(id)/scroll", reports), 400)
    }

    @Test(arguments: ContractTransport.withSocket,
          [#"{"inset": -1}"#, #"{"inset": 10001}"#, #"{"inset": null}"#, #"{}"#, #"{"inset": 1, "x": 0}"#, "[1]",
           #"{"inset": 5, "inset": 50}"#])
    func badInsetsAre400(_ transport: ContractTransport, _ body: String) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        try expectProblem(try api.client.json("PUT", "/v1/sessions/\(id)/inset", body), 400)
        if body != "{}" {  // an empty object is a valid new-session body
            try expectProblem(try api.client.json("POST", "/v1/sessions", body), 400)
        }
        #expect(try api.state(id)["inset"] as? Int == 0)
        if let memory = api.memory { #expect(memory.count == 1) }
    }

    /// Schema-valid halves whose sum overflows: far down hides, far past the top reveals.
    @Test(arguments: ContractTransport.withSocket)
    func anOverflowingSumIsFarPastAnEnd(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let down = try api.client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 1e308, "contentInsetTop": 1e308}"#)
        #expect(down.status == 200)
        #expect(try down.json["isRevealed"] as? Bool == false)
        let up = try api.client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 0}, {"contentOffsetY": -1.7976931348623157e308, "contentInsetTop": -1.7976931348623157e308}]"#)
        #expect(up.status == 200)
        #expect(try up.json["isRevealed"] as? Bool == true)
    }

    @Test(arguments: ContractTransport.withSocket)
    func integerSpellingsOfSeqAreAccepted(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        for (seq, offset) in [("5", 500), ("6.0", 0), ("7e0", 500), ("80e-1", 0), ("0.9E1", 500)] {
            let response = try api.client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset), "seq": \#(seq)}"#)
            #expect(response.status == 200, "seq \(seq): \(response.text)")
            #expect(try response.json["isRevealed"] as? Bool == (offset == 0), "seq \(seq) was applied")
        }
        let stale = try api.client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 9.0}"#)
        #expect(try stale.json["isRevealed"] as? Bool == false, "9.0 is 9, not newer than 0.9E1")
    }

    @Test(arguments: ContractTransport.allCases)
    func unknownSessionsAndPathsAre404(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let client = api.client
        // The all-zero id, which no session is given, among them.
        for nobody in [String(repeating: "0", count: 31) + "1", String(repeating: "0", count: 32)] {
            try expectProblem(try client.request("GET", "/v1/sessions/\(nobody)"), 404)
            try expectProblem(try client.json("POST", "/v1/sessions/\(nobody)/scroll", #"{"contentOffsetY": 0}"#), 404)
            try expectProblem(try client.json("PUT", "/v1/sessions/\(nobody)/inset", #"{"inset": 0}"#), 404)
            try expectProblem(try client.request("POST", "/v1/sessions/\(nobody)/disappear"), 404)
            try expectProblem(try client.request("DELETE", "/v1/sessions/\(nobody)"), 404)
            try expectProblem(try client.request("GET", "/v1/sessions/\(nobody)/events"), 404)
            try expectProblem(try client.request("GET", "/v1/sessions/\(nobody)/elsewhere"), 404)
        }
        try expectProblem(try client.request("GET", "/v1/sessions/not-an-id"), 404)
        try expectProblem(try client.request("GET", "/nope"), 404)
        let unknown = try client.request("GET", "/v1/sessions/\(String(repeating: "0", count: 31))1")
        #expect(try unknown.json["detail"] as? String == "No session has this id; it may have been deleted or expired after being idle.")
    }

    /// A malformed id names no session on any method or sub-resource, not
    /// even the all-zero one a store can be made to hold, and the client
    /// learns it is no id at all.
    @Test(arguments: ContractTransport.allCases,
          ["zzz", "NOT-AN-ID", "not-an-id", String(repeating: "0", count: 32), String(repeating: "A", count: 32),
           "0123456789ABCDEF0123456789ABCDEF",
           String(repeating: "a", count: 31), String(repeating: "a", count: 33), "01234567-89ab-cdef-0123-456789abcdef"])
    func malformedIdIs404Everywhere(_ transport: ContractTransport, _ id: String) throws {
        let api = try ContractAPI(transport)
        let zero = SessionID(high: 0, low: 0)
        try api.memory.map { try $0.restore([Session(id: zero, state: ChromeState(inset: 59), tag: $0.epoch)]) }
        let path = "/v1/sessions/\(id)"
        let client = api.client
        for response in [try client.request("GET", path),
                         try client.request("DELETE", path),
                         try client.request("GET", path, headers: [("If-None-Match", "\"1.000000000000\""), ("Prefer", "wait=1")]),
                         try client.json("PUT", path + "/inset", #"{"inset": 3}"#),
                         try client.json("POST", path + "/scroll", #"{"contentOffsetY": 500}"#),
                         try client.json("POST", path + "/scroll", #"{"contentOffsetY": "far"}"#),
                         try client.request("POST", path + "/disappear"),
                         try client.request("GET", path + "/events")] {
            try expectProblem(response, 404)
            let detail = try response.json["detail"] as? String ?? ""
            #expect(detail.contains("not a session id: an id is 32 lower-case hexadecimal digits"), "\(detail)")
        }
        // A server sends a HEAD's head alone; in process, the body it leaves out is there.
        for response in [try client.request("HEAD", path), try client.request("HEAD", path + "/events")] {
            #expect(response.status == 404)
            #expect(response.header("Content-Type") == "application/problem+json")
            guard !response.body.isEmpty else { continue }
            try expectProblem(response, 404)
            let detail = try response.json["detail"] as? String ?? ""
            #expect(detail.contains("not a session id: an id is 32 lower-case hexadecimal digits"), "\(detail)")
        }
        let wrong = try client.request("GET", path + "/scroll")
        try expectProblem(wrong, 405)
        #expect(wrong.header("Allow") == "POST")
        if let memory = api.memory { #expect(memory.session(zero)?.state == ChromeState(inset: 59)) }
        #expect(api.api.watcherCount == 0)
    }

    @Test(arguments: ContractTransport.allCases)
    func encodedSeparatorsAndNULCannotDisguiseAPath(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        try expectProblem(try api.client.request("GET", "/v1/sessions/\(id)%00junk"), 404)
        try expectProblem(try api.client.json("POST", "/v1/sessions/\(id)/scroll%00x", #"{"contentOffsetY": 300}"#), 404)
        try expectProblem(try api.client.request("GET", "/v1%2Fsessions%2F\(id)"), 404)
        try expectProblem(try api.client.request("GET", "/healthz%00"), 404)
        #expect(try api.state(id)["version"] as? Int == 1)
    }

    @Test(arguments: ContractTransport.allCases)
    func wrongMethodsAre405WithAllow(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let cases: [(String, String, String)] = [
            ("GET", "/v1/sessions", "POST"),
            ("PUT", "/v1/sessions/\(id)", "GET, HEAD, DELETE"),
            ("POST", "/v1/sessions/\(id)", "GET, HEAD, DELETE"),
            ("GET", "/v1/sessions/\(id)/inset", "PUT"),
            ("GET", "/v1/sessions/\(id)/scroll", "POST"),
            ("DELETE", "/v1/sessions/\(id)/disappear", "POST"),
            ("POST", "/v1/sessions/\(id)/events", "GET, HEAD"),
            ("POST", "/healthz", "GET, HEAD"),
            ("DELETE", "/readyz", "GET, HEAD"),
            ("PUT", "/openapi.yaml", "GET, HEAD"),
        ]
        for (method, path, allow) in cases {
            let response = try api.client.request(method, path)
            try expectProblem(response, 405)
            #expect(response.header("Allow") == allow, "\(method) \(path)")
        }
        #expect(try api.state(id)["version"] as? Int == 1)
    }

    /// A body over the limit reaches the API flagged, never read: 413, and nothing changes.
    @Test(arguments: ContractTransport.allCases)
    func bodiesOverTheLimitAre413(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let report = Array(#"{"contentOffsetY": 300}"#.utf8)
        let exact = report + [UInt8](repeating: UInt8(ascii: " "), count: 4096 - report.count)
        try expectProblem(try api.client.request("POST", "/v1/sessions/\(id)/scroll", body: exact + [32]), 413)
        try expectProblem(try api.client.request("POST", "/v1/sessions", body: exact + [32]), 413)
        #expect(try api.state(id)["version"] as? Int == 1)
        #expect(try api.client.request("POST", "/v1/sessions/\(id)/scroll", body: exact).status == 200)
        #expect(try api.state(id)["version"] as? Int == 2)
    }

    @Test(arguments: ContractTransport.allCases)
    func nonJSONContentTypeIs415(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport)
        let id = try api.createSession()
        let client = api.client
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let response = try client.request("POST", "/v1/sessions/\(id)/scroll", headers: form, body: Array(#"{"contentOffsetY":500}"#.utf8))
        try expectProblem(response, 415)
        #expect((try response.json["detail"] as? String)?.contains("--json") == true)
        #expect(try api.state(id)["version"] as? Int == 1)
        #expect(try client.request("POST", "/v1/sessions/\(id)/disappear", headers: form, body: []).status == 200,
                "an empty body needs no media type")

        let withCharset = try client.request("POST", "/v1/sessions/\(id)/scroll",
            headers: [("Content-Type", "application/json; charset=utf-8")], body: Array(#"{"contentOffsetY":500}"#.utf8))
        #expect(withCharset.status == 200)
        let untyped = try client.request("POST", "/v1/sessions/\(id)/scroll", body: Array(#"{"contentOffsetY":0}"#.utf8))
        #expect(untyped.status == 200)
        #expect(try untyped.json["version"] as? Int == 3)
    }

    @Test(arguments: ContractTransport.allCases)
    func bearerSchemeTakesOneOrMoreSpacesAndTrailingWhiteSpace(_ transport: ContractTransport) throws {
        let api = try ContractAPI(transport, authToken: "s3cret-token")
        for field in ["Bearer  s3cret-token", "Bearer s3cret-token ", "Bearer s3cret-token\t", "bearer   s3cret-token \t "] {
            let response = try api.client.request("POST", "/v1/sessions", headers: [("Authorization", field)])
            #expect(response.status == 201, "\(field.debugDescription)")
        }
        for field in ["Bearer", "Bearer ", "Bearers3cret-token", "Bearer s3cret-token x", "Bearer\ts3cret-token"] {
            let response = try api.client.request("POST", "/v1/sessions", headers: [("Authorization", field)])
            try expectProblem(response, 401)
            #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer ") == true, "\(field.debugDescription)")
        }
        if let memory = api.memory { #expect(memory.count == 4) }
    }
}
