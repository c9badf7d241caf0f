import Redis

/// `cluster`: what a Redis Cluster tells the client about its topology:
/// redirections (`MOVED`/`ASK`), node addresses in them, `CLUSTER SLOTS`
/// replies, and the slot of any key.
///
/// The input is read twice: whole, as the text of an error reply and as a
/// key; and as RESP (hiredis), each reply then being a `CLUSTER SLOTS`
/// answer, and each text in it a redirection, an address and a key.
///
/// Invariants: nothing crashes; `HashSlot.of` equals a CRC-16/XMODEM
/// computed the textbook way (bit by bit over the message and 16 zero bits)
/// over the hash tag as the cluster specification's pseudo-code finds it;
/// `SlotMap` accepts exactly the replies `referenceSlots` accepts, with the
/// same owner for every slot; a redirection or address as Redis writes it
/// is read back exactly, and whatever is accepted is a slot in range and a
/// node the client can connect to (a host, a port in 1...65535), which
/// reads back the same when written as Redis writes it.
enum ClusterTarget {
    static let target = FuzzTarget(
        name: "cluster",
        summary: "MOVED/ASK, node addresses, CLUSTER SLOTS replies and key slots, against references",
        run: run)

    static let answering = RedisNode(host: "10.0.0.9", port: 7009)

    static func run(_ bytes: [UInt8]) {
        let input = printable(bytes)
        checkText(bytes, input: input)
        guard let replies = RESPValue.parse(bytes) else { return }
        for reply in replies {
            checkSlots(reply, input: input)
            forEachText(in: reply) { checkText($0, input: input) }
        }
    }

    private static func forEachText(in value: RESPValue, _ body: ([UInt8]) -> Void) {
        switch value {
        case let .simple(text), let .error(text): body(Array(text.utf8))
        case let .bulk(bytes): body(bytes)
        case let .array(values): values.forEach { forEachText(in: $0, body) }
        case .integer, .null: break
        }
    }

    // MARK: Keys, redirections, addresses

    static func checkText(_ bytes: [UInt8], input: String) {
        let slot = HashSlot.of(bytes)
        check(slot == referenceSlot(bytes), "HashSlot.of(\(printable(bytes))) = \(slot), reference \(referenceSlot(bytes)): \(input)")
        let text = String(decoding: bytes, as: UTF8.self)
        check(HashSlot.of(text) == HashSlot.of(Array(text.utf8)), "HashSlot.of(String) differs from its UTF-8: \(input)")

        let redirect = ClusterRedirect(text)
        if let redirect {
            check((0..<HashSlot.count).contains(redirect.slot), "redirect to slot \(redirect.slot): \(input)")
            checkConnectable(redirect.node, input: input)
            check(ClusterRedirect(written(redirect)) == redirect, "\(redirect) does not read back: \(input)")
        }
        if let expected = asRedisWrites(bytes) {
            let read = redirect.map { Redirection(asking: $0.asking, slot: $0.slot, node: $0.node) }
            check(read == expected, "\(printable(bytes)) read as \(String(describing: read)), expected \(String(describing: expected)): \(input)")
        }

        let node = RedisNode(Substring(text))
        if let node {
            checkConnectable(node, input: input)
            // The wire form, not `description`, which brackets IPv6 hosts for people.
            check(RedisNode(Substring("\(node.host):\(node.port)")) == node, "\(node) does not read back: \(input)")
        }
        if let expected = addressAsRedisWrites(bytes[...]) {
            check(node == expected, "\(text) read as \(String(describing: node)), expected \(String(describing: expected)): \(input)")
        }
    }

    private static func checkConnectable(_ node: RedisNode, input: String) {
        check(!node.host.isEmpty && (1...65535).contains(node.port), "a node no one can connect to: \(node): \(input)")
    }

    /// As Redis writes a redirection (`clusterRedirectClient`): "MOVED %d %s:%d".
    private static func written(_ redirect: ClusterRedirect) -> String {
        "\(redirect.asking ? "ASK" : "MOVED") \(redirect.slot) \(redirect.node.host):\(redirect.node.port)"
    }

    struct Redirection: Equatable {
        let asking: Bool, slot: Int, node: RedisNode
    }

    /// What the redirection is when Redis could have written it exactly so
    /// (one space apart, plain decimals, a host of printable ASCII): nil
    /// inside when it must be refused (slot or port out of range), nil
    /// outside when Redis never writes such text (the client may read it
    /// more leniently than Redis writes).
    private static func asRedisWrites(_ bytes: [UInt8]) -> Redirection?? {
        let words = bytes.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard words.count == 3, words[0].elementsEqual("MOVED".utf8) || words[0].elementsEqual("ASK".utf8),
              let slot = canonicalNumber(words[1]), let address = addressParts(words[2]) else { return nil }
        guard slot < HashSlot.count, (1...65535).contains(address.port) else { return .some(nil) }
        return .some(Redirection(asking: words[0].elementsEqual("ASK".utf8), slot: slot,
                                 node: RedisNode(host: address.host, port: address.port)))
    }

