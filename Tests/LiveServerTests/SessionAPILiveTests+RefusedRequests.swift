import Foundation
import Testing
import TopChromeTesting

/// Requests the API refuses as malformed or naming nothing it has, changing nothing.
extension SessionAPILiveTests {
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
        let big = try LiveServer { $0.limits.maxBodyBytes = 65_536 }
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
}
