import Foundation
import Testing
import TopChromeTesting

/// Entity tags: a read answered 304 while nothing changed, a change refused
/// with 412 once another came first, a tag sent unquoted refused with 400.
extension SessionAPILiveTests {
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
}
