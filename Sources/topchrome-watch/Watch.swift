import Foundation
import TopChromeClient

/// `topchrome watch [--auth-token-file FILE] URL ID`: prints each state of a
/// session as it arrives, one line of JSON each, until the session is
/// deleted. A tool for operators, and a user of the client library.
enum Watch {
    static let usage = """
        usage: topchrome watch [--auth-token-file FILE] URL ID

        Prints each state of session ID on the server at URL as it arrives, one
        line of JSON each, until the session is deleted (exit 0). Reconnects
        when the connection drops. Exits 1 if the session does not exist or
        the server refuses, 2 on a usage error. The token file may also be
        given as TOPCHROME_AUTH_TOKEN_FILE.

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
        guard arguments.count == 2, let url = URL(string: arguments[0]), url.scheme == "http" || url.scheme == "https" else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(2)
        }
        var token: String?
        if let tokenFile, !tokenFile.isEmpty {
            guard let contents = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                fail("cannot read the token file \(tokenFile)", status: 2)
            }
            token = contents.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        let session = TopChromeClient(baseURL: url, bearerToken: token).session(id: arguments[1])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            for try await state in session.states() {
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
        FileHandle.standardError.write(Data("topchrome watch: \(message)\n".utf8))
        exit(status)
    }
}
