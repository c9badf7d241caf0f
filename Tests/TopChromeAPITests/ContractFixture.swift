import Testing
import TopChromeAPI
import MemorySessionStore
import StoreParts
import TopChromeCore
import TopChromeTesting

/// The store a contract test runs the API on: the memory store, which
/// answers at once, or the same made to answer later, as Redis does. Each
/// edge of the contract must come out the same on both paths.
enum StoreUnderTest: String, CaseIterable, CustomTestStringConvertible {
    case answersNow
    case answersLater

    var testDescription: String { rawValue }
}

/// The v1 API in this process on a fresh store, asked without sockets.
struct ContractFixture {
    let memory: InMemorySessionStore
    let api: SessionAPI
    let client: InProcessClient

    init(_ kind: StoreUnderTest, maxBodyBytes: Int = 4096, capacity: Int = 1_000_000, maxWaitSeconds: Int = 60,
         authToken: String? = nil) {
        memory = InMemorySessionStore(capacity: capacity)
        let store: any SessionStore & SessionChangeFeed = switch kind {
        case .answersNow: memory
        case .answersLater: AnswersLaterStore(wrapping: memory)
        }
        api = SessionAPI(store: store, maxBodyBytes: maxBodyBytes, authToken: authToken, maxWaitSeconds: maxWaitSeconds)
        client = InProcessClient(api, maxBodyBytes: maxBodyBytes)
    }

    func createSession(inset: Double? = nil) throws -> String {
        let response = try client.json("POST", "/v1/sessions", inset.map { #"{"inset":\#($0)}"# } ?? "")
        try #require(response.status == 201, "\(response.text)")
        return try #require(try response.json["id"] as? String)
    }

    func etag(_ id: String) throws -> String {
        try #require(try client.request("GET", "/v1/sessions/\(id)").header("ETag"))
    }

    func state(_ id: String) throws -> [String: Any] {
        try client.request("GET", "/v1/sessions/\(id)").json
    }
}

/// An RFC 9457 problem of `status`, with every member a client reads.
func expectProblem(_ response: ReceivedResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
    let problem = try response.json
    // A body over the limit has a type of its own, which names the limit.
    let type = status == 413 ? "urn:topchrome:problem:content-too-large" : "about:blank"
    #expect(problem["type"] as? String == type, sourceLocation: sourceLocation)
    #expect(problem["status"] as? Int == status, sourceLocation: sourceLocation)
    #expect((problem["title"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
    #expect((problem["detail"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
}
