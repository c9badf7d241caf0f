import Foundation
import Redis
import RedisTestSupport
import Testing

/// Requests out on the connection to a cluster's primary when it is
/// killed and started again: a read of a session is sent once more and
/// answered once the primary is back; a change is not (it may have run),
/// and gets 503 saying so.
@Suite struct PrimaryRestartLiveTests {
    @Test func aReadOutWhenItsPrimaryRestartsIsAnsweredAndAChangeSaysItMayHaveBeenMade() throws {
        let cluster = try RedisClusterFixture.dedicated(replicasPerPrimary: 0)
        let prefix = "restart\(UInt32.random(in: 0...UInt32.max)):"
        // Long enough for the primary to start again and serve (a restarted
        // primary answers CLUSTERDOWN for its first 2 s, waited out too).
        let server = try LiveServer(store: .redis(cluster.seeds), keyPrefix: prefix) { $0.redisTimeout = 8 }
        #expect(server.waitUntilReady())
        let id = try server.createSession(inset: 10)
        let primary = try cluster.primary(of: HashSlot.of(Array("\(prefix){\(id)}".utf8)))
        try primary.cli(["SAVE"])

        primary.signal(SIGSTOP)
        let (reader, writer) = (try server.client(), try server.client())
        try reader.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        let body = #"{"inset": 30}"#
        try writer.send(raw: Array(("PUT /v1/sessions/\(id)/inset HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8))
        // Both reach the frozen primary's socket; then it dies under them.
        Thread.sleep(forTimeInterval: 0.3)
        primary.stop()
        try primary.restart()

        let change = try writer.readResponse()
        #expect(change.status == 503, "\(change.status) \(change.text)")
        #expect(change.text.contains("may have been made"), "\(change.text)")
        let read = try reader.readResponse()
        #expect(read.status == 200, "\(read.status) \(read.text)")
        #expect(try read.json["inset"] as? Int == 10)
    }
}
