import Foundation
import TopChromeClient

/// `topchrome watch [--auth-token-file FILE] URL ID`: prints each state of a
/// session as it arrives, one line of JSON each, until the session ends.
/// A tool for operators, and a user of the client library. Its exit codes
/// tell a script how the watch ended without reading stderr.
enum Watch {
    static let usage = """
        usage: topchrome watch [--auth-token-file FILE] [--connection] URL ID

        Prints each state of session ID on the server at URL as it arrives, one
        line of JSON each, until the session ends. URL is an http or https URL;
        ID is 32 lowercase hex digits, not all zeros. The token file may also
        be given as TOPCHROME_AUTH_TOKEN_FILE; it is read again at each
        connection and when the server refuses a token or ends the stream at
        its expiry, so a token rotated in it is used without a restart.

        While the server cannot be reached, or answers 503 or 429, or says the
        session store behind it is unavailable, says so on stderr once per
        outage and again when it is back, and keeps trying (waits of at most
        2 s, or what the server's Retry-After asks).

        With --connection (or TOPCHROME_WATCH_CONNECTION=1), also shows the
        connection's state on stderr each time it changes: "connecting",
        "live", "retrying in N s" (the wait before the next attempt).

        Exit status, with the reason on stderr:
          0  stopped by Ctrl-C (SIGINT) or SIGTERM
          1  the server refused (a 4xx such as 401), answered what the API
             never does, or could not be reached at first contact (8 tries)
          2  usage error
          3  the session ended: deleted or expired (also when found gone on
             reconnecting after an outage)
          4  no such session at first contact (never created, or already
             deleted or expired)

        """

    /// Exit statuses, as the usage lists them.
    enum Status {
        static let stopped: Int32 = 0
        static let failed: Int32 = 1
        static let usage: Int32 = 2
        static let ended: Int32 = 3
        static let notFound: Int32 = 4
    }

    static func run() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var tokenFile = ProcessInfo.processInfo.environment["TOPCHROME_AUTH_TOKEN_FILE"]
        if arguments.first == "--help" || arguments.first == "-h" {
            print(usage, terminator: "")
            exit(0)
        }
        var showConnection = ProcessInfo.processInfo.environment["TOPCHROME_WATCH_CONNECTION"] == "1"
        if let index = arguments.firstIndex(of: "--connection") {
            showConnection = true
            arguments.remove(at: index)
        }
        if arguments.first == "--auth-token-file" {
            guard arguments.count > 1 else { fail("--auth-token-file needs a file", status: Status.usage) }
            tokenFile = arguments[1]
            arguments.removeFirst(2)
        } else if let first = arguments.first, first.hasPrefix("--auth-token-file=") {
            tokenFile = String(first.dropFirst("--auth-token-file=".count))
            arguments.removeFirst()
        }
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(Status.usage)
        }
        guard let url = URL(string: arguments[0]), url.scheme == "http" || url.scheme == "https",
              url.host?.isEmpty == false else {
            fail("'\(arguments[0])' is not an http or https URL (see --help)", status: Status.usage)
        }
        let id = arguments[1]
        guard isSessionID(id) else {
            fail("'\(id)' is not a session id: 32 lowercase hex digits, not all zeros (see --help)", status: Status.usage)
        }
        var token: String?
        if let tokenFile, !tokenFile.isEmpty {
            do {
                token = try readToken(from: tokenFile)
            } catch {
                fail(error.message, status: Status.usage)
            }
        }

        var configuration = ChromeService.Configuration()
        // An operator wants to see the server back within seconds, not half a minute.
        configuration.retry.maximumDelay = 2
        // The file is read again whenever a token is needed: one rotated
        // there (a new global token, an access token a sidecar renews
        // before its exp) is used from the next connection on, and the
        // stream's own renewal (a refused or expired token) finds it.
        let service = if let tokenFile, let first = token {
            ChromeService(baseURL: url, configuration: configuration) { _ in (try? readToken(from: tokenFile)) ?? first }
        } else {
            ChromeService(baseURL: url, bearerToken: token, configuration: configuration)
        }
        let session = service.session(id: id)
        let outages = OutageReport(server: arguments[0], firstContactAttempts: configuration.retry.maximumAttempts,
                                   showsConnection: showConnection)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        stopOnSignals()
        do {
            for try await state in session.states(onConnection: outages.note, onWait: outages.waiting) {
                let line = (try? encoder.encode(state)) ?? Data()
                // Written at once, not buffered: the output is often a pipe.
                FileHandle.standardOutput.write(line + Data("\n".utf8))
            }
        } catch TopChromeError.sessionGone {
            fail("no session \(id) on \(arguments[0]) (never created, or already deleted or expired)",
                 status: Status.notFound)
        } catch {
            fail("\(error)", status: Status.failed)
        }
        // The server tells a deletion and an expiry alike (`event: deleted`).
        fail("session \(id) ended: it was deleted or expired", status: Status.ended)
    }

    /// Ctrl-C or SIGTERM is the operator ending the watch, not a failure:
    /// exit 0, leaving the states printed so far as the output.
    /// Each line goes out whole and unbuffered, so nothing is left to
    /// flush: `_exit`, the one exit a signal handler may call.
    private static func stopOnSignals() {
        for number in [SIGINT, SIGTERM] {
            signal(number) { _ in _exit(0) }
        }
    }

    static func fail(_ message: String, status: Int32) -> Never {
        say(message)
        exit(status)
    }

    static func say(_ message: String) {
        FileHandle.standardError.write(Data("topchrome watch: \(message)\n".utf8))
    }

    /// The service's own rule for ids: checked here so that a typo is a usage
    /// error, not a session that seems gone (or a path elsewhere on the server).
    struct TokenFileError: Error {
        let message: String
    }

    /// The token in `file`: one word of printable ASCII, the server's own
    /// rule for its token (anything else could never match it).
    static func readToken(from file: String) throws(TokenFileError) -> String {
        // Through FileHandle: String(contentsOfFile:) leaks its buffer on an empty file.
        guard let handle = FileHandle(forReadingAtPath: file),
              let data = try? handle.readToEnd() ?? Data(),
              let contents = String(data: data, encoding: .utf8) else {
            throw TokenFileError(message: "cannot read the token file \(file)")
        }
        let word = contents.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !word.isEmpty, word.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw TokenFileError(message: "the token in '\(file)' must be one word of printable ASCII")
        }
        return word
    }

    static func isSessionID(_ text: String) -> Bool {
        let digits = Array(text.utf8)
        return digits.count == 32 && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            && digits.contains { $0 != 0x30 }
    }
}

