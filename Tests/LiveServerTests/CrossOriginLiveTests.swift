import Foundation
import Testing

/// `--cors-origin` on the wire: preflights, and the headers on answers,
/// problems and event streams (with `TOPCHROME_TEST_STORE=redis`, answers
/// that wait for Redis too). Chromium itself is `make check-cors`.
@Suite struct CrossOriginLiveTests {
    static let page = "http://127.0.0.1:5173"
    let server: LiveServer
    let auth = ("Authorization", "Bearer cors-token")

    init() throws {
        server = try LiveServer { configuration in
            configuration.http.corsOrigins = [Self.page]
            configuration.auth.token = "cors-token"
        }
    }

    @Test func aPreflightNeedsNoTokenAndAllowsWhatTheAPIReads() throws {
        let id = try #require(try server.client().request("POST", "/v1/sessions", headers: [auth]).json["id"] as? String)
        let client = try server.client()
        let answer = try client.request("OPTIONS", "/v1/sessions/\(id)/scroll", headers: [
            ("Origin", Self.page), ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization,content-type,if-match"),
        ])
        #expect(answer.status == 204)
        #expect(answer.header("Access-Control-Allow-Origin") == Self.page)
        #expect(answer.header("Access-Control-Allow-Methods")?.contains("POST") == true)
        #expect(answer.header("Access-Control-Allow-Headers")?.contains("If-Match") == true)
        #expect(answer.header("Access-Control-Max-Age") == "7200")
        #expect(answer.header("Vary") == "Origin")
        // The connection stays usable: the preflight's answer had no body to misread.
        #expect(try client.request("GET", "/healthz").status == 200)
    }

    @Test func aPreflightFromAnotherOriginIsForbidden() throws {
        let answer = try server.client().request("OPTIONS", "/v1/sessions", headers: [
            ("Origin", "http://127.0.0.1:5174"), ("Access-Control-Request-Method", "POST"),
        ])
        #expect(answer.status == 403)
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect(answer.header("Access-Control-Allow-Origin") == nil)
    }

    @Test func answersAndProblemsToTheAllowedOriginCanBeRead() throws {
        let client = try server.client()
        let origin = ("Origin", Self.page)
        let created = try client.request("POST", "/v1/sessions", headers: [auth, origin])
        #expect(created.status == 201)
        #expect(created.header("Access-Control-Allow-Origin") == Self.page)
        #expect(created.header("Access-Control-Expose-Headers")?.contains("ETag") == true)
        #expect(created.header("Access-Control-Expose-Headers")?.contains("Location") == true)
        #expect(created.header("Vary") == "Origin")
        let id = try #require(try created.json["id"] as? String)

        let stale = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#,
                                    headers: [auth, origin, ("If-Match", "\"7\"")])
        #expect(stale.status == 412)
        #expect(stale.header("Access-Control-Allow-Origin") == Self.page)
        let unauthorized = try client.request("GET", "/v1/sessions/\(id)", headers: [origin])
        #expect(unauthorized.status == 401)
        #expect(unauthorized.header("Access-Control-Allow-Origin") == Self.page)

        let other = try client.request("GET", "/v1/sessions/\(id)", headers: [auth, ("Origin", "https://evil.example")])
        #expect(other.status == 200)
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        #expect(other.header("Access-Control-Expose-Headers") == nil)
    }

    @Test func anEventStreamToTheAllowedOriginCanBeRead() throws {
        let id = try #require(try server.client().request("POST", "/v1/sessions", headers: [auth]).json["id"] as? String)
        let client = try server.client()
        try client.send(raw: Array("GET /v1/sessions/\(id)/events HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nOrigin: \(Self.page)\r\nAuthorization: Bearer cors-token\r\n\r\n".utf8))
        let head = try client.readHead()
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(head.header("Access-Control-Allow-Origin") == Self.page)
    }
}
