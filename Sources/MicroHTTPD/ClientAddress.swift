#if canImport(Glibc)
import Glibc
#endif

/// Where a request came from: an IPv4 or IPv6 address, read once per
/// connection and, behind trusted proxies, from `X-Forwarded-For`.
public struct ClientAddress: Sendable, Hashable {
    /// The address in network order: 4 bytes for IPv4, 16 for IPv6.
    let bytes: [UInt8]

    var isIPv6: Bool { bytes.count == 16 }

    /// An IPv4 address or an IPv6 one.
    public init?(_ text: some StringProtocol) {
        let text = String(text)
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: v4) { Array($0) })
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// What a socket address names; nil for a family that is neither.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            self.init(bytes: withUnsafeBytes(of: UnsafeRawPointer(address).load(as: sockaddr_in.self).sin_addr) { Array($0) })
        case AF_INET6:
            self.init(bytes: withUnsafeBytes(of: UnsafeRawPointer(address).load(as: sockaddr_in6.self).sin6_addr) { Array($0) })
        default:
            return nil
        }
    }

    /// An IPv4-mapped IPv6 address (`::ffff:192.0.2.7`, as a dual-stack
    /// socket reports IPv4 clients) is the IPv4 address.
    private init(bytes: [UInt8]) {
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            self.bytes = Array(bytes[12...])
        } else {
            self.bytes = bytes
        }
    }

    /// The block one subscriber holds, for counting clients.
    public var subscriberBlock: SubscriberBlock {
        let count = isIPv6 ? 8 : 4
        return SubscriberBlock(isIPv6: isIPv6, bits: bytes.prefix(count).reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// The usual text (`192.0.2.7`, `2001:db8::1`): digits, hex, dots and
    /// colons only, so a log writes it as it is.
    public var text: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { address in
            _ = inet_ntop(isIPv6 ? AF_INET6 : AF_INET, address.baseAddress, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A block of addresses (`10.0.0.0/8`, `2001:db8::/32`, or one address),
/// e.g. the proxies whose `X-Forwarded-For` is believed.
public struct AddressRange: Sendable, Equatable {
    let network: [UInt8]
    let prefixLength: Int

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = ClientAddress(parts[0]) else { return nil }
        let bits = address.isIPv6 ? 128 : 32
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length), parts[1].allSatisfy(\.isNumber) else { return nil }
            prefixLength = length
        } else {
            prefixLength = bits
        }
        network = address.bytes
    }

    public func contains(_ address: ClientAddress) -> Bool {
        let bytes = address.bytes
        guard bytes.count == network.count else { return false }
        var remaining = prefixLength
        for index in bytes.indices where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if bytes[index] & mask != network[index] & mask { return false }
            remaining -= 8
        }
        return true
    }
}

/// The proxies whose `X-Forwarded-For` is believed, as nginx's realip
/// module does with `real_ip_recursive on`: behind a load balancer every
/// peer is the balancer, and the log must name the client instead. Anyone
/// else could write the header, so it counts only from these.
public struct TrustedProxies: Sendable, Equatable {
    public var ranges: [AddressRange]

    public init(_ ranges: [AddressRange] = []) {
        self.ranges = ranges
    }

    func trusts(_ address: ClientAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client of a request from `peer`: the peer itself unless it is
    /// trusted; then the right-most address of `X-Forwarded-For` that is
    /// not trusted (each proxy appends the address it saw), or the
    /// left-most if all are. A malformed entry ends the walk there, keeping
    /// the last address that could be believed.
    func client(of peer: String?, forwardedFor headers: HTTPHeaders) -> String? {
        guard !ranges.isEmpty, let peer, let address = ClientAddress(peer), trusts(address),
              let forwarded = headers.combined("X-Forwarded-For") else { return peer }
        var client = peer
        for entry in forwarded.split(separator: ",").reversed() {
            let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
            var hopText = entry.drop(while: blank)
            while let last = hopText.last, blank(last) { hopText.removeLast() }
            guard let hop = ClientAddress(hopText) else { break }
            client = hop.text
            if !trusts(hop) { break }
        }
        return client
    }
}

/// What one client holds, for counting clients (connections, creations):
/// an IPv4 address itself; an IPv6 address's /64, from which a host takes
/// any of 2^64 addresses at will (RFC 4291's interface identifiers).
public struct SubscriberBlock: Hashable, Sendable {
    public let isIPv6: Bool
    /// The address's first 32 bits (IPv4) or 64 bits (IPv6).
    public let bits: UInt64
}
