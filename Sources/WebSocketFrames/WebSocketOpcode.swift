/// The frame kinds of RFC 6455 §5.2; the other opcodes are reserved and a
/// frame carrying one ends the connection.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0, text = 0x1, binary = 0x2
    case close = 0x8, ping = 0x9, pong = 0xA

    /// Control frames may come between a message's fragments, never split.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Why a connection ends (RFC 6455 §7.4.1), as the server says it.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = WebSocketCloseCode(rawValue: 1000)
    /// The server is shutting down.
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// A text message that is not UTF-8.
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// Too many messages, a client gone silent, a binary message.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// Codes a peer may put in a close frame: the defined ones except those
    /// reserved for reporting (1005, 1006, 1015), and the registered and
    /// private ranges (3000–4999).
    public static func maySend(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: true
        default: false
        }
    }
}
