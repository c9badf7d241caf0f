import MemorySessionStore
@testable import MicroHTTPD
import Testing
@testable import TopChromeAPI
import TopChromeCore
import TopChromeTesting

/// CORS headers as the API writes them, in process (the live and browser
/// tests see them on the wire and in Chromium).
@Suite struct CrossOriginTests {
    static let page = "http://127.0.0.1:5173"
    let api = SessionAPI(store: InMemorySessionStore(), maxBodyBytes: 1024, authToken: "secret",
                         crossOrigin: CrossOriginPolicy(origins: [Self.page, "https://app.example.com"]))
    let auth = ("Authorization", "Bearer secret")

    func request(_ method: String, _ path: String, _ headers: [(String, String)], body: String = "") -> MicroHTTPDResponse {
        api.respond(to: MicroHTTPDRequest(method: method, path: path, headers: HTTPHeaders(headers), body: Array(body.utf8)))
    }

    func preflight(from origin: String, _ path: String = "/v1/sessions") -> MicroHTTPDResponse {
        request("OPTIONS", path, [("Origin", origin), ("Access-Control-Request-Method", "POST"),
                                  ("Access-Control-Request-Headers", "authorization,content-type,if-match")])
    }

    @Test func noOriginsMeansNoPolicy() {
        #expect(CrossOriginPolicy(origins: []) == nil)
    }

    /// 204 with what the browser checks, and no token asked: browsers never send it on a preflight.
    @Test func aPreflightFromAnAllowedOriginIsAnswered() {
        let answer = preflight(from: Self.page)
        #expect(answer.status == 204)
        #expect(answer.headers["Access-Control-Allow-Origin"] == Self.page)
        #expect(answer.headers["Access-Control-Allow-Methods"] == "GET, HEAD, POST, PUT, DELETE")
        let allowed = answer.headers["Access-Control-Allow-Headers"] ?? ""
        for header in ["Content-Type", "Authorization", "If-Match", "If-None-Match", "Prefer", "Last-Event-ID", "X-Request-Id",
                       "traceparent"] {
            #expect(allowed.contains(header), "\(header)")
        }
        #expect(answer.headers["Access-Control-Max-Age"] == "7200")
        #expect(answer.headers["Vary"] == "Origin")
        #expect(answer.body.isEmpty)
        // Every path and any method the API knows: a wrong one then gets a 405 the page can read.
        #expect(preflight(from: "https://app.example.com", "/v1/sessions/\(SessionID.random())/scroll").status == 204)
    }

    @Test func aPreflightFromAnotherOriginIsForbiddenWithoutCORSHeaders() {
        for origin in ["http://127.0.0.1:5174", "https://evil.example", "null", "http://127.0.0.1:5173/", "HTTP://127.0.0.1:5173"] {
            let answer = preflight(from: origin)
            #expect(answer.status == 403, "\(origin)")
            #expect(answer.headers["Content-Type"] == "application/problem+json")
            #expect(!answer.headers.fields.contains { $0.name.hasPrefix("Access-Control-") }, "\(origin)")
        }
    }

    /// An OPTIONS that is not a preflight is what it was: a method the API does not answer.
    @Test func otherOptionsRequestsAreNotPreflights() {
        #expect(request("OPTIONS", "/healthz", [("Origin", Self.page)]).status == 405)
        #expect(request("OPTIONS", "/healthz", [("Access-Control-Request-Method", "GET")]).status == 405)
        let plain = SessionAPI(store: InMemorySessionStore(), maxBodyBytes: 1024)
        let answer = plain.respond(to: MicroHTTPDRequest(method: "OPTIONS", path: "/v1/sessions", headers: HTTPHeaders([
            ("Origin", Self.page), ("Access-Control-Request-Method", "POST")])))
        #expect(answer.status == 405, "without --cors-origin nothing changes")
        #expect(!answer.headers.contains("Access-Control-Allow-Origin") && !answer.headers.contains("Vary"))
    }

    @Test func answersToAnAllowedOriginCanBeRead() throws {
        let created = request("POST", "/v1/sessions", [auth, ("Origin", Self.page)])
        #expect(created.status == 201)
        #expect(created.headers["Access-Control-Allow-Origin"] == Self.page)
        #expect(created.headers["Vary"] == "Origin")
        let exposed = created.headers["Access-Control-Expose-Headers"] ?? ""
        for header in ["ETag", "Location", "Retry-After", "Allow", "WWW-Authenticate", "RateLimit", "RateLimit-Policy",
                       "X-Request-Id"] {
            #expect(exposed.contains(header), "\(header)")
        }
        #expect(created.headers["Access-Control-Allow-Credentials"] == nil, "no cookies: credentials mode stays off")
        // Problems too, the 401 of a missing token among them: the page must read why.
        for problem in [request("GET", "/v1/sessions/\(SessionID.random())", [auth, ("Origin", Self.page)]),
                        request("POST", "/v1/sessions", [("Origin", Self.page)]),
                        request("PATCH", "/v1/sessions", [auth, ("Origin", Self.page)])] {
            #expect(problem.status >= 400)
            #expect(problem.headers["Access-Control-Allow-Origin"] == Self.page, "\(problem.status)")
        }
    }

    @Test func anEventStreamToAnAllowedOriginCanBeRead() throws {
        let created = request("POST", "/v1/sessions", [auth])
        let location = try #require(created.headers["Location"])
        let stream = request("GET", location + "/events", [auth, ("Origin", "https://app.example.com")])
        #expect(stream.stream != nil)
        #expect(stream.headers["Access-Control-Allow-Origin"] == "https://app.example.com")
        // No server closes it here: close it as a server would, which ends
        // the watch and lets go of the close handler; otherwise the watcher,
        // its stream and that handler keep one another, the hub and the
        // store alive (LeakSanitizer).
        stream.stream?.closed()
    }

    @Test func answersToOtherOriginsOrNoneCarryNoCORSHeaders() {
        for headers in [[auth, ("Origin", "https://evil.example")], [auth]] {
            let answer = request("POST", "/v1/sessions", headers)
            #expect(answer.status == 201)
            #expect(!answer.headers.fields.contains { $0.name.hasPrefix("Access-Control-") })
            #expect(answer.headers["Vary"] == "Origin", "a cache must not give this answer to another origin")
        }
    }
}
