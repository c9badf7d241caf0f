import Redis

/// `resp`: bytes from a Redis server, read by hiredis's reader as a
/// connection reads them (`RESPReader` is the reader a connection's context
/// holds) and converted to `RESPValue`.
///
/// Invariants: reading never crashes or leaks; the replies and the refusal
/// do not depend on where the network cut the bytes (whole, byte by byte,
/// pieces of sizes taken from the input); they are exactly what
/// `RESP2Reading.read`, written here from the protocol, makes of the bytes;
/// `RESPValue.parse` agrees.
enum RESPTarget {
    static let target = FuzzTarget(
        name: "resp",
        summary: "Redis replies through hiredis's reader in pieces, against a RESP2 recognizer",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let input = printable(bytes)
        let whole = read([bytes[...]])
        check(read(bytes.indices.map { bytes[$0...$0] }) == whole, "byte by byte differs: \(input)")
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + Int(bytes[start] % 13) * 97 + 1)
            pieces.append(bytes[start..<end])
            start = end
        }
        check(read(pieces) == whole, "in pieces differs: \(input)")
        let reference = RESP2Reading.read(bytes)
        check(reference == whole, "differs from the RESP2 reading: \(input)\nhiredis: \(whole)\nreference: \(reference)")
        let parsed = RESPValue.parse(bytes)
        check(parsed == (whole.refused ? nil : whole.values), "RESPValue.parse differs: \(input)")
    }

    static func read(_ pieces: [ArraySlice<UInt8>]) -> RESP2Reading {
        let reader = RESPReader()
        var reading = RESP2Reading(values: [], refused: false)
        for piece in pieces {
            guard reader.feed(piece) else {
                reading.refused = true
                return reading
            }
            do {
                while let value = try reader.next() { reading.values.append(value) }
            } catch {
                check(!error.reason.isEmpty, "a refusal without a reason")
                reading.refused = true
                return reading
            }
        }
        return reading
    }
}

/// RESP2 as hiredis 0.14 reads it, written from the protocol description
/// rather than from hiredis: the complete replies at the start of a stream,
/// and whether the stream then stops being RESP.
///
/// Where hiredis reads more than the protocol allows, this reads the same,
/// on purpose (a server never sends such bytes, and a difference would be
/// noise): a status or error line runs to the first CR LF, bare CRs and LFs
/// included; the two bytes after a bulk string's data are skipped unread
/// (the protocol says CR LF); `$-1` and `*-1` are both `.null`. Numbers
/// are strict: decimal digits, an optional `-`, no leading zero, no `+`,
/// within Int64; arrays hold at most 2^20 elements (the client's bound:
/// hiredis alone takes up to Int32.max) and nest at most 8
/// deep (an array inside 8 others is refused as soon as its `*` arrives).
struct RESP2Reading: Equatable, CustomStringConvertible {
    var values: [RESPValue]
    var refused: Bool

    var description: String { "\(values)\(refused ? " then refused" : "")" }

    /// The most elements the client lets a reply array announce: hiredis
    /// would allocate the element table of any count up to Int32.max as
    /// soon as it reads it (16 GiB for `*2147483647`), so longer ones are
    /// refused at once.
    static let largestArray: Int64 = 1 << 20

    private enum Item {
        case value(RESPValue, next: Int)
        case incomplete
        case invalid
    }

    static func read(_ bytes: [UInt8]) -> RESP2Reading {
        var reading = RESP2Reading(values: [], refused: false)
        var position = 0
        while position < bytes.count {
            switch item(bytes, at: position, depth: 0) {
            case let .value(value, next):
                reading.values.append(value)
                position = next
            case .incomplete:
                return reading
            case .invalid:
                reading.refused = true
                return reading
            }
        }
        return reading
    }

    private static func item(_ bytes: [UInt8], at start: Int, depth: Int) -> Item {
        guard start < bytes.count else { return .incomplete }
        let kind = bytes[start]
        guard [UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "$"), UInt8(ascii: "*")].contains(kind) else {
            return .invalid
        }
        if kind == UInt8(ascii: "*") && depth == 8 { return .invalid }
        guard let lineEnd = crlf(in: bytes, from: start + 1) else { return .incomplete }
        let line = Array(bytes[(start + 1)..<lineEnd])
        let afterLine = lineEnd + 2
        switch kind {
        case UInt8(ascii: "+"): return .value(.simple(String(decoding: line, as: UTF8.self)), next: afterLine)
        case UInt8(ascii: "-"): return .value(.error(String(decoding: line, as: UTF8.self)), next: afterLine)
        case UInt8(ascii: ":"):
            guard let number = strictInteger(line) else { return .invalid }
            return .value(.integer(number), next: afterLine)
        case UInt8(ascii: "$"):
            guard let length = strictInteger(line), length >= -1 else { return .invalid }
            if length == -1 { return .value(.null, next: afterLine) }
            guard length <= Int64(bytes.count - afterLine) - 2 else { return .incomplete }
            let end = afterLine + Int(length)
            return .value(.bulk(Array(bytes[afterLine..<end])), next: end + 2)
        default:
            guard let count = strictInteger(line), count >= -1, count <= largestArray else { return .invalid }
            if count == -1 { return .value(.null, next: afterLine) }
            var elements: [RESPValue] = []
            var position = afterLine
            for _ in 0..<count {
                switch item(bytes, at: position, depth: depth + 1) {
                case let .value(value, next):
                    elements.append(value)
                    position = next
                case .incomplete: return .incomplete
                case .invalid: return .invalid
                }
            }
            return .value(.array(elements), next: position)
        }
    }

    /// The first CR immediately followed by LF at or after `start`.
    private static func crlf(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 0x0D && bytes[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }

    /// `0`, or an optional `-` and digits without a leading zero, within Int64.
    private static func strictInteger(_ text: [UInt8]) -> Int64? {
        var digits = text[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard let first = digits.first, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        if first == 0x30 { return digits.count == 1 && !negative ? 0 : nil }
        // Accumulated negatively, so that Int64.min reads too.
        var value: Int64 = 0
        for digit in digits {
            let (scaled, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = scaled.subtractingReportingOverflow(Int64(digit - 0x30))
            if overflow || overflow2 { return nil }
            value = next
        }
        if negative { return value }
        return value == Int64.min ? nil : -value
    }
}
