import Testing
import TopChromeCore
@testable import TopChromeHTTP

@Suite struct RoutingTests {
    let id = SessionID(high: 0xabc, low: 0xdef)

    @Test func routesEveryResource() {
        #expect(Route(path: "/v1/sessions") == .sessions)
        #expect(Route(path: "/v1/sessions/\(id)") == .session(id))
        #expect(Route(path: "/v1/sessions/\(id)/inset") == .inset(id))
        #expect(Route(path: "/v1/sessions/\(id)/scroll") == .scroll(id))
        #expect(Route(path: "/v1/sessions/\(id)/disappear") == .disappear(id))
        #expect(Route(path: "/healthz") == .health)
        #expect(Route(path: "/readyz") == .readiness)
        #expect(Route(path: "/openapi.yaml") == .openAPI)
    }

    @Test func malformedIdsStillNameTheResource() {
        #expect(Route(path: "/v1/sessions/nope") == .session(nil))
        #expect(Route(path: "/v1/sessions/NOPE/scroll") == .scroll(nil))
    }

    @Test(arguments: ["/", "/v1", "/v1/sessions/", "/v1/sessions//scroll", "/v1/sessions/x/y/z", "/v1/sessions/x/other",
                      "/healthz/", "/v2/sessions", "/v1/sessions/x/scroll/"])
    func unknownPaths(_ path: String) {
        #expect(Route(path: path) == nil)
    }

    @Test func ifNoneMatch() {
        #expect(SessionAPI.matches("\"3\"", version: 3))
        #expect(SessionAPI.matches("W/\"3\"", version: 3))
        #expect(SessionAPI.matches("\"1\", \"3\"", version: 3))
        #expect(SessionAPI.matches("*", version: 9))
        #expect(!SessionAPI.matches("\"4\"", version: 3))
        #expect(!SessionAPI.matches("3", version: 3))
        #expect(!SessionAPI.matches("", version: 3))
    }

    @Test func jsonMediaTypes() {
        #expect(SessionAPI.isJSON("application/json"))
        #expect(SessionAPI.isJSON("Application/JSON; charset=utf-8"))
        #expect(SessionAPI.isJSON("application/merge-patch+json"))
        #expect(!SessionAPI.isJSON("application/x-www-form-urlencoded"))
        #expect(!SessionAPI.isJSON("text/json"))
        #expect(!SessionAPI.isJSON("text/plain"))
        #expect(!SessionAPI.isJSON(""))
    }
}
