import Foundation
@testable import Redis
import RedisTestSupport
import Testing

/// `rediss://`: connections over OpenSSL to a TLS-only `redis-server` with
/// a CA made for the test, hiredis still parsing the replies.
struct RedisTLSTests {
    @Test func commandsRoundTripOverTLSWithAndWithoutAClientCertificate() async throws {
        let pki = try TestPKI()
        let server = try RedisServer(tls: pki)
        for tls in [try RedisTLS(caFile: pki.caFile),
                    try RedisTLS(caFile: pki.caFile, certificateFile: pki.clientCertificate, keyFile: pki.clientKey)] {
            var configuration = RedisConfiguration()
            configuration.tls = tls
            let connection = RedisConnection(to: server.node, configuration: configuration)
            defer { connection.close() }
            #expect(try await connection.send(["PING"]) == .simple("PONG"))
            // Larger than a TLS record and a socket's buffer, both ways: partial
            // writes wait for room, and every decrypted byte is read.
            let large = String(repeating: "0123456789abcdef", count: 65_536)
            #expect(try await connection.send(["SET", "large", large]) == .simple("OK"))
            #expect(try await connection.send(["GET", "large"]) == .bulk(Array(large.utf8)))
            let replies = await withTaskGroup(of: RESPValue?.self) { group in
                for index in 0..<500 { group.addTask { try? await connection.send(["ECHO", "\(index)"]) } }
                return await group.reduce(into: 0) { count, reply in if reply != nil { count += 1 } }
            }
            #expect(replies == 500)
        }
    }

    /// A server whose certificate comes from another CA is refused, with
    /// OpenSSL's reason, as configuration (retrying will not fix it).
    @Test func aCertificateFromAnotherCAIsRefusedWithTheReason() async throws {
        let server = try RedisServer(tls: TestPKI())
        let reason = try await refusal(connectingTo: server.node, trusting: TestPKI().caFile)
        #expect(reason.contains("the certificate of 127.0.0.1 was refused"), "\(reason)")
        #expect(reason.contains("unable to get local issuer certificate") || reason.contains("self-signed"), "\(reason)")
    }

    /// A certificate from the right CA for another host is refused too: the
    /// CA alone would let any of its certificates stand in for this server.
    @Test func aCertificateForAnotherHostIsRefused() async throws {
        let pki = try TestPKI(names: "DNS:redis.example")
        let server = try RedisServer(tls: pki)
        let reason = try await refusal(connectingTo: server.node, trusting: pki.caFile)
        #expect(reason.contains("the certificate of 127.0.0.1 was refused"), "\(reason)")
        #expect(reason.contains("mismatch"), "\(reason)")
    }

    @Test func unusableTLSFilesAreRefusedWhenTheClientIsMade() throws {
        #expect(throws: RedisTLS.Failure.self) { try RedisTLS(caFile: "/nonexistent/ca.pem") }
        let pki = try TestPKI()
        #expect(throws: RedisTLS.Failure.self) {
            try RedisTLS(caFile: pki.caFile, certificateFile: pki.clientCertificate, keyFile: pki.serverKey)
        }
        #expect(throws: RedisTLS.Failure.self) { try RedisTLS(caFile: pki.caFile, certificateFile: pki.clientCertificate) }
    }

    private func refusal(connectingTo node: RedisNode, trusting caFile: String) async throws -> String {
        let events = EventLog()
        var configuration = RedisConfiguration()
        configuration.tls = try RedisTLS(caFile: caFile)
        configuration.connectionEvents = { events.append($0) }
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        await #expect(throws: RedisError.self) { try await connection.send(["PING"]) }
        #expect(await eventually { !events.changes.isEmpty })
        guard case .refused(let reason) = events.changes.first else {
            Issue.record("\(events.changes)")
            return ""
        }
        return reason
    }
}
