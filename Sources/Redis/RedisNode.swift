/// The address of one Redis server.
public struct RedisNode: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `host:port` as Redis writes it in `MOVED`/`ASK` replies; the last
    /// colon separates the port, so IPv6 hosts keep theirs.
    public init?(_ address: Substring) {
        guard let colon = address.lastIndex(of: ":"),
              let number = Int(address[address.index(after: colon)...]), (1...65535).contains(number)
        else { return nil }
        host = String(address[..<colon])
        port = number
        if host.isEmpty { return nil }
    }

    /// An IPv6 address in brackets, as in a URL: `[::1]:6379`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
