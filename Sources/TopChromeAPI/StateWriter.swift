import TopChromeCore

/// A session's state as the API's JSON, written byte by byte into the
/// response body (a fractional inset goes through `String`): every answer to
/// a scroll report carries one, so this is on the hot path of every client.
enum StateWriter {
    /// Room for the longest output, which the writer does not check as it
    /// goes: the fixed text (with `lastSeq`), 32 id digits, the longest
    /// `Double` description (24 bytes) and two of the longest `UInt64` (20
    /// each): 7 + 32 + 10 + 24 + 30 + 20 + 11 + 20 + 1 = 155; the behaviour's
    /// members, each number as long as a `Double`'s description, since a whole
    /// float past 2^53 is written as one: 13 + 18 + 22 + 24 + 34 + 24 + 16 + 24
    /// = 175. 330 in all; a state from another store or a file may be any of it.
    private static let capacity = 384

    static func json(_ session: Session) -> [UInt8] {
        var json: [UInt8] = []
        write(session, to: &json)
        return json
    }

    /// Appends the JSON to `json`, which a server may hand over emptied from
    /// the connection's last answer.
    static func write(_ session: Session, to json: inout [UInt8]) {
        ByteWriter.append(to: &json, capacity: capacity) { writer in
            writer.write(#"{"id":""#)
            writer.writeHexDigits(of: session.id)
            writer.write(#"","inset":"#)
            number(session.state.inset, to: &writer)
            writer.write(session.state.isRevealed ? #","isRevealed":true,"version":"# : #","isRevealed":false,"version":"#)
            writer.writeDecimal(session.state.version)
            // The highest seq applied, so a client attached again (an app
            // relaunched, its clock stepped back) numbers its reports above it.
            if let lastSeq = session.state.lastAppliedSeq {
                writer.write(#","lastSeq":"#)
                writer.writeDecimal(lastSeq)
            }
            // A session that never named a behaviour reads as every session did before there were others.
            if !session.state.hasDefaultBehavior { writeBehavior(of: session.state, to: &writer) }
            writer.write("}")
        }
    }

    /// `behavior`, `collapsibleHeight`, `snap`, `collapsedFraction` and `heightOffset`, each after a comma.
    @inline(never)
    private static func writeBehavior(of state: ChromeState, to writer: inout ByteWriter) {
        writer.write(#","behavior":""#)
        writer.write(utf8Of: state.behavior.rawValue)
        writer.write(#"","collapsibleHeight":"#)
        number(state.collapsibleHeight, to: &writer)
        writer.write(state.snap ? #","snap":true,"collapsedFraction":"# : #","snap":false,"collapsedFraction":"#)
        number(state.collapsedFraction, to: &writer)
        writer.write(#","heightOffset":"#)
        number(state.heightOffset, to: &writer)
    }

    /// A float as its own shortest text (`56.3`, not the double it widens to), whole numbers without a fraction.
    private static func number(_ value: Float, to writer: inout ByteWriter) {
        if value == value.rounded() { return number(Double(value), to: &writer) }
        writer.write(utf8Of: value.description)
    }

    /// Whole numbers without a fraction (`59`, not `59.0`), as `JSONWriter` writes them.
    private static func number(_ value: Double, to writer: inout ByteWriter) {
        // Whole when it survives the trip through Int64 (no libm `round` call).
        if abs(value) < 9_007_199_254_740_992, case let whole = Int64(value), Double(whole) == value {
            if whole < 0 { writer.write(UInt8(ascii: "-")) }
            writer.writeDecimal(whole.magnitude)
        } else {
            writer.write(utf8Of: String(value))
        }
    }
}
