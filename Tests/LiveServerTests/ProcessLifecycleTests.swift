import Foundation
import Testing
import TopChromeTesting

/// The `topchrome` executable as operators run it: flags, the start line, signals, exit codes.
@Suite struct ProcessLifecycleTests {
    /// The executable built beside this test bundle.
    static let executable: URL = {
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") }
            ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
            .deletingLastPathComponent()
        return bundleDirectory.appendingPathComponent("topchrome")
    }()

    /// A running `topchrome` with its output captured. Output is read as it
    /// comes: a server logging every request must never block on a full pipe.
    final class RunningServer: @unchecked Sendable {
        let process = Process()
        let output = Pipe()
        let errors = Pipe()
        var port = 0
        /// What the server printed; filled by reader threads that must not
        /// keep the server object alive (its deinit stops the server).
        private final class Printed: @unchecked Sendable {
            let lock = NSLock()
            var output = Data()
            var errors = Data()
        }
        private let printed = Printed()

        /// - Parameter descriptorLimit: the `nofile` limits (soft, hard) the server starts under.
        init(_ arguments: [String], environment: [String: String]? = nil, descriptorLimit: (Int, Int)? = nil) throws {
            if let (soft, hard) = descriptorLimit {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
                process.arguments = ["--nofile=\(soft):\(hard)", ProcessLifecycleTests.executable.path]
                    + arguments
            } else {
                process.executableURL = ProcessLifecycleTests.executable
                process.arguments = arguments
            }
            if let environment { process.environment = environment }
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // A thread per pipe, reading until the server closes it (plain
            // reads, not readabilityHandler, whose weak references
            // LeakSanitizer mistakes for leaks).
            let printed = self.printed
            for (pipe, isError) in [(output, false), (errors, true)] {
                let handle = pipe.fileHandleForReading
                Thread {
                    while true {
                        let chunk = handle.availableData
                        if chunk.isEmpty { return }
                        printed.lock.withLock {
                            if isError { printed.errors.append(chunk) } else { printed.output.append(chunk) }
                        }
                    }
                }.start()
            }
        }

        /// What the server printed on stdout so far.
        var standardOutput: String {
            printed.lock.withLock { String(decoding: printed.output, as: UTF8.self) }
        }

        /// Waits for the start line and takes the port from it.
        func waitUntilListening() throws -> String {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let line = standardOutput.split(separator: "\n").first(where: { $0.contains("listening on") }) {
                    // The URL ends the message in either log format: ...:PORT and a space or a quote.
                    let url = line.split(separator: "listening on ", maxSplits: 1).last?.prefix { $0 != " " && $0 != "\"" } ?? ""
                    let digits = url.split(separator: ":").last?.prefix { $0.isNumber } ?? ""
                    port = Int(digits) ?? 0
                    return String(line)
                }
                if !process.isRunning { break }
                usleep(5_000)
            }
            return ""
        }

        func signal(_ number: Int32) {
            kill(process.processIdentifier, number)
        }

        /// Waits for the exit (`seconds` times `testTimeScale`); returns the
        /// status, or nil if it did not exit in time.
        func waitForExit(within seconds: Double) -> Int32? {
            guard let status = process.waitForExit(within: seconds) else {
                process.terminate()
                return nil
            }
            return status
        }

        /// The log: every line goes to stdout unless `--log-errors-to stderr`
        /// (complete once the server has exited).
        var log: String {
            usleep(50_000)  // let the last chunk arrive
            return standardOutput
        }

