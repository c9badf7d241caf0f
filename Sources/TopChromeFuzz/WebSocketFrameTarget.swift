import WebSocketFrames

/// `frames`: bytes a WebSocket client sends, through the server's
/// `WebSocketFrameReader`. The first byte sets the message limit (1–256
/// bytes) so the too-big path is reached.
///
/// Invariants: the reader never crashes; what it reads does not depend on
/// where the network cut the bytes (whole, byte by byte, pieces of sizes
/// taken from the input); every event, written again as a client's frame,
/// reads back the same; a violation closes with a code the server sends;
/// what the reader holds once drained is at most one message (or a
/// control frame) and a header.
enum WebSocketFrameTarget {
    static let target = FuzzTarget(
        name: "frames",
        summary: "WebSocket client frames through the server's WebSocketFrameReader",
        run: run)

    struct Reading: Equatable {
        var events: [WebSocketEvent]
        var violation: WebSocketCloseCode?
    }

    static let closeCodes: Set<WebSocketCloseCode> = [.protocolError, .invalidPayload, .messageTooBig]

    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let limit = Int(first) + 1
        let bytes = Array(input.dropFirst())
        let text = printable(bytes)
        let whole = read([bytes[...]], limit: limit)
        check(read(bytes.indices.map { bytes[$0...$0] }, limit: limit) == whole, "byte by byte differs: \(text)")
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + Int(bytes[start] % 11) + 1)
            pieces.append(bytes[start..<end])
            start = end
        }
        check(read(pieces, limit: limit) == whole, "in pieces differs: \(text)")
        if let violation = whole.violation {
            check(closeCodes.contains(violation), "close code \(violation.rawValue) the reader must not give: \(text)")
        }
        var again: [UInt8] = []
        for event in whole.events { again += written(event) }
        let reread = read([again[...]], limit: limit)
        check(reread.events == whole.events && reread.violation == nil, "written again reads differently: \(text)")
    }

    static func read(_ pieces: [ArraySlice<UInt8>], limit: Int) -> Reading {
        var reader = WebSocketFrameReader(maxMessageBytes: limit)
        var reading = Reading(events: [], violation: nil)
        for piece in pieces {
            reader.feed(piece)
            do {
                while let event = try reader.next() { reading.events.append(event) }
            } catch {
                reading.violation = error.closeCode
                return reading
            }
            // A control frame (up to 125 bytes) is held whole whatever the
            // message limit, and may come between a message's fragments
            // (RFC 6455 §5.4): a partial message and a control frame at once.
            check(reader.bufferedBytes <= limit + 125 + 14, "holds \(reader.bufferedBytes) bytes, limit \(limit)")
        }
        return reading
    }

    static func written(_ event: WebSocketEvent) -> [UInt8] {
        let mask: (UInt8, UInt8, UInt8, UInt8) = (1, 2, 3, 4)
        switch event {
        case .text(let text): return WebSocketFrameWriter.frame(.text, Array(text.utf8), mask: mask)
        case .binary(let bytes): return WebSocketFrameWriter.frame(.binary, bytes, mask: mask)
        case .ping(let bytes): return WebSocketFrameWriter.frame(.ping, bytes, mask: mask)
        case .pong(let bytes): return WebSocketFrameWriter.frame(.pong, bytes, mask: mask)
        case .close(let code, let reason):
            let body = code.map { [UInt8($0 >> 8), UInt8($0 & 0xFF)] + Array(reason.utf8) } ?? []
            return WebSocketFrameWriter.frame(.close, body, mask: mask)
        }
    }
}
