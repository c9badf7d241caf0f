import Foundation
import Redis
import RedisTestSupport
import Testing

/// One connection against a real `redis-server` started by the test.
struct RedisConnectionTests {
    @Test func commandsRoundTripEveryReplyType() async throws {
        let server = try RedisServer()
        let roundTrips = Counter()
        var configuration = RedisConfiguration()
        configuration.metrics.roundTrip = { _, duration in if duration > .zero { roundTrips.increment() } }
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
        configuration.commandTimeout = .milliseconds(200)
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

    @Test func authenticatesWithThePasswordOnEveryConnection() async throws {
        let server = try RedisServer(["--requirepass", "s3cret"])
        var configuration = RedisConfiguration()
        configuration.password = "s3cret"
        let connection = RedisConnection(to: server.node, configuration: configuration)
        defer { connection.close() }
        #expect(try await connection.send(["SET", "a", "1"]) == .simple("OK"))

        var wrong = RedisConfiguration()
        wrong.password = "guess"
        wrong.commandTimeout = .milliseconds(300)
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

/// Replies collected by index from completions on I/O threads.
final class Replies: @unchecked Sendable {
    private let lock = NSLock()
    private var replies: [Result<RESPValue, RedisError>?]
    private var left: Int
    private var waiter: CheckedContinuation<[Result<RESPValue, RedisError>], Never>?

    init(count: Int) {
        replies = Array(repeating: nil, count: count)
        left = count
    }

    func set(_ index: Int, _ reply: Result<RESPValue, RedisError>) {
        let done: (CheckedContinuation<[Result<RESPValue, RedisError>], Never>, [Result<RESPValue, RedisError>])? = lock.withLock {
            replies[index] = reply
            left -= 1
            guard left == 0, let waiter else { return nil }
            self.waiter = nil
            return (waiter, replies.map { $0! })
        }
        if let (waiter, all) = done { waiter.resume(returning: all) }
    }

    func wait() async -> [Result<RESPValue, RedisError>] {
        await withCheckedContinuation { continuation in
            let all: [Result<RESPValue, RedisError>]? = lock.withLock {
                if left == 0 { return replies.map { $0! } }
                waiter = continuation
                return nil
            }
            if let all { continuation.resume(returning: all) }
        }
    }
}
