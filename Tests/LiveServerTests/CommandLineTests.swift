import Foundation
import Testing
import TopChromeTesting

/// The `topchrome` commands besides serving, run as operators run them:
/// `--version`, `check-config`, `healthcheck`.
@Suite struct CommandLineTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    /// The commit this checkout is at, as the build embeds it; "unknown"
    /// where git cannot tell (then the build cannot either).
    static let commitBuilt: String = {
        let arguments = ["git", "-C", URL(fileURLWithPath: #filePath).deletingLastPathComponent().path, "rev-parse", "--short", "HEAD"]
        guard let (status, text) = try? Process.runToEnd("/usr/bin/env", arguments, keepingErrors: false) else { return "unknown" }
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return status == 0 && !commit.isEmpty ? commit : "unknown"
    }()

    /// Runs `topchrome` with `arguments` to its end: status, stdout, stderr.
    static func run(_ arguments: [String], environment: [String: String]? = nil,
                    within seconds: Double = 10) throws -> (status: Int32?, output: String, errors: String) {
        let process = try RunningServer(arguments, environment: environment)
        let status = process.waitForExit(within: seconds)
        let errors = process.standardError  // waits for the last chunk
        return (status, process.standardOutput, errors)
    }

    /// `--version`, `-v` and `topchrome version` all name the build: the
    /// version and the commit it was built from.
    @Test func versionNamesTheBuild() throws {
        for arguments in [["--version"], ["-v"], ["version"], ["--port", "1", "--version"]] {
            let run = try Self.run(arguments)
            #expect(run.status == 0, "\(arguments)")
            #expect(run.output == "topchrome 1.0.0 (commit \(Self.commitBuilt))\n", "\(arguments): \(run.output)")
        }
    }

    /// A listener that answers each connection with `answer` once it has
    /// read what the client sent, then closes it.
    static func answering(_ answer: String) throws -> LoopbackListener {
        try LoopbackListener { client in
            var request = [UInt8](repeating: 0, count: 1024)
            _ = recv(client, &request, request.count, 0)
            LoopbackListener.send(Array(answer.utf8), on: client)
        }
    }

    /// A healthcheck that fails says why: nothing listens, no answer in
    /// time, or the status the server gave, so the line an orchestrator
    /// shows is enough to act on.
    @Test func healthcheckSaysWhyItFailed() throws {
        let refused = try Self.run(["healthcheck", "--port", String(try LoopbackListener.freePort())])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("topchrome healthcheck: connection to 127.0.0.1:") && refused.errors.contains(" refused"),
                "\(refused.errors)")

        let unhealthy = try Self.answering("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        let status = try Self.run(["healthcheck", "--port", String(unhealthy.port)])
        #expect(status.status == 1)
        #expect(status.errors.contains("answered GET /healthz with status 503"), "\(status.errors)")

        let silent = try LoopbackListener(serve: nil)
        let timedOut = try Self.run(["healthcheck", "--port", String(silent.port)])
        #expect(timedOut.status == 1)
        #expect(timedOut.errors.contains("did not answer GET /healthz within 3 s"), "\(timedOut.errors)")

        let tls = try Self.answering("\u{16}\u{03}\u{01}garbage")
        let notHTTP = try Self.run(["healthcheck", "--port", String(tls.port)])
        #expect(notHTTP.status == 1)
        #expect(notHTTP.errors.contains("not HTTP"), "\(notHTTP.errors)")
    }

    /// A healthy server: exit 0 and nothing said.
    @Test func healthcheckOfAHealthyServerIsQuiet() throws {
        let server = try RunningServer(["--port", "0", "--log-level", "warn"])
        _ = try server.waitUntilListening()
        let healthy = try Self.run(["healthcheck", "--port", String(server.port)])
        #expect(healthy.status == 0)
        #expect(healthy.errors.isEmpty, "\(healthy.errors)")
    }
}
