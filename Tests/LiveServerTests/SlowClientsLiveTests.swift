import Foundation
import MicroHTTPD
import Testing
import TopChromeTesting

/// A slow client cannot starve the others: a request's head and body must
/// arrive within `--request-timeout`, and one address holds a bounded
/// share of the connections.
@Suite struct SlowClientsLiveTests {
    /// A slowloris: one address opens all the connections it can and
    /// sends each a head it never ends. With the default per-address cap
    /// another address is still answered at once. (Before the cap, the
    /// attacker held every connection and the other client got nothing.)
    @Test func oneAddressHoldingSlowHeadsDoesNotStarveAnother() throws {
        // The connection cap lowered so that one test process can reach it;
        // the per-address cap and the request timeout are the defaults.
        let server = try LiveServer(memoryOnly: true) { $0.limits.maxConnections = 300 }
        let id = try server.createSession()
        var attackers: [TestHTTPClient] = []
        for _ in 0..<400 {
            guard let client = try? TestHTTPClient(port: server.port, from: "127.0.0.1"),
                  (try? client.send(raw: Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8))) != nil else { continue }
            attackers.append(client)
        }
        let other = try TestHTTPClient(port: server.port, from: "127.0.0.2")
        other.setReadTimeout(seconds: 5)
        let clock = ContinuousClock()
        var health: ReceivedResponse?
        let healthTime = try clock.measure { health = try other.request("GET", "/healthz") }
        var session: ReceivedResponse?
        let sessionTime = try clock.measure { session = try other.request("GET", "/v1/sessions/\(id)") }
        #expect(health?.status == 200)
        #expect(session?.status == 200)
        #expect(healthTime < .seconds(testTimeScale), "answered in \(healthTime)")
        #expect(sessionTime < .seconds(testTimeScale), "answered in \(sessionTime)")
        #expect(server.service.connections.refusals(.perAddressLimit) > 0)
        _ = attackers
    }

    /// A head trickled a line at a time, each well within the idle timeout,
    /// is answered 408 at the request timeout and its connection closed.
    @Test func aTrickledHeadIsAnswered408AtTheDeadline() throws {
        let server = try LiveServer { $0.http.requestTimeout = 1.5 }
        let client = try server.client()
        let clock = ContinuousClock()
        let began = clock.now
        try client.send(raw: Array("GET /healthz HTTP/1.1\r\n".utf8))
        var line = 0
        while !client.hasPendingInput(), clock.now - began < .seconds(8 * testTimeScale) {
            usleep(250_000)
            line += 1
            // Sent until the server shuts the connection.
            guard (try? client.send(raw: Array("X-Line-\(line): slow\r\n".utf8))) != nil else { break }
        }
        let response = try client.readResponse()
        let elapsed = clock.now - began
        #expect(response.status == 408)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(elapsed >= .seconds(1.5), "not before the deadline: \(elapsed)")
        #expect(elapsed < .seconds(1.5 + 1.5 * testTimeScale), "at the deadline: \(elapsed)")
        #expect(client.isClosedByServer())
        #expect(server.service.connections.refusals(.requestTimeout) == 1)
    }

    /// The deadline runs from a request's first byte: a kept-alive
    /// connection may wait longer than it between requests, and a body
    /// that arrives in time is read.
    @Test func anIdleKeptAliveConnectionIsNotTimedOut() throws {
        // A deadline a busy machine cannot overrun between the two sends.
        let server = try LiveServer { $0.http.requestTimeout = 2 }
        let client = try server.client()
        #expect(try client.request("GET", "/healthz").status == 200)
        usleep(3_000_000)
        try client.send(raw: Array("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{".utf8))
        usleep(100_000)
        try client.send(raw: Array("}".utf8))
        #expect(try client.readResponse().status == 201)
        #expect(server.service.connections.refusals(.requestTimeout) == 0)
    }

    /// A body that stops coming is cut at the deadline too.
    @Test func aBodyThatStopsComingIsAnswered408() throws {
        let server = try LiveServer { $0.http.requestTimeout = 1 }
        let client = try server.client()
        try client.send(raw: Array("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{".utf8))
        client.setReadTimeout(seconds: Int(5 * testTimeScale))
        #expect(try client.readResponse().status == 408)
        #expect(client.isClosedByServer())
    }
}

