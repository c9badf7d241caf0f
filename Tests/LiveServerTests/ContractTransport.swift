import ContractTestSupport
import MemorySessionStore
import Testing
import TopChromeAPI
import TopChromeTesting

/// How a contract test's requests reach the API: in this process, on a
/// store that answers at once or on one that answers later, or over
/// loopback HTTP to a live server, whose store is the memory store or,
/// under `TOPCHROME_TEST_STORE`, Redis. Each contract test runs on every
/// case; another transport is another case and another ``ContractClient``.
enum ContractTransport: CaseIterable, Sendable, CustomTestStringConvertible {
    case inProcess(StoreUnderTest)
    case loopback
    /// Changes as WebSocket messages, the rest over loopback HTTP: for the
    /// tests of what a change does, which the socket must do alike.
    case socket

    static var allCases: [ContractTransport] { StoreUnderTest.allCases.map(ContractTransport.inProcess) + [.loopback] }
    /// Every transport and the socket.
    static var withSocket: [ContractTransport] { allCases + [.socket] }

    var testDescription: String {
        switch self {
        case .inProcess(let store): "in process, \(store.rawValue)"
        case .loopback: "loopback HTTP"
        case .socket: "WebSocket"
        }
    }
}

/// The v1 API on a fresh store over one transport, and what a test may
/// look at behind its client.
struct ContractAPI {
    let client: any ContractClient
    /// The API itself, for its readiness and its watchers.
    let api: SessionAPI
    /// The store behind the API when it is the memory store; nil on Redis.
    let memory: InMemorySessionStore?
    /// Kept so the live server runs as long as the test does.
    private let server: LiveServer?

    /// - Parameter capacity: a session cap, which only the memory store
    ///   keeps (`--max-sessions`): a live server then runs on it whatever
    ///   the run's store.
    init(_ transport: ContractTransport, maxBodyBytes: Int = 4096, capacity: Int? = nil, authToken: String? = nil) throws {
        switch transport {
        case .inProcess(let store):
            let fixture = ContractFixture(store, maxBodyBytes: maxBodyBytes, capacity: capacity ?? 1_000_000, authToken: authToken)
            (client, api, memory, server) = (fixture.client, fixture.api, fixture.memory, nil)
        case .loopback, .socket:
            let server = try LiveServer(memoryOnly: capacity != nil) { configuration in
                configuration.limits.maxBodyBytes = maxBodyBytes
                if let capacity { configuration.limits.maxSessions = capacity }
                configuration.auth.token = authToken
            }
            let http = try server.client()
            if case .socket = transport { client = SocketContractClient(port: server.port, http: http) } else { client = http }
            (api, memory, self.server) = (server.service.api, server.service.backend.memoryStore, server)
        }
    }

    func createSession(inset: Double? = nil) throws -> String { try client.createSession(inset: inset) }
    func etag(_ id: String) throws -> String { try client.etag(id) }
    func state(_ id: String) throws -> [String: Any] { try client.state(id) }
}
