#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import StrictJSON

/// A growable run of bytes that a log line is written into. It owns its
/// memory and frees it when it ends, and it cannot be copied, so no copy can
/// free it twice or keep it after it grew elsewhere: a line is a few dozen
/// short appends, and an `Array` would check uniqueness and capacity through
/// the runtime on each.
///
/// The log's byte-level code is all here: this, ``ByteCursor`` and the
/// few reads of a `String`'s or `StaticString`'s bytes a line needs.
struct LogBytes: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        start = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    deinit {
        start.deallocate()
    }

    /// The bytes written so far, as an array of their own.
    func copied() -> [UInt8] {
        Array(UnsafeBufferPointer(start: start, count: count))
    }

    /// Writes every byte to `fd`, again after a signal interrupts; stops
    /// early only if `fd` takes no more (a closed pipe, a full disk).
    func write(to fd: Int32) {
        var offset = 0
        while offset < count {
            let written = Glibc.write(fd, start + offset, count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    mutating func removeAll() {
        count = 0
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        start[count] = byte
        count += 1
    }

    @inline(__always)
    private mutating func append(_ utf8: UnsafeBufferPointer<UInt8>) {
        guard let source = utf8.baseAddress else { return }
        reserve(utf8.count)
        if utf8.count <= 16 {
            // Names, numbers and separators: a call to memcpy costs more than these few bytes.
            copyShort(utf8.count, from: source, to: start + count)
        } else {
            (start + count).update(from: source, count: utf8.count)
        }
        count += utf8.count
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    @inline(__always)
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    /// `text`, in quotes if it holds a space, so that it stays one field of a text line.
    @inline(__always)
    mutating func appendQuotedIfSpaced(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            let quoted = utf8.count > 0 && memchr(utf8.baseAddress!, Int32(UInt8(ascii: " ")), utf8.count) != nil
            if quoted { append(UInt8(ascii: "\"")) }
            append(utf8)
            if quoted { append(UInt8(ascii: "\"")) }
        }
    }

    /// Up to `maxCount` bytes written through `body`, with one check for
    /// room instead of one per piece.
    @inline(__always)
    mutating func append(atMost maxCount: Int, _ body: (inout ByteCursor) -> Void) {
        reserve(maxCount)
        var cursor = ByteCursor(next: start + count)
        body(&cursor)
        precondition(cursor.next - start <= count + maxCount, "a bounded write outgrew its bound")
        count = cursor.next - start
    }

    @inline(__always)
    mutating func appendDecimal(_ value: Int) {
        append(atMost: 20) { $0.putDecimal(value) }
    }

    /// With leading zeros up to `minimumDigits`.
    @inline(__always)
    mutating func appendDecimal(_ value: UInt, minimumDigits: Int = 1) {
        append(atMost: max(20, minimumDigits)) { $0.putDecimal(value, minimumDigits: minimumDigits) }
    }

    @inline(__always)
    mutating func appendThreeDigits(_ value: UInt) {
        append(atMost: 3) { $0.putThreeDigits(value) }
    }

    @inline(__always)
    mutating func appendEightHexDigits(_ value: UInt32) {
        append(atMost: 8) { $0.putEightHexDigits(value) }
    }

    /// The low `digits` hex digits of `value`, lowercase.
    @inline(__always)
    mutating func appendHex(_ value: UInt64, digits: Int) {
        reserve(digits)
        let table: StaticString = "0123456789abcdef"
        for index in 0..<digits {
            start[count + index] = table.utf8Start[Int(truncatingIfNeeded: value >> UInt64(4 * (digits - 1 - index)) & 0xF)]
        }
        count += digits
    }

    /// `text` as a JSON string, escaped as `JSONWriter` escapes it.
    mutating func appendJSONString(_ text: String) {
        var text = text
        text.withUTF8 { appendJSONString($0) }
    }

    mutating func appendJSONString(_ text: StaticString) {
        appendJSONString(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func appendJSONString(_ utf8: UnsafeBufferPointer<UInt8>) {
        append(UInt8(ascii: "\""))
        var plain = 0  // where the bytes not yet copied begin
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            append(UnsafeBufferPointer(rebasing: utf8[plain..<index]))
            plain = index + 1
            switch byte {
            case UInt8(ascii: "\""): append(#"\""#)
            case UInt8(ascii: "\\"): append(#"\\"#)
            case 0x0A: append(#"\n"#)
            case 0x0D: append(#"\r"#)
            case 0x09: append(#"\t"#)
            default:
                append(#"\u00"#)
                appendHex(UInt64(byte), digits: 2)
            }
        }
        append(UnsafeBufferPointer(rebasing: utf8[plain...]))
        append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: max(needed, capacity * 2))
        larger.update(from: start, count: count)
        start.deallocate()
        start = larger
        capacity = max(needed, capacity * 2)
    }
}

/// Up to 32 bytes held in four words, to be stored with four writes
/// (``ByteCursor/put(words:count:)``): a timestamp's part up to the second.
struct ByteWords {
    private(set) var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private(set) var count = 0

    static let capacity = 32

    init() {}

    /// The first 32 bytes of `bytes` at most.
    init(_ bytes: [UInt8]) {
        let kept = bytes.prefix(Self.capacity)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: kept) }
        count = kept.count
    }
}

/// Writes bytes where ``LogBytes/append(atMost:_:)`` made room, with no
/// check per byte: the short pieces of a log line (names, numbers, ids).
struct ByteCursor {
    private(set) var next: UnsafeMutablePointer<UInt8>

    init(next: UnsafeMutablePointer<UInt8>) {
        self.next = next
    }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        next.pointee = byte
        next += 1
    }

    @inline(__always)
    mutating func put(_ text: StaticString) {
        copyShort(text.utf8CodeUnitCount, from: text.utf8Start, to: next)
        next += text.utf8CodeUnitCount
    }

    /// Bytes that need no escaping (a client's request id), room made for them.
    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        copyShort(bytes.count, from: source, to: next)
        next += bytes.count
    }

    /// `count` bytes (a multiple of 8) written earlier at `source`, a word at a time.
    @inline(__always)
    mutating func putCopy(of source: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(next)
        for offset in stride(from: 0, to: count, by: 8) {
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset, as: UInt64.self)
        }
        next += count
    }

    /// 128 bits as 32 lowercase hex digits.
    @inline(__always)
    mutating func putHex(_ value: (high: UInt64, low: UInt64)) {
        RequestIdentity.writeHex(value, into: UnsafeMutableRawPointer(next))
        next += 32
    }

    /// The bytes `words` holds; all 32 are stored, so 32 bytes of room are needed.
    @inline(__always)
    mutating func put(_ words: ByteWords) {
        let raw = UnsafeMutableRawPointer(next)
        raw.storeBytes(of: words.words.0, toByteOffset: 0, as: UInt64.self)
        raw.storeBytes(of: words.words.1, toByteOffset: 8, as: UInt64.self)
        raw.storeBytes(of: words.words.2, toByteOffset: 16, as: UInt64.self)
        raw.storeBytes(of: words.words.3, toByteOffset: 24, as: UInt64.self)
        next += words.count
    }

    @inline(__always)
    mutating func putDecimal(_ value: Int) {
        if value < 0 { put(UInt8(ascii: "-")) }
        putDecimal(value.magnitude)
    }

    /// With leading zeros up to `minimumDigits`.
    @inline(__always)
    mutating func putDecimal(_ value: UInt, minimumDigits: Int = 1) {
        if value < 10, minimumDigits <= 1 {
            // A request's milliseconds, most often: one digit, no loop.
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
        } else {
            putDecimalDigits(value, minimumDigits: minimumDigits)
        }
    }

    private mutating func putDecimalDigits(_ value: UInt, minimumDigits: Int) {
        var digits = 1, bound: UInt = 10
        while digits < 20, value >= bound {
            digits += 1
            bound &*= 10
        }
        digits = max(digits, minimumDigits)
        var rest = value, index = digits
        while index > 0 {
            index -= 1
            next[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        next += digits
    }

    /// `value` (below 1000) as three digits with leading zeros: the
    /// milliseconds of every timestamp and duration, without the general
    /// loop that first counts the digits.
    @inline(__always)
    mutating func putThreeDigits(_ value: UInt) {
        next[0] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 100)
        next[1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10 % 10)
        next[2] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
        next += 3
    }

    /// `value` as eight lowercase hex digits, all at once in one 64-bit
    /// word (a byte per nibble, then each nibble made a digit), stored with
    /// one write: a session's short id is on every access-log line.
    @inline(__always)
    mutating func putEightHexDigits(_ value: UInt32) {
        var nibbles = UInt64(value)
        nibbles = (nibbles & 0xFFFF) | (nibbles & 0xFFFF_0000) << 16
        nibbles = (nibbles & 0x0000_00FF_0000_00FF) | (nibbles & 0x0000_FF00_0000_FF00) << 8
        nibbles = (nibbles & 0x000F_000F_000F_000F) | (nibbles & 0x00F0_00F0_00F0_00F0) << 4
        // 1 in each byte whose nibble is 10 or more: those become a–f, 39 past '0'…'9'.
        let letters = (nibbles &+ 0x0606_0606_0606_0606) >> 4 & 0x0101_0101_0101_0101
        let digits = nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39
        // The first nibble's digit comes first in memory.
        UnsafeMutableRawPointer(next).storeBytes(of: digits.bigEndian, as: UInt64.self)
        next += 8
    }

    /// Milliseconds with three decimals, from microseconds.
    @inline(__always)
    mutating func putMilliseconds(microseconds: Int) {
        if microseconds < 0 { put(UInt8(ascii: "-")) }
        putDecimal(microseconds.magnitude / 1000)
        put(UInt8(ascii: "."))
        putThreeDigits(microseconds.magnitude % 1000)
    }
}

/// Copies the few bytes of a line's piece (a field's name, a number, an id)
/// a word at a time, the last word overlapping the one before it: a byte at
/// a time cost a turn of a loop per byte (a name's every byte, on every
/// line), and a call to memcpy more than such a copy.
@inline(__always)
private func copyShort(_ count: Int, from source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>) {
    let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(target)
    if count >= 8 {
        var offset = 0
        while offset < count - 8 {
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: offset, as: UInt64.self), toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        to.storeBytes(of: from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self), toByteOffset: count - 8,
                      as: UInt64.self)
    } else if count >= 4 {
        to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
        to.storeBytes(of: from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self), toByteOffset: count - 4,
                      as: UInt32.self)
    } else {
        for offset in 0..<count { target[offset] = source[offset] }
    }
}