/// Tells the operator when the server cannot be reached (once per outage)
/// and when it is back, so a wrong port is not mistaken for a quiet
/// session; gives up if the server was never reached at all.
final class OutageReport: @unchecked Sendable {
    private let server: String
    private let firstContactAttempts: Int
    private let lock = NSLock()
    private var everConnected = false
    private var isDown = false
    private let showsConnection: Bool
    private var shown: ConnectionState?

    /// The server's 503s for a store outage say so in their detail ("The
    /// session store did not answer (no connection to Redis)…"); the API
    /// has no other mark of it.
    static func blamesTheStore(_ problem: Problem) -> Bool {
        problem.status == 503 && problem.detail?.localizedCaseInsensitiveContains("session store") == true
    }

    init(server: String, firstContactAttempts: Int, showsConnection: Bool = false) {
        self.server = server
        self.firstContactAttempts = firstContactAttempts
        self.showsConnection = showsConnection
        if showsConnection { show(.connecting) }
    }

    /// With `--connection`: the state, each time it changes.
    private func show(_ state: ConnectionState) {
        guard showsConnection, shown != state else { return }
        shown = state
        Watch.say("connection: \(state)")
    }

    func waiting(_ seconds: Double) {
        lock.withLock { show(.retrying(after: seconds)) }
    }

    func note(_ event: StreamConnectionEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .connected:
            show(.live)
            if isDown { Watch.say("reached \(server) again") }
            isDown = false
            everConnected = true
        case let .interrupted(error, failedAttempts):
            // A server that answered (503, 429) is not one that cannot be
            // reached, and one that says its store is away is up itself.
            let trouble = switch error {
            case let .transport(reason, _): "cannot reach \(server) (\(reason))"
            case let .unavailable(problem) where Self.blamesTheStore(problem):
                "the session store behind \(server) is unavailable (\(problem.detail ?? "503"))"
            default: "\(server) is unavailable (\(error.description))"
            }
            if !everConnected, failedAttempts >= firstContactAttempts {
                Watch.fail("\(trouble); gave up after \(failedAttempts) attempts", status: Watch.Status.failed)
            }
            if !isDown { Watch.say("\(trouble); retrying") }
            isDown = true
        }
    }
}