    /// `host:port` as Redis writes it, when the port is one; else nil.
    private static func addressAsRedisWrites(_ bytes: ArraySlice<UInt8>) -> RedisNode?? {
        guard let address = addressParts(bytes) else { return nil }
        return .some((1...65535).contains(address.port) ? RedisNode(host: address.host, port: address.port) : nil)
    }

    /// A non-empty host of printable ASCII (IPv6 colons included), a colon, a plain decimal.
    private static func addressParts(_ bytes: ArraySlice<UInt8>) -> (host: String, port: Int)? {
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")), colon > bytes.startIndex,
              bytes[..<colon].allSatisfy({ (0x21...0x7E).contains($0) }),
              let port = canonicalNumber(bytes[(colon + 1)...]) else { return nil }
        return (String(decoding: bytes[..<colon], as: UTF8.self), port)
    }

    /// Digits as Redis writes a number: no sign, no leading zero, at most 9 of them.
    private static func canonicalNumber(_ digits: ArraySlice<UInt8>) -> Int? {
        guard let first = digits.first, digits.count <= 9, digits.allSatisfy({ (0x30...0x39).contains($0) }),
              first != 0x30 || digits.count == 1 else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    // MARK: Slots

    /// The cluster specification: the hash tag is what lies between the
    /// first `{` and the first `}` after it, if anything does.
    static func referenceSlot(_ key: [UInt8]) -> Int {
        var hashed = key[...]
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            var close = open + 1
            while close < key.count && key[close] != UInt8(ascii: "}") { close += 1 }
            if close < key.count && close != open + 1 { hashed = key[(open + 1)..<close] }
        }
        return Int(textbookCRC16(hashed)) % 16384
    }

    /// Polynomial division, one bit at a time, of the message followed by 16 zero bits.
    static func textbookCRC16(_ message: ArraySlice<UInt8>) -> UInt16 {
        var register: UInt32 = 0
        for byte in Array(message) + [0, 0] {
            for bit in (0..<8).reversed() {
                register = (register << 1) | UInt32((byte >> bit) & 1)
                if register & 0x1_0000 != 0 { register ^= 0x1_1021 }
            }
        }
        return UInt16(register)
    }

    // MARK: CLUSTER SLOTS

    static func checkSlots(_ reply: RESPValue, input: String) {
        let map = SlotMap(reply, answeredBy: answering)
        let expected = referenceSlots(reply)
        guard let map, let expected else {
            check(map == nil && expected == nil,
                  "SlotMap \(map == nil ? "refused" : "accepted") \(reply), the reference \(expected == nil ? "refuses" : "accepts") it: \(input)")
            return
        }
        for slot in 0..<HashSlot.count where map[slot] != expected[slot] {
            fail("slot \(slot): \(String(describing: map[slot])), expected \(String(describing: expected[slot])), in \(reply): \(input)")
        }
        check(map.nodes == Set(expected.compactMap { $0 }), "SlotMap.nodes differs: \(input)")
        for node in map.nodes { checkConnectable(node, input: input) }
    }

    /// `CLUSTER SLOTS` as Redis documents it: an array of ranges, each
    /// `[start, end, primary, replicas…]`, slots inclusive, the primary
    /// `[host, port, id…]`; a later range wins where ranges overlap; an empty
    /// host means the node that answered. A primary must be a node the
    /// client can connect to (a port in 1...65535). A null host (Redis 7:
    /// "unknown endpoint") is refused, as the client does today.
    static func referenceSlots(_ reply: RESPValue) -> [RedisNode?]? {
        guard case let .array(ranges) = reply else { return nil }
        var owners = [RedisNode?](repeating: nil, count: 16384)
        for range in ranges {
            guard case let .array(fields) = range, fields.count > 2,
                  case let .integer(first) = fields[0], case let .integer(last) = fields[1],
                  first >= 0, last < 16384, first <= last,
                  case let .array(primary) = fields[2], primary.count > 1,
                  case let .integer(port) = primary[1], port >= 1, port <= 65535
            else { return nil }
            let host: String
            switch primary[0] {
            case let .simple(text): host = text
            case let .bulk(bytes): host = String(decoding: bytes, as: UTF8.self)
            default: return nil
            }
            let node = host.isEmpty ? RedisNode(host: answering.host, port: Int(port)) : RedisNode(host: host, port: Int(port))
            for slot in Int(first)...Int(last) { owners[slot] = node }
        }
        return owners
    }
}
