import ContractTestSupport
import Foundation
import Testing
import TopChromeTesting

/// HTTP itself: header and body limits, methods, media types, and what a
/// kept-alive connection carries from one request to the next.
extension SessionAPILiveTests {
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
        let tooLarge = try client.request("POST", "/v1/sessions/\(id)/scroll", body: exact + [32])
        try expectProblem(tooLarge, 413)
        #expect(try tooLarge.json["type"] as? String == "urn:topchrome:problem:content-too-large", "\(tooLarge.text)")
        #expect(try tooLarge.json["maxBodyBytes"] as? Int == 4096, "the limit is named, for a client to split by")
        #expect(try client.state(id)["version"] as? Int == 2)
    }

    @Test func oversizedBodyWithExpectContinueIsRefusedBeforeUpload() throws {
        let id = try server.createSession()
        let client = try server.client()
        try client.send(raw: Array(("POST /v1/sessions/\(id)/scroll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Content-Length: 1000000\r\nExpect: 100-continue\r\n\r\n").utf8))
        let response = try client.readResponse()
        try expectProblem(response, 413)
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
        #expect(try client.state(id)["version"] as? Int == 21)
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
        #expect(try client.state(id)["version"] as? Int == 4)
    }
}
