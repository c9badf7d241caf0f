import TopChromeClient

/// `events`: bytes of a `text/event-stream` as the client library reads
/// them from a server (`ServerSentEventParser`).
///
/// Invariants: the parser never crashes; what it makes of the stream does
/// not depend on where the network cut it (whole, byte by byte, pieces of
/// sizes taken from the input); it agrees with a literal, independent
/// reading of the WHATWG rules over the decoded text; event types are never
/// empty and hold no line break, data no CR, ids no line break or NUL.
enum EventStreamTarget {
    static let target = FuzzTarget(
        name: "events",
        summary: "event streams through the client's ServerSentEventParser, against the WHATWG rules",
        run: run)

    struct Reading: Equatable {
        var events: [[[UInt8]]]
        var lastEventID: [UInt8]
        var reconnectionTime: Int?
    }

    static func run(_ bytes: [UInt8]) {
        let whole = parse([bytes[...]])
        let input = printable(bytes)
        check(parse(bytes.indices.map { bytes[$0...$0] }) == whole, "byte by byte differs: \(input)")
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + Int(bytes[start] % 7) + 1)
            pieces.append(bytes[start..<end])
            start = end
        }
        check(parse(pieces) == whole, "in pieces differs: \(input)")
        let reference = literalReading(bytes)
        check(reference == whole, "differs from the WHATWG rules: \(input)\nparser: \(whole)\nrules: \(reference)")
        for event in whole.events {
            check(!event[0].isEmpty && !event[0].contains(0x0A) && !event[0].contains(0x0D), "bad event type: \(input)")
            check(!event[1].contains(0x0D), "CR in data: \(input)")
        }
        check(!whole.lastEventID.contains(0) && !whole.lastEventID.contains(0x0A) && !whole.lastEventID.contains(0x0D),
              "bad last event id: \(input)")
    }

    static func parse(_ pieces: [ArraySlice<UInt8>]) -> Reading {
        var parser = ServerSentEventParser()
        let events = pieces.flatMap { parser.feed($0) }
        return Reading(events: events.map { [Array($0.type.utf8), Array($0.data.utf8), Array($0.lastEventID.utf8)] },
                       lastEventID: Array(parser.lastEventID.utf8), reconnectionTime: parser.reconnectionTime)
    }

    /// The rules as the specification words them, step by step, over the
    /// whole stream decoded at once (no pieces, no bytes).
    static func literalReading(_ bytes: [UInt8]) -> Reading {
        var scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var lines: [[Unicode.Scalar]] = []
        var line: [Unicode.Scalar] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\r" || scalar == "\n" {
                lines.append(line)
                line = []
                if scalar == "\r", index + 1 < scalars.count, scalars[index + 1] == "\n" { index += 1 }
            } else {
                line.append(scalar)
            }
            index += 1
        }
        // What follows the last line end is not a line: it is never processed.

        var reading = Reading(events: [], lastEventID: [], reconnectionTime: nil)
        var data = "", eventType = "", lastEventIDBuffer = ""
        for line in lines {
            let text = String(String.UnicodeScalarView(line))
            if line.isEmpty {
                reading.lastEventID = Array(lastEventIDBuffer.utf8)
                if data.isEmpty {
                    eventType = ""
                    continue
                }
                if data.unicodeScalars.last == "\n" { data.unicodeScalars.removeLast() }
                reading.events.append([Array((eventType.isEmpty ? "message" : eventType).utf8), Array(data.utf8),
                                       Array(lastEventIDBuffer.utf8)])
                data = ""
                eventType = ""
                continue
            }
            if line.first == ":" { continue }
            let field: String, value: String
            if let colon = line.firstIndex(of: ":") {
                field = String(String.UnicodeScalarView(line[..<colon]))
                var rest = line[(colon + 1)...]
                if rest.first == " " { rest = rest.dropFirst() }
                value = String(String.UnicodeScalarView(rest))
            } else {
                field = text
                value = ""
            }
            // Field names compare as code points, not as canonically equal Strings.
            switch Array(field.unicodeScalars) {
            case Array("event".unicodeScalars): eventType = value
            case Array("data".unicodeScalars): data += value + "\n"
            case Array("id".unicodeScalars):
                if !value.unicodeScalars.contains("\u{0}") { lastEventIDBuffer = value }
            case Array("retry".unicodeScalars):
                if !value.isEmpty, value.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) {
                    reading.reconnectionTime = Int(value) ?? Int.max
                }
            default: break
            }
        }
        return reading
    }
}
