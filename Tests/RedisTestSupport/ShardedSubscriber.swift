import Foundation
import Redis

#if canImport(Glibc)
import Glibc
#endif

/// One connection in sharded pub/sub mode (`SSUBSCRIBE`), read with blocking
/// calls: what a test needs to see which messages a channel carried, and in
/// which order. The client's connections cannot do this: a subscribed
/// connection gets pushes, not replies.
public final class ShardedSubscriber {
    private let socket: Int32
    private var buffer: [UInt8] = []
    private var pending: [RESPValue] = []

    /// Subscribes to `channel` on `node`, which must serve the channel's slot.
    /// The socket is stored once connected, and closed by the deinit alone:
    /// closed here too, it would be closed twice (a class whose properties
    /// are all set runs its deinit when its init throws), the second time
    /// taking whatever descriptor another test opened meanwhile.
    public init(node: RedisNode, channel: [UInt8]) throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisTestSetupError(description: "socket() failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(node.host)
        address.sin_port = UInt16(node.port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw RedisTestSetupError(description: "cannot connect to \(node)")
        }
        socket = fd
        try write([Array("SSUBSCRIBE".utf8), channel])
        let confirmation = try next()
        guard case let .array(parts) = confirmation, parts.first?.string == "ssubscribe" else {
            throw RedisTestSetupError(description: "SSUBSCRIBE on \(node) answered \(confirmation)")
        }
    }

    deinit {
        close(socket)
    }

    /// The messages published after subscribing, up to (not including) the
    /// first that equals `marker`: publish the marker after the commands
    /// under test and every message they caused has arrived before it.
    public func messages(until marker: [UInt8]) throws -> [[UInt8]] {
        var messages: [[UInt8]] = []
        while true {
            let push = try next()
            guard case let .array(parts) = push, parts.count == 3, parts[0].string == "smessage",
                  case let .bulk(message) = parts[2] else {
                throw RedisTestSetupError(description: "unexpected push \(push)")
            }
            if message == marker { return messages }
            messages.append(message)
        }
    }

    private func write(_ arguments: [[UInt8]]) throws {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10]
        }
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw RedisTestSetupError(description: "send() failed") }
    }

    private func next() throws -> RESPValue {
        while pending.isEmpty {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw RedisTestSetupError(description: "the subscription ended or timed out") }
            buffer += chunk[..<count]
            // hiredis's reader gives the complete replies; keep the bytes of an incomplete one.
            guard let values = RESPValue.parse(buffer) else { throw RedisTestSetupError(description: "not RESP") }
            if !values.isEmpty {
                pending = values
                buffer = Self.remainder(of: buffer, after: values.count)
            }
        }
        return pending.removeFirst()
    }

    /// The bytes left after `count` complete replies: found by parsing ever
    /// longer prefixes, which is slow but only ever sees a few small pushes.
    private static func remainder(of bytes: [UInt8], after count: Int) -> [UInt8] {
        for end in 1...bytes.count where RESPValue.parse(Array(bytes[..<end]))?.count == count {
            return Array(bytes[end...])
        }
        return []
    }
}
