import Foundation
import MicroHTTPD
import Testing
import TopChromeTesting

/// Session creations per client address (issue 32 §4): one address that
/// creates faster than `--create-rate` gets 429 with `Retry-After` and the
/// RateLimit fields, another address is not held back, and requests on
/// sessions that exist are never limited.
@Suite struct CreationRateLimitLiveTests {
    /// A burst of 5 at one a second: spent on loopback in far less than the
    /// second that would bring one back.
    let server: LiveServer

    init() throws {
        server = try LiveServer { configuration in
            configuration.limits.createRate = 1
            configuration.limits.createBurst = 5
        }
    }

    func create(from source: String, headers: [(String, String)] = []) throws -> ReceivedResponse {
        try TestHTTPClient(port: server.port, from: source).request("POST", "/v1/sessions", headers: headers)
    }

    /// Creates from `source` until it is refused (at most `limit` tries); the refusal.
    func createUntilLimited(from source: String, limit: Int = 50) throws -> (created: [String], refusal: ReceivedResponse?) {
        let client = try TestHTTPClient(port: server.port, from: source)
        var created: [String] = []
        for _ in 0..<limit {
            let response = try client.request("POST", "/v1/sessions")
            if response.status == 429 { return (created, response) }
            #expect(response.status == 201, "\(response.text)")
            created.append(try #require(try response.json["id"] as? String))
        }
        return (created, nil)
    }

    @Test func oneAddressIsLimitedAndAnotherIsNot() throws {
        let (created, refusal) = try createUntilLimited(from: "127.0.0.1")
        let limited = try #require(refusal, "127.0.0.1 was never limited")
        #expect(created.count >= 5, "the burst is allowed")
        #expect(limited.status == 429)
        #expect(limited.header("Content-Type") == "application/problem+json")
        let problem = try limited.json
        #expect(problem["type"] as? String == "https://iana.org/assignments/http-problem-types#quota-exceeded")
        #expect(problem["status"] as? Int == 429)
        #expect(problem["violated-policies"] as? [String] == ["create"])
        let retryAfter = try #require(limited.header("Retry-After").flatMap(Int.init))
        #expect(retryAfter >= 1)
        #expect(limited.header("RateLimit-Policy") == "\"create\";q=5;w=5")
        #expect(limited.header("RateLimit") == "\"create\";r=0;t=\(retryAfter)")

        // Another address, same moment: its own bucket.
        let other = try create(from: "127.0.0.2")
        #expect(other.status == 201, "\(other.text)")
        #expect(other.header("RateLimit") == "\"create\";r=4;t=1")

        // Requests on the sessions that exist go on from the limited address.
        let client = try TestHTTPClient(port: server.port, from: "127.0.0.1")
        let id = try #require(created.first)
        for _ in 0..<20 {
            #expect(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 40}"#).status == 200)
            #expect(try client.request("GET", "/v1/sessions/\(id)").status == 200)
        }
        #expect(try client.request("POST", "/v1/sessions").status == 429, "while creating is still refused")

        let metrics = try client.request("GET", "/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("topchrome_session_creations_limited_total ") }
        #expect((line?.split(separator: " ").last).flatMap { Int($0) }.map { $0 >= 2 } == true, "\(line ?? "no counter")")
    }

    /// Each creation allowed says what is left, as structured-field items
    /// (`"create";r=N;t=N`), counting down.
    @Test func allowedCreationsCarryWellFormedFields() throws {
        let client = try TestHTTPClient(port: server.port, from: "127.0.0.3")
        var remaining: [Int] = []
        for _ in 0..<3 {
            let response = try client.request("POST", "/v1/sessions")
            #expect(response.status == 201)
            #expect(response.header("RateLimit-Policy") == "\"create\";q=5;w=5")
            let field = try #require(response.header("RateLimit"))
            let parameters = field.split(separator: ";")
            #expect(parameters.first == "\"create\"", "\(field)")
            let values = Dictionary(uniqueKeysWithValues: parameters.dropFirst().map { parameter in
                let pair = parameter.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), Int(pair.count == 2 ? pair[1] : "") ?? -1)
            })
            #expect(Set(values.keys) == ["r", "t"], "\(field)")
            #expect((values["t"] ?? -1) >= 1)
            remaining.append(values["r"] ?? -1)
        }
        // One a second comes back: a slow machine may see one more, never more than the burst.
        #expect(remaining.allSatisfy { (0...4).contains($0) }, "\(remaining)")
        #expect(remaining.first == 4, "\(remaining)")
    }

    /// Behind a trusted proxy the client it names is the one limited, not the proxy.
    @Test func aTrustedProxysClientIsTheOneLimited() throws {
        let proxy4 = try #require(AddressRange("127.0.0.4"))
        let proxied = try LiveServer { configuration in
            configuration.limits.createRate = 1
            configuration.limits.createBurst = 2
            configuration.http.trustedProxies = [proxy4]
        }
        let proxy = try TestHTTPClient(port: proxied.port, from: "127.0.0.4")
        func create(for client: String) throws -> Int {
            try proxy.request("POST", "/v1/sessions", headers: [("X-Forwarded-For", client)]).status
        }
        #expect(try create(for: "198.51.100.7") == 201)
        #expect(try create(for: "198.51.100.7") == 201)
        #expect(try create(for: "198.51.100.7") == 429)
        #expect(try create(for: "198.51.100.8") == 201, "another client behind the same proxy")
        // IPv6: one bucket per /64.
        #expect(try create(for: "2001:db8:1:2::1") == 201)
        #expect(try create(for: "2001:db8:1:2::2") == 201)
        #expect(try create(for: "2001:db8:1:2:ffff::3") == 429, "the same /64")
        #expect(try create(for: "2001:db8:1:3::1") == 201, "the next /64")
    }
}
