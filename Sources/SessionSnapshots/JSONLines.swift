/// One line of a state file or journal, with where it is: failures name
/// the line and the byte, so an operator can look (or cut) there.
struct JSONLine {
    /// From 1.
    let number: Int
    /// The offset of its first byte in the file.
    let offset: Int
    let bytes: ArraySlice<UInt8>
    /// Whether a newline ends it. Every record is written with its newline
    /// in one write, so only a write cut short (power lost, a disk full)
    /// leaves the last line without one.
    let isTerminated: Bool

    /// The lines of `bytes`; a file that ends with a newline has no empty
    /// line after it.
    static func split(_ bytes: [UInt8]) -> [JSONLine] {
        var lines: [JSONLine] = []
        var start = 0, number = 1
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
            lines.append(JSONLine(number: number, offset: start, bytes: bytes[start..<(end ?? bytes.count)], isTerminated: end != nil))
            start = (end ?? bytes.count) + 1
            number += 1
        }
        return lines
    }

    /// Blank: nothing, or only spaces and tabs (an editor's trailing lines).
    var isBlank: Bool {
        bytes.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
    }
}
