import Foundation
import TopChromeClient

/// `topchrome watch [--auth-token-file FILE] URL ID`: prints each state of a
/// session as it arrives, one line of JSON each, until the session is
/// deleted. A tool for operators, and a user of the client library.
enum Watch {
    static let usage = """
        usage: topchrome watch [--auth-token-file FILE] URL ID

        Prints each state of session ID on the server at URL as it arrives, one
        line of JSON each, until the session is deleted (exit 0). URL is an
        http or https URL; ID is 32 lowercase hex digits, not all zeros.
        When the server cannot be reached, says so on stderr once per outage
        and again when it is back, and keeps trying (waits of at most 2 s,
        or what the server's Retry-After asks). Exits 0 also when the session
        is found gone after an outage; 1 if it does not exist at first
        contact, the server refuses, or the first contact fails 8 times; 2 on
        a usage error. The token file may also be given as
        TOPCHROME_AUTH_TOKEN_FILE.

        """

    static func run() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var tokenFile = ProcessInfo.processInfo.environment["TOPCHROME_AUTH_TOKEN_FILE"]
        if arguments.first == "--help" || arguments.first == "-h" {
            print(usage, terminator: "")
            exit(0)
        }
        if arguments.first == "--auth-token-file" {
            guard arguments.count > 1 else { fail("--auth-token-file needs a file", status: 2) }
            tokenFile = arguments[1]
            arguments.removeFirst(2)
        } else if let first = arguments.first, first.hasPrefix("--auth-token-file=") {
            tokenFile = String(first.dropFirst("--auth-token-file=".count))
            arguments.removeFirst()
        }
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(2)
        }
        guard let url = URL(string: arguments[0]), url.scheme == "http" || url.scheme == "https",
              url.host?.isEmpty == false else {
            fail("'\(arguments[0])' is not an http or https URL (see --help)", status: 2)
        }
        let id = arguments[1]
        guard isSessionID(id) else {
            fail("'\(id)' is not a session id: 32 lowercase hex digits, not all zeros (see --help)", status: 2)
        }
        var token: String?
        if let tokenFile, !tokenFile.isEmpty {
            // Through FileHandle: String(contentsOfFile:) leaks its buffer on an empty file.
            guard let handle = FileHandle(forReadingAtPath: tokenFile),
                  let data = try? handle.readToEnd() ?? Data(),
                  let contents = String(data: data, encoding: .utf8) else {
                fail("cannot read the token file \(tokenFile)", status: 2)
            }
            let word = contents.trimmingCharacters(in: .whitespacesAndNewlines)
            // The server's own rule for its token: anything else could never match it.
            guard !word.isEmpty, word.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                fail("the token in '\(tokenFile)' must be one word of printable ASCII", status: 2)
            }
            token = word
        }

        var configuration = TopChromeClient.Configuration()
        // An operator wants to see the server back within seconds, not half a minute.
        configuration.retry.maximumDelay = 2
        let session = TopChromeClient(baseURL: url, bearerToken: token, configuration: configuration).session(id: id)
        let outages = OutageReport(server: arguments[0], firstContactAttempts: configuration.retry.maximumAttempts)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            for try await state in session.states(onConnection: outages.note) {
                let line = (try? encoder.encode(state)) ?? Data()
                // Written at once, not buffered: the output is often a pipe.
                FileHandle.standardOutput.write(line + Data("\n".utf8))
            }
        } catch {
            fail("\(error)", status: 1)
        }
        exit(0)
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

    init(server: String, firstContactAttempts: Int) {
        self.server = server
        self.firstContactAttempts = firstContactAttempts
    }

    func note(_ event: StreamConnectionEvent) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .connected:
            if isDown { Watch.say("reached \(server) again") }
            isDown = false
            everConnected = true
        case let .interrupted(error, failedAttempts):
            // A server that answered (503, 429) is not one that cannot be reached.
            let trouble = if case let .transport(reason) = error {
                "cannot reach \(server) (\(reason))"
            } else {
                "\(server) is unavailable (\(error.description))"
            }
            if !everConnected, failedAttempts >= firstContactAttempts {
                Watch.fail("\(trouble); gave up after \(failedAttempts) attempts", status: 1)
            }
            if !isDown { Watch.say("\(trouble); retrying") }
            isDown = true
        }
    }
}
