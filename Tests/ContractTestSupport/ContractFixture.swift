import Testing
import TopChromeAPI
import MemorySessionStore
import TopChromeCore
import TopChromeTesting

/// The store a contract test runs the API on: the memory store, which
/// answers at once, or the same made to answer later, as Redis does. Each
/// edge of the contract must come out the same on both paths.
public enum StoreUnderTest: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case answersNow
    case answersLater

    public var testDescription: String { rawValue }
}

/// The v1 API in this process on a fresh store, asked without sockets.
public struct ContractFixture {
    public let memory: InMemorySessionStore
    public let api: SessionAPI
    public let client: InProcessClient

    public init(_ kind: StoreUnderTest, maxBodyBytes: Int = 4096, capacity: Int = 1_000_000, maxWaitSeconds: Int = 60,
                authToken: String? = nil) {
        memory = InMemorySessionStore(capacity: capacity)
        let store: any SessionStore & SessionChangeFeed = switch kind {
        case .answersNow: memory
        case .answersLater: AnswersLaterStore(wrapping: memory)
        }
        api = SessionAPI(store: store, maxBodyBytes: maxBodyBytes, authToken: authToken, maxWaitSeconds: maxWaitSeconds)
        client = InProcessClient(api, maxBodyBytes: maxBodyBytes)
    }

    public func createSession(inset: Double? = nil) throws -> String {
        try client.createSession(inset: inset)
    }

    public func etag(_ id: String) throws -> String {
        try client.etag(id)
    }

    public func state(_ id: String) throws -> [String: Any] {
        try client.state(id)
    }
}

extension ContractClient {
    /// Creates a session and returns its id.
    public func createSession(inset: Double? = nil) throws -> String {
        let response = try json("POST", "/v1/sessions", inset.map { #"{"inset":\#($0)}"# } ?? "")
        try #require(response.status == 201, "\(response.text)")
        return try #require(try response.json["id"] as? String)
    }

    /// The session's ETag now, as a client that read it holds it.
    public func etag(_ id: String) throws -> String {
        try #require(try request("GET", "/v1/sessions/\(id)").header("ETag"))
    }

    public func state(_ id: String) throws -> [String: Any] {
        try request("GET", "/v1/sessions/\(id)").json
    }
}

/// An RFC 9457 problem of `status`, with every member a client reads.
public func expectProblem(_ response: ReceivedResponse, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
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
