import TopChromeCore

/// A flush's records, written straight into one buffer.
///
/// A flush writes one record per changed session, so this is the journal's
/// cost per change, and under a load that changes a new session with nearly
/// every request it is a cost per request: `make bench-instructions` counts
/// it. The general `JSONWriter` (closures, a string per number) cost about
/// 10 k instructions a record, appending byte by byte to an array about
/// 1 k; here each record is written through one pointer into room made
/// beforehand. The bytes are what `SnapshotFile.writeSession` writes for
/// the same state (a test holds the two equal), so one reader reads both.
struct JournalRecordBuffer {
    /// The most one record takes: 32 hex digits, two 20-digit integers,
    /// four numbers of at most 24 characters, the longest behaviour, names.
    static let recordRoom = 384

    /// Zeroed once and kept: `used` bytes of it are the records.
    private var storage: [UInt8] = []
    private(set) var used = 0

    var bytes: ArraySlice<UInt8> { storage[..<used] }

    mutating func removeAll() {
        used = 0
        if storage.count > 1 << 20 { storage = [] }
    }

    mutating func append(_ id: SessionID, _ state: ChromeState?) {
        if storage.count - used < Self.recordRoom {
            storage.append(contentsOf: repeatElement(0, count: max(storage.count, Self.recordRoom * 64)))
        }
        used = storage.withUnsafeMutableBufferPointer { buffer in
            var out = Output(buffer: buffer, at: used)
            out.record(id, state)
            return out.at
        }
    }

    /// A cursor in the room made for a record.
    private struct Output {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var at: Int

        mutating func record(_ id: SessionID, _ state: ChromeState?) {
            literal(#"{"id":""#)
            id.writeHexDigits(to: UnsafeMutableBufferPointer(rebasing: buffer[at...]))
            at += 32
            guard let state else {
                literal("\",\"removed\":true}\n")
                return
            }
            literal(#"","inset":"#)
            number(state.inset)
            literal(state.isRevealed ? #","isRevealed":true,"version":"# : #","isRevealed":false,"version":"#)
            integer(state.version)
            if let seq = state.lastAppliedSeq {
                literal(#","lastSeq":"#)
                integer(seq)
            }
            if state.behavior != .revealAtTop {
                literal(#","behavior":""#)
                text(state.behavior.rawValue)
                literal(#"""#)
            }
            if state.snap { literal(#","snap":true"#) }
            if let height = state.chosenCollapsibleHeight {
                literal(#","collapsibleHeight":"#)
                number(Double(height))
            }
            if state.trackedHeightOffset.bitPattern != 0 {
                literal(#","heightOffset":"#)
                number(Double(state.trackedHeightOffset))
            }
            if let offset = state.lastOffset {
                literal(#","lastOffset":"#)
                number(offset)
            }
            literal("}\n")
        }

        @inline(__always)
        mutating func literal(_ text: StaticString) {
            let count = text.utf8CodeUnitCount
            (buffer.baseAddress! + at).update(from: text.utf8Start, count: count)
            at += count
        }

        mutating func text(_ text: String) {
            for byte in text.utf8 {
                buffer[at] = byte
                at += 1
            }
        }

        /// As `JSONWriter.number(_: Double)`: whole numbers as integers, the
        /// rest as Swift's shortest round-trip text.
        mutating func number(_ value: Double) {
            if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
                if value < 0 {
                    buffer[at] = UInt8(ascii: "-")
                    at += 1
                }
                integer(UInt64(abs(value)))
            } else {
                text(String(value))
            }
        }

        mutating func integer(_ value: UInt64) {
            var digits = 1
            var bound: UInt64 = 10
            while digits < 20, value >= bound {
                digits += 1
                bound &*= 10
            }
            var rest = value
            var index = at + digits
            at = index
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
        }
    }
}
