import Foundation
@testable import Redis
import RedisTestSupport
import Testing

/// One connection against a real `redis-server` started by the test.
struct RedisConnectionTests {
    @Test func commandsRoundTripEveryReplyType() async throws {
        let server = try RedisServer()
        let roundTrips = Counter()
        var configuration = RedisConfiguration()
        configuration.metrics.roundTrip = { _, kind, duration in if duration > .zero, kind == .other { roundTrips.increment() } }
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["SET", "greeting", "hello"]) == .simple("OK"))
        #expect(try await connection.send(["GET", "greeting"]) == .bulk(Array("hello".utf8)))
        #expect(try await connection.send(["GET", "missing"]) == .null)
        #expect(try await connection.send(["INCRBY", "n", "-5"]) == .integer(-5))
        #expect(try await connection.send(["RPUSH", "list", "a", "b"]) == .integer(2))
        #expect(try await connection.send(["LRANGE", "list", "0", "-1"]) == .array([.bulk([97]), .bulk([98])]))
        guard case .error(let message) = try await connection.send(["INCR", "greeting"]) else {
            Issue.record("an error reply is a value")
            return
        }
        #expect(message.hasPrefix("ERR"))
        let binary: [UInt8] = [0, 13, 10, 255, 36]
        let stored = await withCheckedContinuation { done in
            connection.send([Array("SET".utf8), Array("bin".utf8), binary]) { _ in
                connection.send([Array("GET".utf8), Array("bin".utf8)]) { done.resume(returning: $0) }
            }
        }
        #expect(try stored.get() == .bulk(binary))
        // One round trip measured per command sent (the setup PING is not a caller's).
        #expect(roundTrips.value == 9)
    }

    @Test func tenThousandPipelinedCommandsGetTheirOwnRepliesInOrder() async throws {
        let server = try RedisServer()
        let connection = RedisConnection(to: server.node)
        defer { connection.close() }
        let count = 10_000
        let replies = Replies(count: count)
        // All in flight at once: each INCR must get the count it made.
        for index in 0..<count {
            connection.send(["INCR", "counter"], deadline: .now + .seconds(30)) { replies.set(index, $0) }
        }
        let all = await replies.wait()
        #expect(all.enumerated().allSatisfy { index, reply in (try? reply.get()) == .integer(Int64(index + 1)) })
    }

    @Test func callersOnManyThreadsEachGetTheirOwnReply() async throws {
        let server = try RedisServer()
        let connection = RedisConnection(to: server.node)
        defer { connection.close() }
        let perThread = 2_000
        let replies = Replies(count: 4 * perThread)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<perThread {
                let slot = thread * perThread + index
                connection.send(["ECHO", "payload-\(slot)"], deadline: .now + .seconds(30)) { replies.set(slot, $0) }
            }
        }
        let all = await replies.wait()
        #expect(all.enumerated().allSatisfy { slot, reply in (try? reply.get())?.string == "payload-\(slot)" })
    }

    @Test func aCommandPastItsDeadlineFailsAndItsLateReplyGoesToNobody() async throws {
        let server = try RedisServer(["--enable-debug-command", "yes"])
        let timeouts = Counter()
        var configuration = RedisConfiguration()
        configuration.metrics.failed = { _, error in if error == .timeout { timeouts.increment() } }
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["SET", "k", "before"]) == .simple("OK"))
        // The server sleeps; both commands, sent together, time out...
        let late = Replies(count: 2)
        connection.send(["DEBUG", "SLEEP", "0.5"], deadline: .now + .milliseconds(100)) { late.set(0, $0) }
        connection.send(["SET", "k", "after"], deadline: .now + .milliseconds(100)) { late.set(1, $0) }
        for result in await late.wait() {
            #expect(throws: RedisError.timeout) { try result.get() }
        }
        #expect(timeouts.value == 2)
        // ...and their replies, arriving later, must not be taken for this one's.
        #expect(try await connection.send(["GET", "k"]) == .bulk(Array("after".utf8)))
        #expect(try await connection.send(["PING"]) == .simple("PONG"))
    }

    @Test func aStoppedServerFailsCommandsAndTheConnectionComesBackWithIt() async throws {
        let server = try RedisServer()
        let reconnects = Counter()
        let connects = Counter()
        let failures = Counter()
        var configuration = RedisConfiguration()
        configuration.reconnectBackoff = Backoff(base: .milliseconds(10), cap: .milliseconds(100))
        configuration.metrics.reconnected = { _ in reconnects.increment() }
        configuration.metrics.failed = { _, _ in failures.increment() }
        configuration.connected = { _ in connects.increment() }
        configuration.setupCommands = [["INCR", "setups"].map { Array($0.utf8) }]
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["GET", "setups"]) == .bulk(Array("1".utf8)))

        server.stop()
        // Fails (how depends on timing: lost in flight, refused while reconnecting,
        // or its deadline), but always fails, and well before the test gives up.
        let failure = await withCheckedContinuation { done in
            connection.send(["PING"], deadline: .now + .milliseconds(300)) { done.resume(returning: $0) }
        }
        #expect(throws: RedisError.self) { try failure.get() }
        #expect(failures.value >= 1)
        #expect(!connection.isConnected)

        try server.restart()
        let back = await eventually { (try? await connection.send(["PING"])) == .simple("PONG") }
        #expect(back)
        #expect(reconnects.value >= 1)
        #expect(connects.value >= 2)
        // The setup commands ran again on the new connection (the new server starts empty).
        #expect(try await connection.send(["GET", "setups"]) == .bulk(Array("1".utf8)))
    }

    @Test func aServerThatStopsAnsweringIsDroppedAndReconnected() async throws {
        let server = try RedisServer()
        let drops = Counter()
        var configuration = RedisConfiguration()
        configuration.commandTimeout = timeScaled(.seconds(1))
        configuration.reconnectBackoff = Backoff(base: .milliseconds(10), cap: .milliseconds(100))
        configuration.metrics.disconnected = { _ in drops.increment() }
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["PING"]) == .simple("PONG"))

        server.signal(SIGSTOP)
        defer { server.signal(SIGCONT) }
        await #expect(throws: RedisError.timeout) { try await connection.send(["PING"]) }
        // The TCP connection is still open; only the silence gives the server away.
        #expect(await eventually { drops.value >= 1 })
        server.signal(SIGCONT)
        #expect(await eventually { (try? await connection.send(["PING"])) == .simple("PONG") })
    }

    /// What an operator's log is told: one event per change (not per
    /// retry), with the reason; the recovery once it serves again.
    @Test func connectionEventsReportEachChangeOnce() async throws {
        let server = try RedisServer()
        let events = EventLog()
        var configuration = RedisConfiguration()
        configuration.reconnectBackoff = Backoff(base: .milliseconds(5), cap: .milliseconds(20))
        configuration.connectionEvents = { events.append($0) }
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["PING"]) == .simple("PONG"))
        #expect(events.changes == [.connected])
        #expect(events.all.allSatisfy { $0.node == server.node && !$0.isSubscriber })

        server.stop()
        #expect(await eventually { events.changes.count == 2 })
        try await Task.sleep(for: .milliseconds(300))  // many retries fail meanwhile
        let lost = events.changes
        #expect(lost.count == 2, "\(lost)")
        guard case .lost(let reason) = lost.last else { Issue.record("not a loss: \(lost)"); return }
        #expect(!reason.isEmpty)

        try server.restart()
        #expect(await eventually { events.changes.count == 3 })
        #expect(events.changes.last == .recovered)
    }

    @Test func aRedisThatIsNotThereAndOneThatRefusesThePasswordAreEachReportedOnce() async throws {
        let server = try RedisServer(["--requirepass", "s3cret"])
        server.stop()
        let events = EventLog()
        var configuration = RedisConfiguration()
        configuration.password = "guess"
        configuration.reconnectBackoff = Backoff(base: .milliseconds(5), cap: .milliseconds(20))
        configuration.connectionEvents = { events.append($0) }
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(await eventually { !events.changes.isEmpty })
        try await Task.sleep(for: .milliseconds(200))
        guard events.changes.count == 1, case .unreachable = events.changes[0] else {
            Issue.record("\(events.changes)")
            return
        }
        try server.restart()
        #expect(await eventually { events.changes.count == 2 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(events.changes.count == 2, "\(events.changes)")
        guard case .refused(let reason) = events.changes.last else { Issue.record("\(events.changes)"); return }
        #expect(reason.contains("WRONGPASS"))
    }

    /// A reply claiming two billion elements (a broken or hostile server)
    /// is refused by the reader: the connection is dropped, says why, and
    /// is made again, instead of hiredis allocating 16 GiB and waiting.
    @Test func aHugeArrayHeaderDropsTheConnection() async throws {
        let fake = try FakeRedis(reply: Array("*2147483647\r\n".utf8))
        var configuration = RedisConfiguration()
        configuration.commandTimeout = .seconds(5)
        configuration.reconnectBackoff = Backoff(base: .milliseconds(5), cap: .milliseconds(20))
        let connection = RedisConnection(to: RedisNode(host: "127.0.0.1", port: fake.port), configuration: configuration)
        defer { connection.close() }
        #expect(await eventually(within: 4) { connection.lastFailureReason?.contains("array of more than") == true },
                "\(connection.lastFailureReason ?? "no failure")")
        #expect(await eventually(within: 4) { fake.accepted >= 2 }, "connected again")
        #expect(!connection.isConnected)
    }

    /// Wakes pile up while the I/O thread works; one drain takes them all,
    /// however many there were, whether or not they fill its buffer.
    @Test(arguments: [1, 31, 32, 33, 100])
    func oneDrainEmptiesThePipe(wakes: Int) {
        let pipe = WakePipe()
        for _ in 0..<wakes { pipe.wake() }
        pipe.drain()
        var byte: UInt8 = 0
        #expect(read(pipe.readEnd, &byte, 1) == -1 && errno == EAGAIN, "nothing is left")
    }

    /// A caller can wake the I/O thread just as it stops (every `close()`
    /// wakes it); the byte must land in the connection's own pipe, not in
    /// whatever socket or file has since taken a closed end's number. The
    /// pipe goes with the connection.
    @Test func aWakeAfterTheIOThreadStoppedStaysInTheConnectionsOwnPipe() async throws {
        var connection: RedisConnection? = RedisConnection(to: RedisNode(host: "127.0.0.1", port: 1))
        let pipe = try #require(connection?.wakePipe)
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        let identity = { (fd: Int32) -> UInt? in
            var status = stat()
            return fstat(fd, &status) == 0 ? UInt(status.st_ino) : nil
        }
        let inode = identity(readEnd)
        #expect(inode != nil && identity(writeEnd) == inode)

        connection?.close()
        #expect(await eventually { connection?.isClosed == true })
        try await Task.sleep(for: .milliseconds(200))  // the thread's last steps after closing
        #expect(identity(readEnd) == inode && identity(writeEnd) == inode, "the ends are still the pipe's")

        connection?.close()
        var byte: UInt8 = 0
        #expect(read(readEnd, &byte, 1) == 1 && byte == 1, "the late wake is in the connection's own pipe")

        connection = nil
        _ = consume pipe
        #expect(await eventually { identity(readEnd) != inode }, "closed with the connection")
    }

    @Test func authenticatesWithThePasswordOnEveryConnection() async throws {
        let server = try RedisServer(["--requirepass", "s3cret"])
        var configuration = RedisConfiguration()
        configuration.password = "s3cret"
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["SET", "a", "1"]) == .simple("OK"))

        var wrong = RedisConfiguration()
        wrong.password = "guess"
        wrong.commandTimeout = timeScaled(.milliseconds(300))
        let refused = RedisConnection(to: server.node, configuration: wrong)
        defer { refused.close() }
        let result = await withCheckedContinuation { done in refused.send(["GET", "a"]) { done.resume(returning: $0) } }
        #expect(throws: RedisError.self) { try result.get() }
        #expect(await eventually { refused.lastFailureReason?.contains("WRONGPASS") == true })
        #expect(!refused.isConnected)
    }

    @Test func aClientOnASingleRedisSendsEverythingThere() async throws {
        let server = try RedisServer()
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        #expect(try await client.send(["SET", "x", "1"]) == .simple("OK"))
        #expect(await eventually { client.topology == .single })
        #expect(try await client.send(["GET", "x"]) == .bulk([49]))
        #expect(client.isConnected)
    }

    /// `WAIT` holds the connection it runs on until enough replicas answer or
    /// it times out: here, a Redis without replicas and a `WAIT` without a
    /// timeout, until the client closes. Reads sent meanwhile are answered
    /// all the same. (With a timeout, a test held up longer than it, as the
    /// busy runs of a whole suite can hold one, would find the WAIT over.)
    @Test func aWaitingFollowUpHoldsNoOtherCommandUp() async throws {
        let server = try RedisServer()
        var configuration = RedisConfiguration()
        configuration.commandTimeout = .seconds(10)  // room for a slow machine, far below the WAIT's
        let client = RedisClient(seeds: [server.node], configuration: configuration)
        defer { client.close() }
        #expect(try await client.send(["SET", "w", "1"]) == .simple("OK"))

        let waited = Confirmation()
        client.send([Array("SET".utf8), Array("w".utf8), Array("2".utf8)], followedBy: { _ in
            RedisClient.FollowUp([Array("WAIT".utf8), Array("1".utf8), Array("0".utf8)], deadline: .now + .seconds(3600))
        }) { first, second in
            waited.set(first: first, second: second)
        }
        #expect(await eventually {
            guard case let .bulk(info)? = try? await client.send(["INFO", "clients"]) else { return false }
            return String(decoding: info, as: UTF8.self).contains("blocked_clients:1")
        }, "the WAIT is in Redis")
        #expect(try await client.send(["GET", "w"]) == .bulk(Array("2".utf8)))
        #expect(waited.value == nil, "the WAIT is still waiting")
    }

    /// What a follow-up command's completion was handed.
    final class Confirmation: @unchecked Sendable {
        private let lock = NSLock()
        private var results: (first: Result<RESPValue, RedisError>, second: Result<RESPValue, RedisError>?)?
        var value: (first: Result<RESPValue, RedisError>, second: Result<RESPValue, RedisError>?)? { lock.withLock { results } }
        func set(first: Result<RESPValue, RedisError>, second: Result<RESPValue, RedisError>?) {
            lock.withLock { results = (first, second) }
        }
    }

    /// A `CLUSTER SLOTS` reply can arrive while the client closes; the map's
    /// nodes must not be connected then, or nothing would ever close them.
    /// The node listens on an address no other test uses: on a busy machine
    /// a client of another test, reconnecting to a port since given to this
    /// node, was counted here (19 connections, under TSan).
    @Test func aSlotMapArrivingAfterCloseConnectsNothing() async throws {
        let fake = try FakeRedis(reply: Array("+OK\r\n".utf8), host: "127.0.0.9")
        let client = RedisClient(seeds: [RedisNode(host: "127.0.0.1", port: 1)])
        client.close()
        let node = RedisNode(host: "127.0.0.9", port: fake.port)
        let reply = RESPValue.array([.array([.integer(0), .integer(16383), .array([.bulk(Array(node.host.utf8)), .integer(Int64(node.port))])])])
        client.install(try #require(SlotMap(reply, answeredBy: node)))
        try await Task.sleep(for: .milliseconds(300))
        #expect(fake.accepted == 0)
    }

    @Test func aClientUsesTheFirstSeedThatAnswers() async throws {
        let gone = try RedisServer()
        gone.stop()
        let server = try RedisServer()
        let client = RedisClient(seeds: [gone.node, server.node])
        defer { client.close() }
        #expect(await eventually { client.topology == .single })
        #expect(try await client.send(["PING"]) == .simple("PONG"))
        #expect(client.isConnected)
    }
}
