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

    /// `"<version>.<tag>"`: `a` and `b` are two states that had version 3.
    static let a = "3.0123456789ab", b = "3.ba9876543210"
    static func tag(_ text: String) -> EntityTag { EntityTag(text.utf8)! }

    @Test func entityTagLists() {
        typealias Tags = Preconditions.Tags
        let (a, b) = (Self.tag(Self.a), Self.tag(Self.b))
        #expect(Tags("*") == .any)
        #expect(Tags("\"\(Self.a)\"") == .states(strong: [a], weak: []))
        #expect(Tags("W/\"\(Self.a)\", \"\(Self.b)\" ,\"x\", \"\"") == .states(strong: [b], weak: [a]))
        #expect(Tags("\"a,b\", , \"\(Self.b)\"") == .states(strong: [b], weak: []), "a comma inside quotes is part of the tag")
        #expect(Tags("") == .states(strong: [], weak: []))
        #expect(Tags("\"03.0123456789ab\", \"+3.0123456789ab\", \"3.0123456789AB\", \"3.0123456789a\", \"3.0123456789abc\", \"٣.0123456789ab\"")
                == .states(strong: [], weak: []), "tags compare as text")
        #expect(Tags("\"3\", W/\"3\"") == .states(strong: [], weak: []), "a bare version (the format before tags) names no state")
        #expect(Tags("\t\"\(Self.a)\" ,\tW/\"\(Self.b)\"\t") == .states(strong: [a], weak: [b]), "spaces and tabs are optional whitespace")
        #expect(Tags("\u{A0}\"\(Self.a)\"") == nil, "a no-break space is not (RFC 9110 §5.6.3)")
    }

    /// Not a list of entity tags: refused, not read as tags that never match.
    @Test(arguments: ["7", "\"3\", 5", "\"3", "3\"", "W/3", "w/\"3\"", "\"3\" \"4\"", "\"a\"b\"", "\"3\" x", "**", "\"\u{7}\"", "\"3 \"",
                      "3.0123456789ab"])
    func malformedEntityTagsAreRefused(_ field: String) {
        #expect(Preconditions.Tags(field) == nil)
        #expect(throws: Problem.self) { try Preconditions(ifMatch: field, ifNoneMatch: nil) }
        #expect(throws: Problem.self) { try Preconditions(ifMatch: nil, ifNoneMatch: field) }
    }

    @Test func ifNoneMatchComparesWeakly() {
        func notModified(_ field: String, _ current: String) -> Bool {
            !(try! Preconditions(ifMatch: nil, ifNoneMatch: field)).noneMatchCondition.holds(for: Self.tag(current))
        }
        #expect(notModified("\"\(Self.a)\"", Self.a))
        #expect(notModified("W/\"\(Self.a)\"", Self.a))
        #expect(notModified("\"1.0123456789ab\", \"\(Self.a)\"", Self.a))
        #expect(notModified("*", "9.0123456789ab"))
        #expect(!notModified("\"4.0123456789ab\"", Self.a))
        #expect(!notModified("\"\(Self.a)\"", Self.b), "another state that had the version")
        #expect(!notModified("\"3\"", Self.a), "a bare version")
    }

    @Test func ifMatchComparesStrongly() {
        func proceeds(_ field: String?, _ current: String) -> Bool {
            (try! Preconditions(ifMatch: field, ifNoneMatch: nil)).forChange.holds(for: Self.tag(current))
        }
        #expect(proceeds(nil, Self.a))
        #expect(proceeds("*", Self.a))
        #expect(proceeds("\"\(Self.a)\"", Self.a))
        #expect(proceeds("\"2.0123456789ab\", \"\(Self.a)\"", Self.a))
        #expect(!proceeds("W/\"\(Self.a)\"", Self.a))
        #expect(!proceeds("\"4.0123456789ab\"", Self.a))
        #expect(!proceeds("\"\(Self.b)\"", Self.a), "another state that had the version")
        #expect(!proceeds("\"3\"", Self.a), "a bare version")
    }

    @Test func changesNeedBothConditions() throws {
        let both = try Preconditions(ifMatch: "\"\(Self.a)\"", ifNoneMatch: "\"\(Self.a)\"").forChange
        #expect(!both.holds(for: Self.tag(Self.a)))
        #expect(try !Preconditions(ifMatch: nil, ifNoneMatch: "*").forChange.holds(for: Self.tag("1.000000000000")), "the session exists")
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
        #expect(token.matches(Array("abc123".utf8)[...]))
        #expect(!token.matches(Array("abc124".utf8)[...]))
        #expect(!token.matches(Array("abc12".utf8)[...]))
        #expect(!token.matches(Array("abc1234".utf8)[...]))
        #expect(!token.matches([]))
        #expect(!token.matches(Array(("abc123" + String(repeating: "x", count: 256)).utf8)[...]), "length differences of 256 count too")
    }

    /// The credentials are read in place from the header: a slice that starts past 0.
    @Test func matchesCredentialsWhereTheHeaderHasThem() throws {
        let token = BearerToken("abc123")
        #expect(token.matches(try #require(BearerToken.credentials(in: "Bearer abc123"))))
        #expect(token.matches(try #require(BearerToken.credentials(in: "bEaReR   abc123 "))))
        #expect(!token.matches(try #require(BearerToken.credentials(in: "Bearer abc124"))))
        #expect(BearerToken.credentials(in: "Basic abc123") == nil)
        #expect(BearerToken.credentials(in: "Bearers abc123") == nil)
        #expect(BearerToken.credentials(in: "Bearer") == nil)
    }
}
