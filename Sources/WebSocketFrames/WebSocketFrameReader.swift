/// What a client sent, read from the bytes of one connection (RFC 6455 §5):
/// whole messages (their fragments joined) and the control frames that may
/// come between fragments, in order.
public enum WebSocketEvent: Equatable, Sendable {
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// `code` is nil when the client's close frame had no body.
    case close(code: UInt16?, reason: String)
}

/// A client broke the protocol: the connection ends with this close code.
public struct WebSocketViolation: Error, Equatable, Sendable {
    public let closeCode: WebSocketCloseCode
    public init(_ closeCode: WebSocketCloseCode) { self.closeCode = closeCode }
}

/// Reads a client's frames as they arrive, in pieces of any size. A server's
/// reader: frames must be masked (§5.1), no extension is negotiated so the
/// reserved bits must be clear, and a message longer than `maxMessageBytes`
/// is refused from its header, before its payload is kept (1009).
/// After a violation or a close frame the reader gives nothing more.
public struct WebSocketFrameReader: Sendable {
    public let maxMessageBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// The opcode and payload of the message whose fragments are being joined.
    private var partial: (opcode: WebSocketOpcode, payload: [UInt8])?
    private var finished = false

    public init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Bytes held for frames not yet whole: what a slow or hostile client costs.
    public var bufferedBytes: Int { buffer.count - start + (partial?.payload.count ?? 0) }

    public mutating func feed(_ bytes: some Sequence<UInt8>) {
        guard !finished else { return }
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next event, nil until more bytes are fed.
    public mutating func next() throws(WebSocketViolation) -> WebSocketEvent? {
        while !finished {
            do {
                guard let frame = try takeFrame() else { return nil }
                if let event = try absorb(frame) { return event }
            } catch {
                finished = true
                buffer = []
                start = 0
                partial = nil
                throw error
            }
        }
        return nil
    }

    private struct Frame {
        var fin: Bool
        var opcode: WebSocketOpcode
        var payload: [UInt8]
    }

    private mutating func takeFrame() throws(WebSocketViolation) -> Frame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start], second = buffer[start + 1]
        guard first & 0x70 == 0 else { throw WebSocketViolation(.protocolError) }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { throw WebSocketViolation(.protocolError) }
        let fin = first & 0x80 != 0
        guard second & 0x80 != 0 else { throw WebSocketViolation(.protocolError) }
        if opcode.isControl {
            guard fin, second & 0x7F <= 125 else { throw WebSocketViolation(.protocolError) }
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (0..<8).reduce(0) { $0 << 8 | UInt64(buffer[start + 2 + $1]) }
            guard length >> 63 == 0 else { throw WebSocketViolation(.protocolError) }
            headerLength = 10
        }
        if !opcode.isControl {
            let joined = UInt64(partial?.payload.count ?? 0)
            guard length <= UInt64(maxMessageBytes) - min(joined, UInt64(maxMessageBytes)),
                  joined <= UInt64(maxMessageBytes) else { throw WebSocketViolation(.messageTooBig) }
        }
        let payloadStart = start + headerLength + 4
        guard UInt64(available) >= UInt64(headerLength + 4) + length else { return nil }
        let mask = buffer[(start + headerLength)..<payloadStart]
        let count = Int(length)
        var payload = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            payload[index] = buffer[payloadStart + index] ^ mask[mask.startIndex + index & 3]
        }
        start = payloadStart + count
        return Frame(fin: fin, opcode: opcode, payload: payload)
    }

    /// Joins fragments and checks what a frame means where it comes.
    private mutating func absorb(_ frame: Frame) throws(WebSocketViolation) -> WebSocketEvent? {
        switch frame.opcode {
        case .ping: return .ping(frame.payload)
        case .pong: return .pong(frame.payload)
        case .close:
            // Nothing after a close is read: what came with it is let go.
            finished = true
            buffer = []
            start = 0
            partial = nil
            return try Self.closeEvent(frame.payload)
        case .continuation:
            guard var message = partial else { throw WebSocketViolation(.protocolError) }
            message.payload += frame.payload
            guard frame.fin else {
                partial = message
                return nil
            }
            partial = nil
            return try Self.message(message.opcode, message.payload)
        case .text, .binary:
            guard partial == nil else { throw WebSocketViolation(.protocolError) }
            guard frame.fin else {
                partial = (frame.opcode, frame.payload)
                return nil
            }
            return try Self.message(frame.opcode, frame.payload)
        }
    }

    private static func message(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(WebSocketViolation) -> WebSocketEvent {
        guard opcode == .text else { return .binary(payload) }
        guard let text = String(validating: payload, as: UTF8.self) else { throw WebSocketViolation(.invalidPayload) }
        return .text(text)
    }

    /// §5.5.1 and §7.4: a close body is empty or a code a peer may send
    /// and a UTF-8 reason.
    private static func closeEvent(_ payload: [UInt8]) throws(WebSocketViolation) -> WebSocketEvent {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else { throw WebSocketViolation(.protocolError) }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketCloseCode.maySend(code) else { throw WebSocketViolation(.protocolError) }
        guard let reason = String(validating: payload.dropFirst(2), as: UTF8.self) else {
            throw WebSocketViolation(.invalidPayload)
        }
        return .close(code: code, reason: reason)
    }
}
