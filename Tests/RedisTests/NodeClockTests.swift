import Foundation
@testable import Redis
import RedisTestSupport
import Testing

/// The node's clock, which a change's deadline is handed to the function in.
struct NodeClockTests {
    /// A `TIME` reply that was long on its way may have waited after the
    /// node read its clock (a loaded process reading its replies late):
    /// kept, it made every change to the node look late to the function
    /// (503) until the next reading, 30 s on. Whatever held it up (here a
    /// slow command ahead of it), it is not kept; a quick one is.
    @Test func aReadingHeldUpOnTheWayIsNotKept() async throws {
        let server = try RedisServer(["--enable-debug-command", "yes"])
        var configuration = RedisConfiguration()
        configuration.commandTimeout = .seconds(2)
        let client = RedisClient(seeds: [server.node], configuration: configuration)
        defer { client.close() }
        #expect(try await client.send(["PING"]) == .simple("PONG"))
        // One connection: the clock's `TIME` waits behind the sleep.
        client.send(["DEBUG", "SLEEP", "0.6"]) { _ in }
        #expect(await Self.milliseconds(client, at: .now) == nil, "a reading 0.6 s on the way is not kept")

        let before = try await Self.time(client)
        var told: Int64?
        for _ in 0..<50 where told == nil {
            told = await Self.milliseconds(client, at: .now)
        }
        let said = try #require(told, "a quick reading is kept")
        let after = try await Self.time(client)
        // Never late, and early by at most the kept reading's round trip.
        #expect(said <= after, "the node's clock now: \(said), TIME after: \(after)")
        #expect(said >= before - 200, "the node's clock now: \(said), TIME before: \(before)")
    }

    /// `TIME`, in Unix milliseconds.
    static func time(_ client: RedisClient) async throws -> Int64 {
        guard case let .array(parts) = try await client.send(["TIME"]), parts.count == 2,
              let seconds = parts[0].string.flatMap({ Int64($0) }), let micros = parts[1].string.flatMap({ Int64($0) })
        else { throw RedisError.unavailable }
        return seconds * 1000 + micros / 1000
    }

    static func milliseconds(_ client: RedisClient, at deadline: ContinuousClock.Instant) async -> Int64? {
        await withCheckedContinuation { done in
            client.redisMilliseconds(at: deadline, forSlot: 0) { time in
                if case let .milliseconds(milliseconds) = time { done.resume(returning: milliseconds) } else { done.resume(returning: nil) }
            }
        }
    }
}
