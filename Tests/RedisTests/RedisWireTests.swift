import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// What needs no server: slots, reply conversion, redirections, routing keys, backoff.
struct RedisWireTests {
    @Test func crc16MatchesTheClusterSpecificationsCheckValue() {
        // "The CRC16 … Output for "123456789": 31C3" (Redis Cluster specification).
        #expect(HashSlot.of("123456789") == 0x31C3)
    }

    @Test func hashTagsFollowTheSpecificationsExamples() {
        #expect(HashSlot.of("{user1000}.following") == HashSlot.of("user1000"))
        #expect(HashSlot.of("{user1000}.followers") == HashSlot.of("user1000"))
        // An empty tag does not count: the whole key is hashed.
        #expect(HashSlot.of("foo{}{bar}") == Int(crc16Whole("foo{}{bar}")))
        #expect(HashSlot.of("foo{{bar}}zap") == HashSlot.of("{bar"))
        #expect(HashSlot.of("foo{bar}{zap}") == HashSlot.of("bar"))
        #expect(HashSlot.of("no-close{brace") == Int(crc16Whole("no-close{brace")))
    }

    private func crc16Whole(_ key: String) -> UInt16 {
        HashSlot.crc16(Array(key.utf8)) & 0x3FFF
    }

    /// The builder that ChromeFunctions writes each call with: RESP framing,
    /// lengths and counts of more than one digit, numbers as Redis and the
    /// function library read them (Swift's shortest round-trip text for doubles).
    @Test func theBuilderWritesRESP() {
        var builder = RESPRequestBuilder(capacity: 8)  // and grows past it
        builder.append(Array("FCALL".utf8))
        builder.append(0 as UInt64)
        builder.append(UInt64.max)
        builder.append(379.5)
        builder.append(-0.0)
        builder.append(1e300)
        builder.append([])
        builder.append(Array("0123456789".utf8))
        #expect(String(decoding: builder.request.bytes, as: UTF8.self) ==
            "*8\r\n$5\r\nFCALL\r\n$1\r\n0\r\n$20\r\n18446744073709551615\r\n$5\r\n379.5\r\n$4\r\n-0.0\r\n"
            + "$6\r\n1e+300\r\n$0\r\n\r\n$10\r\n0123456789\r\n")
        let twelve = RESPRequest(Array(repeating: "x", count: 12))
        #expect(String(decoding: twelve.bytes, as: UTF8.self) == "*12\r\n" + String(repeating: "$1\r\nx\r\n", count: 12))
    }

    /// `take()` gives the bytes `request` gives, without a copy, and leaves
    /// the builder empty and ready for another command; arguments encoded
    /// once are written as if appended one by one.
    @Test func aTakenCommandIsTheSameAndTheBuilderStartsAgain() {
        let words = (0..<11).map { Array("w\($0)".utf8) }
        var oneByOne = RESPRequestBuilder(capacity: 4)
        for word in words { oneByOne.append(word) }
        var encoded = RESPRequestBuilder()
        encoded.append(EncodedArguments(Array(words[..<3])))
        for word in words[3...] { encoded.append(word) }
        let expected = "*11\r\n" + words.map { "$\($0.count)\r\n\(String(decoding: $0, as: UTF8.self))\r\n" }.joined()
        #expect(String(decoding: oneByOne.request.bytes, as: UTF8.self) == expected)
        #expect(String(decoding: encoded.take().bytes, as: UTF8.self) == expected)
        encoded.append(Array("PING".utf8))
        #expect(String(decoding: encoded.take().bytes, as: UTF8.self) == "*1\r\n$4\r\nPING\r\n")
        #expect(String(decoding: encoded.take().bytes, as: UTF8.self) == "*0\r\n")
    }

    /// Bulk strings of one byte and the word `done` come from arrays made
    /// once: they read as any other.
    @Test func sharedBulkStringsReadAsTheirBytes() throws {
        let stream = "*6\r\n$4\r\ndone\r\n$1\r\n0\r\n$1\r\n\u{7F}\r\n$4\r\nDONE\r\n$4\r\ndon!\r\n$5\r\ndone!\r\n"
        let values = try #require(RESPValue.parse(Array(stream.utf8)))
        #expect(values == [.array([.bulk(Array("done".utf8)), .bulk([0x30]), .bulk([0x7F]), .bulk(Array("DONE".utf8)),
                                   .bulk(Array("don!".utf8)), .bulk(Array("done!".utf8))])])
    }

    /// Numbers of every length a call carries, from one digit to a
    /// deadline's thirteen: each written whole, in order.
    @Test(arguments: [9, 10, 99, 100, 101, 999, 1000, 1_796_148_545_039, 10_000_000_000_000_000_000] as [UInt64])
    func theBuilderWritesNumbersOfEveryLength(number: UInt64) {
        var builder = RESPRequestBuilder(capacity: 4)
        builder.append(number)
        let text = String(number)
        #expect(String(decoding: builder.request.bytes, as: UTF8.self) == "*1\r\n$\(text.utf8.count)\r\n\(text)\r\n")
    }

    @Test func repliesConvertFromEveryRESP2Type() throws {
        let stream = "+OK\r\n-ERR wrong\r\n:-42\r\n$5\r\nhe\r\nl\r\n$-1\r\n*-1\r\n*3\r\n:1\r\n*1\r\n$0\r\n\r\n$-1\r\n"
        let values = try #require(RESPValue.parse(Array(stream.utf8)))
        #expect(values == [
            .simple("OK"), .error("ERR wrong"), .integer(-42), .bulk(Array("he\r\nl".utf8)), .null, .null,
            .array([.integer(1), .array([.bulk([])]), .null]),
        ])
    }

    @Test func anIncompleteReplyIsNotYetAReplyAndGarbageIsRefused() {
        #expect(RESPValue.parse(Array("$10\r\nabc".utf8)) == [])
        #expect(RESPValue.parse(Array("?what\r\n".utf8)) == nil)
    }

    /// hiredis would allocate an array's element table for whatever length
    /// its header claims (16 GiB for this one) and then wait for the
    /// elements; the reader refuses it instead, like bytes that are not RESP.
    @Test func anArrayLongerThanAnyReplyIsRefused() {
        #expect(RESPValue.parse(Array("*2147483647\r\n".utf8)) == nil)
        #expect(RESPValue.parse(Array("*2\r\n*1048577\r\n".utf8)) == nil, "nested too")
        #expect(RESPValue.parse(Array("*1048576\r\n".utf8)) == [], "the limit itself is an incomplete reply")
    }

    @Test func redirectionsAreRead() throws {
        let moved = try #require(ClusterRedirect("MOVED 3999 127.0.0.1:6381"))
        #expect(moved.asking == false && moved.slot == 3999 && moved.node == RedisNode(host: "127.0.0.1", port: 6381))
        let ask = try #require(ClusterRedirect("ASK 12 ::1:7000"))
        #expect(ask.asking && ask.slot == 12 && ask.node == RedisNode(host: "::1", port: 7000))
        #expect(ClusterRedirect("MOVED 16384 127.0.0.1:1") == nil)
        #expect(ClusterRedirect("ERR MOVED 1 a:1") == nil)
    }

    /// A node named in a redirection finds what was kept for the same
    /// address under a node made from its parts, and only that.
    @Test func nodesAreKeyedByTheirAddress() throws {
        let kept: [RedisNode: String] = [RedisNode(host: "127.0.0.1", port: 6381): "a", RedisNode(host: "127.0.0.1", port: 6382): "b",
                                         RedisNode(host: "127.0.0.2", port: 6381): "c", RedisNode(host: "::1", port: 6381): "d"]
        #expect(kept[try #require(RedisNode("127.0.0.1:6381"))] == "a")
        #expect(kept[try #require(RedisNode("::1:6381"))] == "d")
        #expect(kept[RedisNode(host: "127.0.0.1", port: 6383)] == nil)
        #expect(kept[RedisNode(host: "127.0.0.3", port: 6381)] == nil)
        #expect(RedisNode(":6381") == nil, "an address without a host")
    }

    @Test func clusterSlotsRepliesAreRead() throws {
        func range(_ start: Int64, _ end: Int64, _ host: String, _ port: Int64) -> RESPValue {
            .array([.integer(start), .integer(end), .array([.bulk(Array(host.utf8)), .integer(port), .bulk(Array("id".utf8))])])
        }
        let answering = RedisNode(host: "10.0.0.9", port: 7009)
        let map = try #require(SlotMap(.array([range(0, 99, "10.0.0.1", 7000), range(100, 16383, "", 65535)]), answeredBy: answering))
        #expect(map[0] == RedisNode(host: "10.0.0.1", port: 7000) && map[99] == map[0])
        #expect(map[100] == RedisNode(host: "10.0.0.9", port: 65535) && map[16383] == map[100])
        #expect(SlotMap(.array([range(0, 16384, "a", 1)]), answeredBy: answering) == nil)
    }

    /// Found by the `cluster` fuzz target: a port that is no TCP port was
    /// taken into the map, and one past Int32 traps when the client connects.
    @Test(arguments: [0, -1, 65536, 1 << 40] as [Int64])
    func clusterSlotsWithAPortThatIsNoPortAreRefused(_ port: Int64) {
        let reply = RESPValue.array([.array([.integer(0), .integer(16383), .array([.bulk(Array("10.0.0.1".utf8)), .integer(port)])])])
        #expect(SlotMap(reply, answeredBy: RedisNode(host: "10.0.0.9", port: 7009)).map(\.nodes) == nil)
    }

    @Test func repliesReadInAnyPiecesAreTheSame() throws {
        let stream = Array("+OK\r\n*2\r\n$3\r\nabc\r\n:-7\r\n$-1\r\n".utf8)
        let reader = RESPReader()
        var values: [RESPValue] = []
        for byte in stream {
            #expect(reader.feed([byte]))
            while let value = try reader.next() { values.append(value) }
        }
        #expect(values == RESPValue.parse(stream))
        #expect(values.count == 3)
        #expect(reader.feed(Array("?".utf8)[...]))
        #expect(throws: HiredisFailure.self) { try reader.next() }
        #expect(!reader.feed(Array("+OK\r\n".utf8)[...]), "a refused stream takes no more")
    }

    @Test func commandsAreRoutedByTheirFirstKey() {
        func key(_ words: String...) -> String? {
            RedisClient.routingKey(of: words.map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(key("GET", "a") == "a")
        #expect(key("hset", "h", "f", "v") == "h")
        #expect(key("FCALL", "f", "2", "k1", "k2", "arg") == "k1")
        #expect(key("FCALL", "f", "0", "arg") == nil)
        #expect(key("PING") == nil)
        #expect(key("INFO", "cluster") == nil)
    }

    @Test func backoffStaysUnderItsCeilingAndGrowsToTheCap() {
        let backoff = Backoff(base: .milliseconds(10), cap: .milliseconds(300))
        var generator = SplitMix(seed: 7)
        for attempt in 0..<12 {
            let ceiling = min(.milliseconds(300), .milliseconds(10) * (1 << attempt))
            let delays = (0..<200).map { _ in backoff.delay(attempt: attempt, using: &generator) }
            #expect(delays.allSatisfy { $0 >= .zero && $0 <= ceiling })
            // Full jitter: the whole range is used, not just its top.
            #expect(delays.contains { $0 < ceiling / 4 } && delays.contains { $0 > ceiling * 3 / 4 })
        }
    }

    /// The system-random delay, drawn by many I/O threads at once as they
    /// lose a server together: within its ceiling, spread over it, and (run
    /// under the thread sanitizer by `make test`) with no shared state.
    @Test func backoffFromTheSystemSourceIsSafeAcrossThreads() {
        let backoff = Backoff(base: .milliseconds(10), cap: .milliseconds(300))
        let results = ThreadResults()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let delays = (0..<500).map { _ in backoff.delay(attempt: 4) }
            results.add(delays)
        }
        let delays = results.all
        #expect(delays.count == 2000)
        #expect(delays.allSatisfy { $0 >= .zero && $0 <= .milliseconds(160) })
        #expect(delays.contains { $0 < .milliseconds(40) } && delays.contains { $0 > .milliseconds(120) })
    }
}

private final class ThreadResults: @unchecked Sendable {
    private let lock = NSLock()
    private var delays: [Duration] = []
    func add(_ more: [Duration]) { lock.withLock { delays += more } }
    var all: [Duration] { lock.withLock { delays } }
}

/// Addresses print as a URL writes them: an IPv6 host in brackets, so its
/// colons cannot be mistaken for the port's.
@Test func anIPv6NodePrintsInBrackets() {
    #expect(RedisNode(host: "::1", port: 6379).description == "[::1]:6379")
    #expect(RedisNode(host: "10.0.0.1", port: 6379).description == "10.0.0.1:6379")
}
