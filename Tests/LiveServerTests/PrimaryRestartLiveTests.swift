import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

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
        let server = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix) { $0.redis.timeout = 8 }
        #expect(server.waitUntilReady())
        let id = try server.createSession(inset: 10)
        let primary = try cluster.primary(of: HashSlot.of(Array("\(prefix){\(id)}".utf8)))
        try primary.cli(["SAVE"])

        primary.signal(SIGSTOP)
        let (reader, writer) = (try server.client(), try server.client())
        // Each request is out once the frozen primary's sockets hold its
        // bytes unread: the read first, then the change behind it.
        let before = unreadBytes(atPort: primary.port)
        try reader.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        #expect(TopChromeTesting.eventually(within: 10) { unreadBytes(atPort: primary.port) > before })
        let readOut = unreadBytes(atPort: primary.port)
        let body = #"{"inset": 30}"#
        try writer.send(raw: Array(("PUT /v1/sessions/\(id)/inset HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8))
        #expect(TopChromeTesting.eventually(within: 10) { unreadBytes(atPort: primary.port) > readOut })
        primary.stop()
        try primary.restart()

        // Out on the socket, the change may have run: 503 saying so. (Other
        // traffic to the node, such as the slot map's refresh, can make the
        // bytes counted above not the change's: then it was refused before
        // it went out, and says nothing was changed — true either way.)
        let change = try writer.readResponse()
        #expect(change.isRetryableRefusal, "\(change.status) \(change.text)")
        // The read is answered after the restart, and the change was not
        // sent again behind it.
        let read = try reader.readResponse()
        #expect(read.status == 200, "\(read.status) \(read.text)")
        #expect(try read.json["inset"] as? Int == 10)
        let later = try server.client().request("GET", "/v1/sessions/\(id)")
        #expect(try later.json["inset"] as? Int == 10, "\(later.text)")
    }
}
