import Testing
@testable import MicroHTTPD

/// One client, as the per-address connection cap and the creation limit
/// count clients: an IPv4 address, or an IPv6 address's /64.
@Suite struct SubscriberBlockTests {
    func block(_ text: String) throws -> SubscriberBlock {
        try #require(ClientAddress(text)).subscriberBlock
    }

    @Test func anIPv6HostIsItsSlash64() throws {
        #expect(try block("2001:db8:1:2::1") == block("2001:db8:1:2:ffff:eeee:dddd:cccc"))
        #expect(try block("2001:db8:1:2::1") != block("2001:db8:1:3::1"))
    }

    @Test func anIPv4AddressIsItself() throws {
        #expect(try block("192.0.2.7") != block("192.0.2.8"))
        #expect(try block("::ffff:192.0.2.7") == block("192.0.2.7"))
    }

    /// An IPv4 address and an IPv6 block with the same leading bits are two clients.
    @Test func familiesNeverShareABlock() throws {
        #expect(try block("0.0.0.0") != block("::"))
    }
}
