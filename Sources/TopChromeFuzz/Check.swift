#if canImport(Glibc)
import Glibc
#endif

/// Stops the run when an invariant does not hold. The message goes to
/// stderr, then `abort()`: libFuzzer catches the signal, prints the stack
/// and saves the input as a crash file.
func check(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fail(message(), file: file, line: line) }
}

func fail(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let report = "\n==TopChromeFuzz== invariant failed at \(file):\(line)\n\(message)\n\n"
    report.utf8CString.withUnsafeBufferPointer { buffer in
        _ = write(2, buffer.baseAddress, buffer.count - 1)
    }
    abort()
}

/// Bytes as a short printable text for failure messages.
func printable(_ bytes: some Collection<UInt8>, limit: Int = 600) -> String {
    var text = ""
    for byte in bytes.prefix(limit) {
        switch byte {
        case 0x0A: text += "\\n"
        case 0x0D: text += "\\r"
        case 0x5C: text += "\\\\"
        case 0x20..<0x7F: text.unicodeScalars.append(Unicode.Scalar(byte))
        default: text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }
    }
    return bytes.count > limit ? text + "…(\(bytes.count) bytes)" : text
}
