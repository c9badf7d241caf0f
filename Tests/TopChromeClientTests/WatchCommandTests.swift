import Foundation
import Testing
import TopChromeClient

/// `topchrome watch URL ID` as operators run it: the server executable hands
/// over to `topchrome-watch`, built on the library.
@Suite(.timeLimit(.minutes(1))) struct WatchCommandTests {
    /// The executables built beside this test bundle.
    static let buildFolder: URL = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") }
        ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
        .deletingLastPathComponent()

    /// A program run to its end or killed; its output read as it comes.
    final class Run: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var output = Data()
        private var errors = Data()
        private var closedPipes = 0

        init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
            process.executableURL = executable
            process.arguments = arguments
            if let environment { process.environment = environment }
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            for (pipe, isError) in [(out, false), (err, true)] {
                let handle = pipe.fileHandleForReading
                Thread { [self] in
                    while case let chunk = handle.availableData, !chunk.isEmpty {
                        lock.withLock { if isError { errors.append(chunk) } else { output.append(chunk) } }
                    }
                    lock.withLock { closedPipes += 1 }
                }.start()
            }
        }

        var lines: [String] { lock.withLock { String(decoding: output, as: UTF8.self) }.split(separator: "\n").map(String.init) }
        var standardError: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }

        /// The exit status, or nil (and the process killed) if it runs past `seconds`.
        func exitStatus(within seconds: Double = 10) async -> Int32? {
            guard await eventually(within: seconds, { !process.isRunning }) else {
                process.terminate()
                return nil
            }
            // The reader threads take the last bytes after the exit.
            _ = await eventually(within: 5) { lock.withLock { closedPipes == 2 } }
            return process.terminationStatus
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    static func watch(_ arguments: [String], environment: [String: String]? = nil) throws -> Run {
        try Run(buildFolder.appendingPathComponent("topchrome"), ["watch"] + arguments, environment: environment)
    }

    @Test func printsEachStateUntilTheSessionIsDeleted() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        await session.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(await eventually { run.lines.count == 2 })
        try await session.delete()
        #expect(await run.exitStatus() == 0, "\(run.standardError)")
        #expect(run.lines == [
            #"{"id":"\#(session.id)","inset":59,"isRevealed":true,"version":1}"#,
            #"{"id":"\#(session.id)","inset":59,"isRevealed":false,"version":2}"#,
        ])
    }

    @Test func unknownSessionExitsWith1() async throws {
        let server = try TestServer()
        let run = try Self.watch([server.url.absoluteString, String(repeating: "0", count: 32)])
        #expect(await run.exitStatus() == 1)
        #expect(run.standardError.contains("gone"), "\(run.standardError)")
    }

    @Test func usageErrorsExitWith2() async throws {
        for arguments in [[], ["http://127.0.0.1:1"], ["not a url", "id"], ["--auth-token-file"]] {
            let run = try Self.watch(arguments)
            #expect(await run.exitStatus() == 2, "\(arguments)")
            #expect(run.standardError.contains("topchrome watch"), "\(arguments): \(run.standardError)")
        }
    }

    /// The token file of the server's own flag works for the watcher too.
    @Test func bearerTokenFromTheServersTokenFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "watch-token\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try TestServer { $0.authToken = "watch-token" }
        let session = try await TopChromeClient(baseURL: server.url, bearerToken: "watch-token").createSession()
        let refused = try Self.watch([server.url.absoluteString, session.id])
        #expect(await refused.exitStatus() == 1, "401 without the token")
        let run = try Self.watch(["--auth-token-file", file.path, server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 }, "\(run.standardError)")
        try await session.delete()
        #expect(await run.exitStatus() == 0)
    }

    /// Without `topchrome-watch` beside it or on PATH, `topchrome watch` says
    /// so, like a usage error.
    @Test func missingWatchProgramIsAClearError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("topchrome")
        try FileManager.default.copyItem(at: Self.buildFolder.appendingPathComponent("topchrome"), to: alone)
        let run = try Run(alone, ["watch", "http://127.0.0.1:1", "id"], environment: ["PATH": folder.path])
        #expect(await run.exitStatus() == 2)
        #expect(run.standardError.contains("topchrome-watch"), "\(run.standardError)")

        let found = try Run(alone, ["watch"], environment: ["PATH": Self.buildFolder.path])
        #expect(await found.exitStatus() == 2, "usage from topchrome-watch, found on PATH")
        #expect(found.standardError.contains("usage: topchrome watch"), "\(found.standardError)")
    }
}
