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
        #expect(problem["type"] as? String == "about:blank", sourceLocation: sourceLocation)
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

    /// A connection's answers are written into the room its last answer
    /// left: a long one, then a short one, then a problem, each exactly itself.
    @Test func answersOnOneConnectionShowNothingOfTheOneBefore() throws {
        let long = try server.createSession(inset: 9_999.999_999_999_998), short = try server.createSession()
        let client = try server.client()
        let first = try client.json("POST", "/v1/sessions/\(long)/scroll", #"{"contentOffsetY": 500}"#)
        #expect(first.status == 200 && first.etagVersion == 2)
        let second = try client.request("GET", "/v1/sessions/\(short)")
        #expect(second.text == #"{"id":"\#(short)","inset":0,"isRevealed":true,"version":1}"#)
        #expect(second.headers.filter { $0.name == "ETag" }.count == 1 && second.etagVersion == 1)
        #expect(second.header("Content-Length") == String(second.body.count))
        try expectProblem(client.request("GET", "/v1/sessions/\(String(repeating: "0", count: 31))1"), 404)
        let third = try client.request("GET", "/v1/sessions/\(long)")
        #expect(third.text == #"{"id":"\#(long)","inset":9999.999999999998,"isRevealed":false,"version":2}"#)
    }

    @Test func conditionalGet() throws {
        let id = try server.createSession()
        let client = try server.client()
        let full = try client.request("GET", "/v1/sessions/\(id)")
        let etag = try #require(full.header("ETag"))
        let unchanged = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag)])
        #expect(unchanged.status == 304)
        #expect(unchanged.etagVersion == 1)
        #expect(unchanged.body.isEmpty)
        let lengths = unchanged.headers.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        #expect(lengths == [full.header("Content-Length")], "a 304 states the 200's length, once")
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

    @Test func ifMatchGuardsEveryChange() throws {
        let id = try server.createSession()
        let client = try server.client()
        let stale = [("If-Match", "\"9\"")]
        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: stale), 412)
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#, headers: stale), 412)
        try expectProblem(try client.request("POST", "/v1/sessions/\(id)/disappear", headers: stale), 412)
        try expectProblem(try client.request("DELETE", "/v1/sessions/\(id)", headers: stale), 412)
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)", headers: stale), 412)
        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#,
                                          headers: [("If-None-Match", "*")]), 412)
        #expect(try state(id, client)["version"] as? Int == 1, "nothing changed")

        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: [("If-Match", "\"1\"")]), 412)
        let current = try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#, headers: [("If-Match", try server.etag(id))])
        #expect(current.status == 200)
        #expect(current.etagVersion == 2)
        #expect(try client.request("DELETE", "/v1/sessions/\(id)", headers: [("If-Match", current.header("ETag") ?? "")]).status == 204)
    }

    /// A tag sent without its quotes (`If-Match: 7`, a version typed by
    /// hand) is no entity tag: 400 saying how to send it, not a 412 that
    /// says a version does not hold. For either field, on every method.
    @Test func anUnquotedEntityTagIs400() throws {
        let id = try server.createSession()
        let client = try server.client()
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
        #expect(try state(id, client)["version"] as? Int == 1, "nothing changed")
        // Well-formed tags that are not ours still just fail to match.
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-Match", #""01", W/"1", "a,b""#)]), 412)
        #expect(try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "W/" + (try server.etag(id)))]).status == 304)
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

    @Test func scrollFollowsTheRules() throws {
        let id = try server.createSession(inset: 59)
        let client = try server.client()
        func scroll(_ body: String) throws -> [String: Any] {
            let response = try client.json("POST", "/v1/sessions/\(id)/scroll", body)
            #expect(response.status == 200, "\(response.text)")
            return try response.json
        }
        #expect(try scroll(#"{"contentOffsetY": 1.0001}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 1}"#)["isRevealed"] as? Bool == true)
        #expect(try scroll(#"{"contentOffsetY": 200, "contentInsetTop": 59}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 0, "axis": "horizontal"}"#)["isRevealed"] as? Bool == false)
        let top = try scroll(#"{"contentOffsetY": -59, "contentInsetTop": 59}"#)
        #expect(top["isRevealed"] as? Bool == true)
        #expect(top["version"] as? Int == 5)
    }

    @Test func staleReportsAreIgnored() throws {
        let id = try server.createSession()
        let client = try server.client()
        let down = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 400, "seq": 20}"#)
        #expect(try down.json["isRevealed"] as? Bool == false)
        let late = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 19}"#)
        #expect(late.status == 200)
        #expect(try late.json["isRevealed"] as? Bool == false)
        #expect(try late.json["version"] as? Int == 2)
        let newer = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 21}"#)
        #expect(try newer.json["isRevealed"] as? Bool == true)
    }

    @Test func batchAnswersTheStateAfterAll() throws {
        let id = try server.createSession()
        let response = try server.client().json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 500, "seq": 1}, {"contentOffsetY": 0, "seq": 3}, {"contentOffsetY": 900, "seq": 2}]"#)
        #expect(response.status == 200)
        #expect(try response.json["isRevealed"] as? Bool == true)
        #expect(try response.json["version"] as? Int == 3)
    }

    /// A stale report is accepted (200, the current state) but the answer
    /// says it was ignored: a client whose seq went backwards notices.
    @Test func staleReportsAreCountedInTheAnswer() throws {
        let id = try server.createSession()
        let client = try server.client()
        let fresh = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500, "seq": 10}"#)
        #expect(fresh.status == 200)
        #expect(fresh.header("TopChrome-Stale-Reports") == nil)
        let stale = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 5}"#)
        #expect(stale.status == 200)
        #expect(stale.header("TopChrome-Stale-Reports") == "1")
        #expect(try stale.json["isRevealed"] as? Bool == false, "ignored")
        let batch = try client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 600, "seq": 9}, {"contentOffsetY": 700, "seq": 11}, {"contentOffsetY": 0, "seq": 11}, {"contentOffsetY": 800}]"#)
        #expect(batch.header("TopChrome-Stale-Reports") == "2")
        let later = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 12}"#)
        #expect(later.header("TopChrome-Stale-Reports") == nil)
        #expect(try later.json["isRevealed"] as? Bool == true)
    }

    @Test func badBatchChangesNothing() throws {
        let id = try server.createSession()
        let client = try server.client()
        let response = try client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 500}, {"contentOffsetY": "far"}]"#)
        try expectProblem(response, 400)
        let after = try state(id, client)
        #expect(after["isRevealed"] as? Bool == true)
        #expect(after["version"] as? Int == 1)
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

    @Test(arguments: [
        #"{"contentOffsetY": "#, #"{"contentOffsetY": null}"#, #"{"contentOffsetY": "1"}"#, #"{"contentOffsetY": 1e400}"#,
        #"{"contentOffsetY": 1, "zoom": 2}"#, #"[]"#, #"{"contentOffsetY": 1, "seq": -1}"#, #"{"contentOffsetY": 1, "axis": "z"}"#,
        "", "\u{0}",
    ])
    func badScrollBodiesAre400AndChangeNothing(_ body: String) throws {
        let id = try server.createSession()
        let client = try server.client()
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/scroll", body), 400)
        #expect(try state(id, client)["version"] as? Int == 1)
    }

    @Test func oversizedBatchIs400() throws {
        let big = try LiveServer { $0.maxBodyBytes = 65_536 }
        let id = try big.createSession()
        let reports = "[" + Array(repeating: #"{"contentOffsetY":1}"#, count: 1025).joined(separator: ",") + "]"
        try expectProblem(try big.client().json("POST", "/v1/sessions/\(id)/scroll", reports), 400)
    }

    @Test(arguments: [#"{"inset": -1}"#, #"{"inset": 10001}"#, #"{"inset": null}"#, #"{}"#, #"{"inset": 1, "x": 0}"#, "[1]"])
    func badInsetsAre400(_ body: String) throws {
        let id = try server.createSession()
        let client = try server.client()
        try expectProblem(try client.json("PUT", "/v1/sessions/\(id)/inset", body), 400)
        if body != "{}" {  // an empty object is a valid new-session body
            try expectProblem(try client.json("POST", "/v1/sessions", body), 400)
        }
        #expect(try state(id, client)["inset"] as? Int == 0)
    }

    @Test func unknownSessionsAndPathsAre404() throws {
        let client = try server.client()
        let nobody = String(repeating: "0", count: 32)
        try expectProblem(try client.request("GET", "/v1/sessions/\(nobody)"), 404)
        try expectProblem(try client.request("GET", "/v1/sessions/not-an-id"), 404)
        try expectProblem(try client.json("POST", "/v1/sessions/\(nobody)/scroll", #"{"contentOffsetY": 0}"#), 404)
        try expectProblem(try client.json("PUT", "/v1/sessions/\(nobody)/inset", #"{"inset": 0}"#), 404)
        try expectProblem(try client.request("POST", "/v1/sessions/\(nobody)/disappear"), 404)
        try expectProblem(try client.request("GET", "/nope"), 404)
        try expectProblem(try client.request("GET", "/v1/sessions/\(nobody)/elsewhere"), 404)
    }

    /// A mangled id (upper case, a UUID's dashes) is still 404, but the
    /// client learns it is not an id at all, not that its session expired.
    @Test(arguments: ["0123456789ABCDEF0123456789ABCDEF", "01234567-89ab-cdef-0123-456789abcdef", "not-an-id"])
    func malformedIdsAreSaidToBeNoIds(_ id: String) throws {
        let client = try server.client()
        for response in [try client.request("GET", "/v1/sessions/\(id)"),
                         try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#),
                         try client.request("GET", "/v1/sessions/\(id)/events")] {
            try expectProblem(response, 404)
            let detail = try response.json["detail"] as? String ?? ""
            #expect(detail.contains("not a session id: an id is 32 lower-case hexadecimal digits"), "\(detail)")
        }
        let unknown = try client.request("GET", "/v1/sessions/\(String(repeating: "0", count: 31))1")
        #expect(try unknown.json["detail"] as? String == "No session has this id; it may have been deleted or expired after being idle.")
    }

    @Test func encodedSeparatorsAndNULCannotDisguiseAPath() throws {
        let id = try server.createSession()
        let client = try server.client()
        try expectProblem(try client.request("GET", "/v1/sessions/\(id)%00junk"), 404)
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/scroll%00x", #"{"contentOffsetY": 300}"#), 404)
        try expectProblem(try client.request("GET", "/v1%2Fsessions%2F\(id)"), 404)
        try expectProblem(try client.request("GET", "/healthz%00"), 404)
        #expect(try state(id, client)["version"] as? Int == 1)
    }

    @Test func oversizedHeadersAre431AndTheServerGoesOn() throws {
        let client = try server.client()
        let fits = try client.request("GET", "/healthz", headers: [("X-Padding", String(repeating: "a", count: 6000))])
        #expect(fits.status == 200)
        let tooLarge = try server.client().request("GET", "/healthz", headers: [("X-Padding", String(repeating: "a", count: 20_000))])
        #expect(tooLarge.status == 431)
        #expect(try server.client().request("GET", "/healthz").status == 200)
    }

    @Test func http11WithoutHostIs400() throws {
        let client = try server.client()
        try client.send(raw: Array("GET /healthz HTTP/1.1\r\n\r\n".utf8))
        try expectProblem(try client.readResponse(), 400)
        let old = try server.client()
        try old.send(raw: Array("GET /healthz HTTP/1.0\r\n\r\n".utf8))
        #expect(try old.readResponse().status == 200, "HTTP/1.0 has no Host requirement")
    }

    @Test func wrongMethodsAre405WithAllow() throws {
        let id = try server.createSession()
        let client = try server.client()
        let cases: [(String, String, String)] = [
            ("GET", "/v1/sessions", "POST"),
            ("PUT", "/v1/sessions/\(id)", "GET, HEAD, DELETE"),
            ("POST", "/v1/sessions/\(id)", "GET, HEAD, DELETE"),
            ("GET", "/v1/sessions/\(id)/inset", "PUT"),
            ("GET", "/v1/sessions/\(id)/scroll", "POST"),
            ("DELETE", "/v1/sessions/\(id)/disappear", "POST"),
            ("POST", "/healthz", "GET, HEAD"),
            ("DELETE", "/readyz", "GET, HEAD"),
            ("PUT", "/openapi.yaml", "GET, HEAD"),
        ]
        for (method, path, allow) in cases {
            let response = try client.request(method, path)
            try expectProblem(response, 405)
            #expect(response.header("Allow") == allow, "\(method) \(path)")
        }
        #expect(try state(id, client)["version"] as? Int == 1)
    }

    @Test func bodiesOverTheLimitAre413AndTheConnectionSurvives() throws {
        let id = try server.createSession()
        let client = try server.client()
        // Far over the 4096-byte limit: the server must read and drop it, not buffer it.
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: 8 << 20)
        try expectProblem(try client.request("POST", "/v1/sessions/\(id)/scroll",
                                             headers: [("Content-Type", "application/json")], body: huge), 413)
        #expect(try client.request("GET", "/v1/sessions/\(id)").status == 200, "same connection, next request")

        let report = Array(#"{"contentOffsetY": 300}"#.utf8)
        let exact = report + [UInt8](repeating: UInt8(ascii: " "), count: 4096 - report.count)
        #expect(try client.request("POST", "/v1/sessions/\(id)/scroll", body: exact).status == 200)
        try expectProblem(try client.request("POST", "/v1/sessions/\(id)/scroll", body: exact + [32]), 413)
        #expect(try state(id, client)["version"] as? Int == 2)
    }

    @Test func oversizedBodyWithExpectContinueIsRefusedBeforeUpload() throws {
        let id = try server.createSession()
        let client = try server.client()
        try client.send(raw: Array(("POST /v1/sessions/\(id)/scroll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Content-Length: 1000000\r\nExpect: 100-continue\r\n\r\n").utf8))
        let response = try client.readResponse()
        try expectProblem(response, 413)
    }

    @Test func emptyBodyNeedsNoMediaType() throws {
        let id = try server.createSession()
        let response = try server.client().request("POST", "/v1/sessions/\(id)/disappear",
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: [])
        #expect(response.status == 200)
    }

    @Test func nonJSONContentTypeIs415() throws {
        let id = try server.createSession()
        let client = try server.client()
        let response = try client.request("POST", "/v1/sessions/\(id)/scroll",
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(#"{"contentOffsetY":500}"#.utf8))
        try expectProblem(response, 415)
        let detail = try response.json["detail"] as? String
        #expect(detail?.contains("--json") == true)
        #expect(try state(id, client)["version"] as? Int == 1)

        let withCharset = try client.request("POST", "/v1/sessions/\(id)/scroll",
            headers: [("Content-Type", "application/json; charset=utf-8")], body: Array(#"{"contentOffsetY":500}"#.utf8))
        #expect(withCharset.status == 200)
        let untyped = try client.request("POST", "/v1/sessions/\(id)/scroll", body: Array(#"{"contentOffsetY":0}"#.utf8))
        #expect(untyped.status == 200)
        #expect(try untyped.json["version"] as? Int == 3)
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

    @Test func keepAliveServesManyRequestsOnOneConnection() throws {
        let client = try server.client()
        let created = try client.request("POST", "/v1/sessions")
        let id = try #require(try created.json["id"] as? String)
        for step in 0..<20 {
            let response = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(step % 2 == 0 ? 300 : 0)}"#)
            #expect(response.status == 200)
            #expect(response.header("Connection")?.lowercased() != "close")
        }
        #expect(try state(id, client)["version"] as? Int == 21)
    }

    /// A connection's requests share one reused context on the server: each
    /// must still see only its own header fields and body.
    @Test func eachRequestOnAKeptAliveConnectionSeesOnlyItsOwn() throws {
        let id = try server.createSession()
        let client = try server.client()
        try expectProblem(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#,
                                          headers: [("If-Match", "\"99\"")]), 412)
        // No If-Match now: the last request's may not be left over (it would give 412).
        #expect(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        // No body now: the last request's may not be left over (it would give 400).
        #expect(try client.request("POST", "/v1/sessions/\(id)/disappear").status == 200)
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: 64 << 10)
        try expectProblem(try client.request("POST", "/v1/sessions/\(id)/scroll",
                                             headers: [("Content-Type", "application/json")], body: huge), 413)
        #expect(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        #expect(try state(id, client)["version"] as? Int == 4)
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
