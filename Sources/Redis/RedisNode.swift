/// The address of one Redis server.
public struct RedisNode: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// Every call looks its node up by address, for the node's clock and
    /// its connection: the address is hashed once, here, not each time.
    private let addressHash: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
        var hasher = Hasher()
        hasher.combine(host)
        hasher.combine(port)
        addressHash = hasher.finalize()
    }

    public static func == (left: RedisNode, right: RedisNode) -> Bool {
        left.port == right.port && left.host == right.host
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(addressHash)
    }

    /// Reads `host:port` as Redis writes it in `MOVED`/`ASK` replies; the last
    /// colon separates the port, so IPv6 hosts keep theirs.
    public init?(_ address: Substring) {
        guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
              let number = Int(address[address.index(after: colon)...]), (1...65535).contains(number)
        else { return nil }
        self.init(host: String(address[..<colon]), port: number)
    }

    public var description: String { "\(host):\(port)" }
}
