#if canImport(Glibc)
import Glibc
#endif

/// The files that hold secrets (the bearer token, the Redis password, the
/// TLS certificate and key): read at start, and the token and TLS files
/// again on reload, by the same rules both times.
extension ServiceConfiguration {
    /// The bearer token in a file. White space around it (an editor's final
    /// newline) is not part of it; the rest must be one word of printable
    /// ASCII, as a header carries it.
    static func bearerToken(inFile path: String, _ source: String) throws(UsageError) -> String {
        var token = try contents(of: path, source)[...]
        while token.first?.isWhitespace == true { token.removeFirst() }
        while token.last?.isWhitespace == true { token.removeLast() }
        guard !token.isEmpty, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw UsageError(description: "\(source): the token in '\(path)' must be one word of printable ASCII")
        }
        return String(token)
    }

    /// A bearer token shorter than this is easy to guess: 32 characters is
    /// what `openssl rand -hex 16` gives (128 bits). Shorter ones still work,
    /// with a warning at start and in `check-config`.
    static let shortestSafeToken = 32

    /// What the configuration allows but an operator should change: each
    /// a line that a start logs as a warning and `check-config` prints.
    public var warnings: [String] {
        var lines: [String] = []
        for (option, path, token) in [("--auth-token-file", auth.tokenFile, auth.token),
                                     ("--metrics-token-file", auth.metricsTokenFile, auth.metricsToken)] {
            guard let token, token.utf8.count < Self.shortestSafeToken else { continue }
            lines.append("\(option): the token in '\(path ?? "?")' is \(token.utf8.count) characters; "
                + "use at least \(Self.shortestSafeToken) (e.g. openssl rand -hex 16), or it may be guessed")
        }
        return lines
    }

    /// The Redis password in a file: all of it but an editor's final
    /// newline, which is not part of it.
    static func redisPassword(inFile path: String, _ source: String) throws(UsageError) -> String {
        var password = try contents(of: path, source)[...]
        while password.last?.isNewline == true { password.removeLast() }
        guard !password.isEmpty else { throw UsageError(description: "\(source): '\(path)' is empty; it must hold the password") }
        // Spaces alone are a file written wrong, not a password anyone chose.
        guard !password.allSatisfy(\.isWhitespace) else {
            throw UsageError(description: "\(source): '\(path)' holds only white space; it must hold the password")
        }
        return String(password)
    }

    /// A file's text, or a usage error naming the option and the cause.
    /// Read with `read(2)` until its end, so that a device or pipe that reads
    /// as nothing (`/dev/null`) is simply empty: FoundationEssentials' file
    /// reading answers nil there, and leaks its buffer on an empty file.
    static func contents(of path: String, _ source: String) throws(UsageError) -> String {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw UsageError(description: "\(source): cannot read '\(path)'") }
        defer { close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(file, &chunk, chunk.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw UsageError(description: "\(source): cannot read '\(path)'")
            }
            bytes.append(contentsOf: chunk[..<count])
            // Secrets and tokens are short; this bounds a mistake like /dev/zero.
            guard bytes.count <= Self.largestReadFile else {
                throw UsageError(description: "\(source): '\(path)' is larger than 1 MiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw UsageError(description: "\(source): '\(path)' is not UTF-8 text")
        }
        return text
    }

    static let largestReadFile = 1 << 20
}