        /// What the server printed on stderr (complete once it has exited).
        var standardError: String {
            usleep(50_000)  // let the last chunk arrive
            return printed.lock.withLock { String(decoding: printed.errors, as: UTF8.self) }
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    @Test func printsItsAddressAndStopsOnSIGTERM() throws {
        let server = try RunningServer(["--port", "0", "--threads", "1"])
        let line = try server.waitUntilListening()
        #expect(line.contains(" info topchrome listening on http://127.0.0.1:"), "\(line)")
        #expect(server.port > 0)

        let client = try TestHTTPClient(port: server.port)
        #expect(try client.request("POST", "/v1/sessions").status == 201)

        server.signal(SIGTERM)
        // An idle keep-alive connection must not hold the stop up for the whole timeout.
        #expect(server.waitForExit(within: 5) == 0)
        #expect(throws: TestClientError.self) { try TestHTTPClient(port: server.port) }
    }

    @Test func inFlightRequestFinishesAfterSIGTERM() throws {
        let server = try RunningServer(["--port", "0", "--shutdown-timeout", "10"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let body = Array(#"{"inset": 59}"#.utf8)
        // Headers and half the body are in when the stop begins.
        try client.send(raw: Array("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body[..<6])
        usleep(200_000)
        server.signal(SIGTERM)
        usleep(300_000)
        #expect(server.process.isRunning, "waits for the request in flight")
        // A request that arrives during the stop, on a new connection too, is refused whole.
        let late = try TestHTTPClient(port: server.port).request("POST", "/v1/sessions")
        #expect(late.status == 503)
        #expect(late.header("Content-Type") == "application/problem+json")
        #expect(late.header("Retry-After") != nil)
        #expect(late.header("Connection")?.lowercased() == "close")

        try client.send(raw: Array(body[6...]))
        let response = try client.readResponse()
        #expect(response.status == 201)
        #expect(try response.json["inset"] as? Int == 59)
        #expect(response.header("Connection")?.lowercased() == "close")
        #expect(server.waitForExit(within: 5) == 0)
    }

    @Test func stalledRequestDoesNotHoldTheStopPastTheTimeout() throws {
        let server = try RunningServer(["--port", "0", "--shutdown-timeout", "1"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        try client.send(raw: Array("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{".utf8))
        usleep(200_000)
        let stopped = Date()
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 5) == 0)
        #expect(Date().timeIntervalSince(stopped) < 4)
    }

    @Test func openStreamsEndAndTheProcessExitsOnSIGTERM() throws {
        let server = try RunningServer(["--port", "0", "--shutdown-timeout", "5"])
        _ = try server.waitUntilListening()
        let created = try TestHTTPClient(port: server.port).request("POST", "/v1/sessions")
        let id = try #require(try created.json["id"] as? String)
        let streams = try (0..<3).map { _ in try EventStreamClient(port: server.port, sessionID: id) }
        for stream in streams { _ = try stream.nextState() }
        let started = Date()
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 5) == 0)
        #expect(Date().timeIntervalSince(started) < 3, "streams end at once; the stop does not wait them out")
        for stream in streams {
            while try stream.next() != nil {}
            #expect(stream.ended)
        }
    }

    @Test func stopsOnSIGINTToo() throws {
        let server = try RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        server.signal(SIGINT)
        #expect(server.waitForExit(within: 5) == 0)
    }

    @Test func environmentConfiguresTheServer() throws {
        let server = try RunningServer([], environment: ["TOPCHROME_PORT": "0", "TOPCHROME_MAX_SESSIONS": "1"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        #expect(try client.request("POST", "/v1/sessions").status == 201)
        #expect(try client.request("POST", "/v1/sessions").status == 503)
    }

    @Test(arguments: [["--port", "99999"], ["--threads", "zero"], ["--no-such-flag"], ["--reveal-threshold", "1e999"]])
    func badConfigurationExitsWith2(_ arguments: [String]) throws {
        let server = try RunningServer(arguments)
        #expect(server.waitForExit(within: 5) == 2)
        let message = server.standardError
        #expect(message.hasPrefix("topchrome: "), "\(message)")
    }

    /// A certificate or key libmicrohttpd cannot use is a bad value: exit 2.
    @Test(arguments: [(true, false), (false, true), (false, false)])
    func badTLSFilesExitWith2(certificateIsValid: Bool, keyIsValid: Bool) throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        let folder = pki.directory.path
        try "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"
            .write(toFile: "\(folder)/bad-cert.pem", atomically: true, encoding: .utf8)
        try "not a key\n".write(toFile: "\(folder)/bad-key.pem", atomically: true, encoding: .utf8)
        let server = try RunningServer([
            "--port", "0",
            "--tls-cert", certificateIsValid ? "\(folder)/server.pem" : "\(folder)/bad-cert.pem",
            "--tls-key", keyIsValid ? "\(folder)/server.key" : "\(folder)/bad-key.pem",
        ])
        #expect(server.waitForExit(within: 5) == 2)
        #expect(server.log.contains("TLS certificate and key"), "\(server.log)")
    }

    @Test func portInUseIsAClearError() throws {
        let first = try RunningServer(["--port", "0"])
        _ = try first.waitUntilListening()
        let second = try RunningServer(["--port", String(first.port)])
        #expect(second.waitForExit(within: 5) == 1)
        let message = second.log
        #expect(message.contains(" error topchrome: cannot listen on"), "\(message)")
        #expect(message.contains("Address already in use"))
        first.signal(SIGTERM)
        #expect(first.waitForExit(within: 5) == 0)
    }

    @Test func healthcheckSubcommand() throws {
        let server = try RunningServer(["--port", "0", "--host", "0.0.0.0"])
        _ = try server.waitUntilListening()
        let healthy = try RunningServer(["healthcheck", "--port", String(server.port), "--host", "0.0.0.0"])
        #expect(healthy.waitForExit(within: 5) == 0)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 5) == 0)
        let down = try RunningServer(["healthcheck", "--port", String(server.port)])
        #expect(down.waitForExit(within: 5) == 1)
    }

    @Test func helpAndVersion() throws {
        let help = try RunningServer(["--help"])
        #expect(help.waitForExit(within: 5) == 0)
        usleep(50_000)
        #expect(help.standardOutput.contains("--max-sessions"))
        #expect(help.standardOutput.contains("SIGHUP never stops"))
        let version = try RunningServer(["--version"])
        #expect(version.waitForExit(within: 5) == 0)
        usleep(50_000)
        #expect(version.standardOutput.hasPrefix("topchrome "))
    }
}
