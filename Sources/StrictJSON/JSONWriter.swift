/// Writes the few JSON shapes the API answers with, straight into bytes.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 128) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Bytes as they are, e.g. text already known to need no escaping.
    public mutating func raw(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: utf8)
    }

    public mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                raw("\\u00" + (hex.count == 1 ? "0" + hex : hex))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Finite numbers only. Whole numbers are written without a fraction
    /// (`59`, not `59.0`), the rest in Swift's shortest round-trip form.
    public mutating func number(_ value: Double) {
        precondition(value.isFinite, "JSON has no non-finite numbers")
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            raw(String(Int64(value)))
        } else {
            raw(String(value))
        }
    }

    public mutating func number(_ value: some BinaryInteger) {
        raw(String(value))
    }

    public mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
    }

    /// `{"name": value, ...}` with members written by `body` through `member`.
    public mutating func object(_ body: (inout ObjectWriter) -> Void) {
        var object = ObjectWriter(writer: self)
        object.writer.bytes.append(UInt8(ascii: "{"))
        body(&object)
        object.writer.bytes.append(UInt8(ascii: "}"))
        self = object.writer
    }

    public struct ObjectWriter {
        fileprivate(set) var writer: JSONWriter
        private var first = true

        fileprivate init(writer: JSONWriter) {
            self.writer = writer
        }

        public mutating func member(_ name: String, _ value: (inout JSONWriter) -> Void) {
            if !first { writer.bytes.append(UInt8(ascii: ",")) }
            first = false
            writer.string(name)
            writer.bytes.append(UInt8(ascii: ":"))
            value(&writer)
        }
    }
}
