/// One event of a `text/event-stream`, as dispatched by the WHATWG rules.
package struct ServerSentEvent: Sendable, Hashable {
    /// The `event:` field, `message` when the event named none.
    package var type: String
    /// The `data:` lines joined by line feeds.
    package var data: String
    /// The last event id the stream has set so far (ids persist across events).
    package var lastEventID: String

    package init(type: String, data: String, lastEventID: String) {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// Reads a `text/event-stream` as it arrives, in pieces cut anywhere, by
/// the WHATWG HTML "Server-sent events" parsing rules: UTF-8 (invalid bytes
/// become U+FFFD, one leading BOM is dropped), lines ending in CR, LF or
/// CRLF (a CR at the end of one piece and an LF at the start of the next
/// are one line end), comments, multi-line data, `id` and `retry`. An event
/// still open when the stream ends is discarded, as the rules say.
package struct ServerSentEventParser: Sendable {
    /// The id to send as `Last-Event-ID` when reconnecting.
    package private(set) var lastEventID = ""
    /// The reconnection time the server asked for with `retry:`, in milliseconds.
    package private(set) var reconnectionTime: Int?

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var atStreamStart = true
    private var eventType = ""
    private var data = ""
    private var hasData = false
    private var pendingLastEventID = ""

    package init() {}

    /// Forgets a half-read line or event, for a new connection; the last
    /// event id and the reconnection time are kept, as the rules say.
    package mutating func startNewStream() {
        line = []
        lastWasCR = false
        atStreamStart = true
        eventType = ""
        data = ""
        hasData = false
        pendingLastEventID = lastEventID
    }

    /// Takes the next bytes of the stream and returns the events they complete.
    package mutating func feed(_ bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            switch byte {
            case 0x0A where lastWasCR:
                lastWasCR = false
            case 0x0A, 0x0D:
                lastWasCR = byte == 0x0D
                endLine(into: &events)
            default:
                lastWasCR = false
                line.append(byte)
                if atStreamStart { dropByteOrderMark() }
            }
        }
        return events
    }

    /// A BOM is only recognised at the very start of the stream.
    private mutating func dropByteOrderMark() {
        let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
        if line.count < mark.count, line.elementsEqual(mark.prefix(line.count)) { return }
        if line.starts(with: mark) { line.removeFirst(mark.count) }
        atStreamStart = false
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) {
        atStreamStart = false
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            dispatch(into: &events)
            return
        }
        if line.first == UInt8(ascii: ":") { return }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = String(decoding: line[..<(colon ?? line.endIndex)], as: UTF8.self)
        var valueStart = colon.map { $0 + 1 } ?? line.endIndex
        if valueStart < line.endIndex, line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = line[valueStart...]
        switch name {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append("\n") }
            data.append(String(decoding: value, as: UTF8.self))
            hasData = true
        case "id" where !value.contains(0):
            pendingLastEventID = String(decoding: value, as: UTF8.self)
        case "retry" where !value.isEmpty && value.allSatisfy({ (0x30...0x39).contains($0) }):
            // Digits only; a value too long for an Int is as good as forever.
            reconnectionTime = Int(String(decoding: value, as: UTF8.self)) ?? Int.max
        default:
            break
        }
    }

    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        lastEventID = pendingLastEventID
        defer {
            eventType = ""
            data = ""
            hasData = false
        }
        guard hasData else { return }
        events.append(ServerSentEvent(type: eventType.isEmpty ? "message" : eventType, data: data, lastEventID: lastEventID))
    }
}