/// Every refusal is counted by its reason, and `/metrics` shows the counts.
@Suite struct ConnectionRefusalLiveTests {
    @Test func connectionsOverTheAddressCapAreClosedAndCounted() throws {
        let server = try LiveServer(memoryOnly: true) { $0.limits.maxConnectionsPerIP = 2 }
        let held = try (0..<2).map { _ in try TestHTTPClient(port: server.port, from: "127.0.0.3") }
        for client in held { #expect(try client.request("GET", "/healthz").status == 200) }
        let extra = try TestHTTPClient(port: server.port, from: "127.0.0.3")
        extra.setReadTimeout(seconds: 2)
        #expect(extra.isClosedByServer())
        let another = try TestHTTPClient(port: server.port, from: "127.0.0.4")
        #expect(try another.request("GET", "/healthz").status == 200)
        #expect(server.service.connections.refusals(.perAddressLimit) == 1)
    }

    /// A trusted proxy carries many clients' connections: it is exempt.
    @Test func aTrustedProxyIsExemptFromTheAddressCap() throws {
        let server = try LiveServer(memoryOnly: true) {
            $0.limits.maxConnectionsPerIP = 2
            $0.http.trustedProxies = [AddressRange("127.0.0.5")!]
        }
        let held = try (0..<5).map { _ in try TestHTTPClient(port: server.port, from: "127.0.0.5") }
        for client in held { #expect(try client.request("GET", "/healthz").status == 200) }
        #expect(server.service.connections.refusals(.perAddressLimit) == 0)
    }

    @Test func connectionsOverTheCapAreClosedAndCounted() throws {
        let server = try LiveServer(memoryOnly: true) { $0.limits.maxConnections = 3 }
        var held = try (0..<3).map { _ in try server.client() }
        for client in held { #expect(try client.request("GET", "/healthz").status == 200) }
        let refused = try server.client()
        refused.setReadTimeout(seconds: 2)
        #expect(refused.isClosedByServer(), "closed at once, not left waiting in the backlog")
        #expect(server.service.connections.refusals(.connectionLimit) == 1)
        held.removeFirst()  // one leaves: the next is served
        #expect(eventually { (try? server.client().request("GET", "/healthz").status) == 200 })
    }

    static let longTarget = "/" + String(repeating: "a", count: 9000)
    static let longField = String(repeating: "b", count: 9000)
    static let malformedHeads: [(String, ConnectionRefusal)] = [
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", .badRequest),
        ("GET \(longTarget) HTTP/1.1\r\nHost: x\r\n\r\n", .uriTooLong),
        ("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(longField)\r\n\r\n", .headerFieldsTooLarge),
        ("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", .contentTooLarge),
    ]

    /// What libmicrohttpd answers itself, before the server sees a request.
    @Test(arguments: malformedHeads)
    func answersTheLibraryGivesItselfAreCounted(head: String, reason: ConnectionRefusal) throws {
        let server = try LiveServer(memoryOnly: true)
        let client = try server.client()
        try? client.send(raw: Array(head.utf8))
        client.setReadTimeout(seconds: 5)
        _ = try? client.readHead()
        #expect(eventually { server.service.connections.refusals(reason) == 1 },
                "counted as \(reason.label): \(ConnectionRefusal.allCases.map { "\($0.label)=\(server.service.connections.refusals($0))" })")
    }

    @Test func metricsShowOpenConnectionsRefusalsAndTheDescriptorLimit() throws {
        let server = try LiveServer(memoryOnly: true) { $0.http.requestTimeout = 0.5 }
        let slow = try server.client()
        try slow.send(raw: Array("GET /healthz HTTP/1.1\r\n".utf8))
        #expect(eventually { server.service.connections.refusals(.requestTimeout) == 1 })
        let text = try server.client().request("GET", "/metrics").text
        #expect(text.contains("topchrome_connections_refused_total{reason=\"request_timeout\"} 1\n"))
        for reason in ConnectionRefusal.allCases {
            #expect(text.contains("topchrome_connections_refused_total{reason=\"\(reason.label)\"} "))
        }
        #expect(text.contains("# TYPE topchrome_connections_open gauge\ntopchrome_connections_open "))
        var limits = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        #expect(text.contains("# TYPE process_max_fds gauge\nprocess_max_fds \(limits.rlim_cur)\n"))
    }
}
