#if canImport(Glibc)
import Glibc
#endif
import Foundation

extension Process {
    /// Runs `program` to its end and returns its exit status and what it
    /// printed (stdout, and stderr unless `keepingErrors` is false). Its
    /// input is empty: a client such as `openssl s_client` ends once it has
    /// nothing to send.
    ///
    /// The output goes to a file, not a pipe. Tests start programs from many
    /// threads at once, and a child started meanwhile (a Redis that lives to
    /// the end of the run) inherits every descriptor open at that moment: a
    /// pipe whose write end it holds never ends, and reading it to its end
    /// waited for ever (a TSan run hung on a `redis-cli` long exited).
    public static func runToEnd(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
                                keepingErrors: Bool = true) throws -> (status: Int32, output: String) {
        var template = Array("\(NSTemporaryDirectory())/program-output.XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        // Gone from the directory at once; the open descriptor keeps it.
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        let file = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = file
        process.standardError = keepingErrors ? file : FileHandle.nullDevice
        try process.run()
        let status = process.waitForExit()
        // The program wrote through the same open file, so the offset is at its end.
        try file.seek(toOffset: 0)
        let data = try file.readToEnd() ?? Data()
        return (status, String(decoding: data, as: UTF8.self))
    }
}
