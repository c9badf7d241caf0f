import TopChromeCore

/// A session's state as the API's JSON, written byte by byte into the
/// response body (a fractional inset goes through `String`): every answer to
/// a scroll report carries one, so this is on the hot path of every client.
enum StateWriter {
    /// Longest possible output: the fixed text (with `lastSeq`), 32 id
    /// digits, the longest `Double` description (24 bytes) and two of the
    /// longest `UInt64` (20 each): 7 + 32 + 10 + 24 + 30 + 20 + 11 + 20 + 1 = 155;
    /// and the behaviour's members: 32 + 21 + 15 + 13 + 21 + 4 + 16 + 15 = 137
    /// (a `Float` description is 15 bytes at most).
    private static let capacity = 300

    static func json(_ session: Session) -> [UInt8] {
        var json: [UInt8] = []
        write(session, to: &json)
        return json
    }

    /// Appends the JSON to `json`, which a server may hand over emptied from
    /// the connection's last answer.
    static func write(_ session: Session, to json: inout [UInt8]) {
        // Written on the stack and copied once into the array, grown by
        // `reserveCapacity`, whose allocation is specialized for bytes;
        // `Array(unsafeUninitializedCapacity:)` allocates through the
        // standard library's generic code, which looks up the storage's
        // type metadata on every call (~360 instructions of ~530).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { bytes in
            var end = write(#"{"id":""#, into: bytes, at: 0)
            session.id.writeHexDigits(to: UnsafeMutableBufferPointer(rebasing: bytes[end...]))
            end += 32
            end = write(#"","inset":"#, into: bytes, at: end)
            end = number(session.state.inset, into: bytes, at: end)
            end = write(session.state.isRevealed ? #","isRevealed":true,"version":"# : #","isRevealed":false,"version":"#,
                        into: bytes, at: end)
            end = decimal(session.state.version, into: bytes, at: end)
            // The highest seq applied, so a client attached again (an app
            // relaunched, its clock stepped back) numbers its reports above it.
            if let lastSeq = session.state.lastAppliedSeq {
                end = write(#","lastSeq":"#, into: bytes, at: end)
                end = decimal(lastSeq, into: bytes, at: end)
            }
            // A session that never named a behaviour reads as every session did before there were others.
            if !session.state.hasDefaultBehavior { end = writeBehavior(of: session.state, into: bytes, at: end) }
            end = write("}", into: bytes, at: end)
            assert(end <= capacity, "the longest state fits")
            json.reserveCapacity(json.count + end)
            json.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<end]))
        }
    }

    /// `behavior`, `collapsibleHeight`, `snap`, `collapsedFraction` and `heightOffset`, each after a comma.
    @inline(never)
    private static func writeBehavior(of state: ChromeState, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var end = write(#","behavior":""#, into: bytes, at: start)
        for byte in state.behavior.rawValue.utf8 {
            bytes[end] = byte
            end += 1
        }
        end = write(#"","collapsibleHeight":"#, into: bytes, at: end)
        end = number(state.collapsibleHeight, into: bytes, at: end)
        end = write(state.snap ? #","snap":true,"collapsedFraction":"# : #","snap":false,"collapsedFraction":"#, into: bytes, at: end)
        end = number(state.collapsedFraction, into: bytes, at: end)
        end = write(#","heightOffset":"#, into: bytes, at: end)
        return number(state.heightOffset, into: bytes, at: end)
    }

    /// A float as its own shortest text (`56.3`, not the double it widens to), whole numbers without a fraction.
    private static func number(_ value: Float, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        if value == value.rounded() { return number(Double(value), into: bytes, at: start) }
        var end = start
        for byte in value.description.utf8 {
            bytes[end] = byte
            end += 1
        }
        return end
    }

    /// `value` in decimal at `start`; returns the index after the last digit.
    static func decimal(_ value: UInt64, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var digitCount = 1, rest = value
        while rest >= 10 {
            rest /= 10
            digitCount += 1
        }
        rest = value
        for index in stride(from: start + digitCount - 1, through: start, by: -1) {
            bytes[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        return start + digitCount
    }

    /// Whole numbers without a fraction (`59`, not `59.0`), as `JSONWriter` writes them.
    private static func number(_ value: Double, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            let whole = Int64(value)
            guard whole < 0 else { return decimal(UInt64(whole), into: bytes, at: start) }
            bytes[start] = UInt8(ascii: "-")
            return decimal(whole.magnitude, into: bytes, at: start + 1)
        }
        var end = start
        for byte in String(value).utf8 {
            bytes[end] = byte
            end += 1
        }
        return end
    }

    private static func write(_ text: StaticString, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        UnsafeMutableBufferPointer(rebasing: bytes[start...])
            .initialize(from: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)).1 + start
    }
}
