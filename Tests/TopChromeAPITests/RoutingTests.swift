import Testing
import TopChromeCore
@testable import TopChromeAPI

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

    /// The per-request check and the `Allow` list of a 405 must agree.
    @Test func allowsWhatAllowSays() {
        let id = SessionID.random()
        let routes: [Route] = [.sessions, .session(id), .inset(id), .scroll(id), .disappear(id), .events(id),
                               .health, .readiness, .openAPI, .metrics, .demo]
        for route in routes {
            for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get"] {
                #expect(route.allows(method) == route.allowedMethods.contains(method), "\(route) \(method)")
            }
        }
    }

    @Test func malformedIdsStillNameTheResource() {
        #expect(Route(path: "/v1/sessions/nope") == .session(nil))
        #expect(Route(path: "/v1/sessions/NOPE/scroll") == .scroll(nil))
    }

    @Test(arguments: ["/v1", "/v1/sessions/", "/v1/sessions//scroll", "/v1/sessions/x/y/z", "/v1/sessions/x/other",
                      "/healthz/", "/v2/sessions", "/v1/sessions/x/scroll/"])
    func unknownPaths(_ path: String) {
        #expect(Route(path: path) == nil)
    }

    @Test func entityTagLists() {
        typealias Tags = Preconditions.Tags
        #expect(Tags("*") == .any)
        #expect(Tags("\"3\"") == .versions(strong: [3], weak: []))
        #expect(Tags("W/\"3\", \"4\" ,\"x\", \"\"") == .versions(strong: [4], weak: [3]))
        #expect(Tags("\"a,b\", , \"5\"") == .versions(strong: [5], weak: []), "a comma inside quotes is part of the tag")
        #expect(Tags("") == .versions(strong: [], weak: []))
        #expect(Tags("\"03\", \"+3\", \"٣\"") == .versions(strong: [], weak: []), "tags compare as text")
        #expect(Tags("\t\"3\" ,\tW/\"4\"\t") == .versions(strong: [3], weak: [4]), "spaces and tabs are optional whitespace")
        #expect(Tags("\u{A0}\"3\"") == nil, "a no-break space is not (RFC 9110 §5.6.3)")
    }

    /// Not a list of entity tags: refused, not read as tags that never match.
    @Test(arguments: ["7", "\"3\", 5", "\"3", "3\"", "W/3", "w/\"3\"", "\"3\" \"4\"", "\"a\"b\"", "\"3\" x", "**", "\"\u{7}\"", "\"3 \""])
    func malformedEntityTagsAreRefused(_ field: String) {
        #expect(Preconditions.Tags(field) == nil)
        #expect(throws: Problem.self) { try Preconditions(ifMatch: field, ifNoneMatch: nil) }
        #expect(throws: Problem.self) { try Preconditions(ifMatch: nil, ifNoneMatch: field) }
    }

    @Test func ifNoneMatchComparesWeakly() {
        func notModified(_ field: String, _ version: UInt64) -> Bool {
            !(try! Preconditions(ifMatch: nil, ifNoneMatch: field)).noneMatchCondition.holds(for: version)
        }
        #expect(notModified("\"3\"", 3))
        #expect(notModified("W/\"3\"", 3))
        #expect(notModified("\"1\", \"3\"", 3))
        #expect(notModified("*", 9))
        #expect(!notModified("\"4\"", 3))
    }

    @Test func ifMatchComparesStrongly() {
        func proceeds(_ field: String?, _ version: UInt64) -> Bool {
            (try! Preconditions(ifMatch: field, ifNoneMatch: nil)).forChange.holds(for: version)
        }
        #expect(proceeds(nil, 3))
        #expect(proceeds("*", 3))
        #expect(proceeds("\"3\"", 3))
        #expect(proceeds("\"2\", \"3\"", 3))
        #expect(!proceeds("W/\"3\"", 3))
        #expect(!proceeds("\"4\"", 3))
    }

    @Test func changesNeedBothConditions() throws {
        let both = try Preconditions(ifMatch: "\"3\"", ifNoneMatch: "\"3\"").forChange
        #expect(!both.holds(for: 3))
        #expect(try !Preconditions(ifMatch: nil, ifNoneMatch: "*").forChange.holds(for: 1), "the session exists")
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

@Suite struct BearerTokenTests {
    @Test func matchesOnlyTheWholeToken() {
        let token = BearerToken("abc123")
        #expect(token.matches(Array("abc123".utf8)))
        #expect(!token.matches(Array("abc124".utf8)))
        #expect(!token.matches(Array("abc12".utf8)))
        #expect(!token.matches(Array("abc1234".utf8)))
        #expect(!token.matches([]))
        #expect(!token.matches(Array(("abc123" + String(repeating: "x", count: 256)).utf8)), "length differences of 256 count too")
    }
}
