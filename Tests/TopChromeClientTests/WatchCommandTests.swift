import Foundation
import Testing
@testable import TopChromeClient

/// `topchrome watch URL ID` as operators run it: the server executable hands
/// over to `topchrome-watch`, built on the library.
@Suite(.timeLimit(.minutes(10))) struct WatchCommandTests {
    /// The executables built beside this test bundle.
    static let buildFolder: URL = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") }
        ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
        .deletingLastPathComponent()

    /// A program run to its end or killed; its output read as it comes.
    final class Run: @unchecked Sendable {
        let process = Process()
        /// What the program printed; filled by reader threads that must not
        /// keep the run alive: its deinit ends a program a failed test left.
        private final class Printed: @unchecked Sendable {
            let lock = NSLock()
            var output = Data()
            var errors = Data()
            var closedPipes = 0
        }
        private let printed = Printed()

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
                Thread { [printed] in
                    while case let chunk = handle.availableData, !chunk.isEmpty {
                        printed.lock.withLock { if isError { printed.errors.append(chunk) } else { printed.output.append(chunk) } }
                    }
                    printed.lock.withLock { printed.closedPipes += 1 }
                }.start()
            }
        }

        var lines: [String] {
            printed.lock.withLock { String(decoding: printed.output, as: UTF8.self) }.split(separator: "\n").map(String.init)
        }
        var standardError: String { printed.lock.withLock { String(decoding: printed.errors, as: UTF8.self) } }

        /// The exit status, or nil (and the process killed) if it runs past
        /// `seconds`: a bound for a watcher that never ends, not a measure of
        /// how soon it does (under TSan beside other work a start took over 30 s).
        func exitStatus(within seconds: Double = 60) async -> Int32? {
            // Foundation may never hear of an exit (see `Process.waitForExit`):
            // under ASan beside other work a watcher that printed its usage
            // stayed "running" for 3 minutes.
            let process = self.process
            let status: Int32? = await withCheckedContinuation { done in
                Thread { done.resume(returning: process.waitForExit(within: seconds)) }.start()
            }
            guard let status else {
                process.terminate()
                return nil
            }
            // The reader threads take the last bytes after the exit.
            let printed = self.printed
            _ = await eventually(within: 5) { printed.lock.withLock { printed.closedPipes == 2 } }
            return status
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    static func watch(_ arguments: [String], environment: [String: String]? = nil) throws -> Run {
        try Run(buildFolder.appendingPathComponent("topchrome"), ["watch"] + arguments, environment: environment)
    }

    /// A run dropped while its watcher still follows (a test that failed
    /// before its end) ends the watcher: none outlives the suite.
    @Test func aDroppedRunEndsItsWatcher() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession()
        var run: Run? = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run?.lines.count == 1 })
        let pid = try #require(run?.process.processIdentifier)
        run = nil
        #expect(await eventually { !Self.isRunning(pid) })
    }

    /// Whether `pid` still runs: neither gone nor a zombie waiting to be reaped.
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let parenthesis = stat.lastIndex(of: ")") else { return false }
        return !stat[parenthesis...].hasPrefix(") Z")
    }

    @Test func printsEachStateUntilTheSessionIsDeleted() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        await session.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(await eventually { run.lines.count == 2 })
        try await session.delete()
        #expect(await run.exitStatus() == 3, "\(run.standardError)")
        #expect(run.standardError == "topchrome watch: session \(session.id) ended: it was deleted or expired\n")
        #expect(run.lines == [
            #"{"id":"\#(session.id)","inset":59,"isRevealed":true,"version":1}"#,
            #"{"id":"\#(session.id)","inset":59,"isRevealed":false,"lastSeq":1,"version":2}"#,
        ])
    }

    /// `--connection` shows the connection's state as it changes; the exit
    /// codes stay as they were.
    @Test func showsTheConnectionState() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let run = try Self.watch(["--connection", server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        #expect(await eventually { run.standardError.contains("topchrome watch: connection: live\n") }, "\(run.standardError)")
        #expect(run.standardError.hasPrefix("topchrome watch: connection: connecting\n"), "\(run.standardError)")
        try await session.delete()
        #expect(await run.exitStatus() == 3, "\(run.standardError)")
    }

    /// Not found at first contact is not the end of a session it followed: exit 4.
    @Test func unknownSessionExitsWith4() async throws {
        let server = try TestServer()
        let run = try Self.watch([server.url.absoluteString, "0123456789abcdef0123456789abcdef"])
        #expect(await run.exitStatus() == 4)
        #expect(run.standardError == "topchrome watch: no session 0123456789abcdef0123456789abcdef on \(server.url.absoluteString) (never created, or already deleted or expired)\n",
                "\(run.standardError)")
    }

    /// Ctrl-C is the operator ending the watch: exit 0, nothing said.
    @Test func ctrlCExitsWith0() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession()
        for number in [SIGINT, SIGTERM] {
            let run = try Self.watch([server.url.absoluteString, session.id])
            #expect(await eventually { run.lines.count == 1 })
            kill(run.process.processIdentifier, number)
            #expect(await run.exitStatus() == 0, "signal \(number)")
            #expect(run.standardError.isEmpty, "\(run.standardError)")
        }
    }

    /// A server that says its session store is away is up itself: the watch
    /// says where the trouble is, and gives up at first contact as for any outage.
    @Test func aStoreOutageBehindTheServerIsToldAsSuch() async throws {
        // A Redis store at a port where nothing listens: every watch gets 503.
        let probe = try TestServer()
        let closedPort = probe.port
        probe.stop()
        let server = try Run(Self.buildFolder.appendingPathComponent("topchrome"),
                             ["--port", "0", "--store", "redis://127.0.0.1:\(closedPort)", "--log-level", "error"])
        #expect(await eventually { server.lines.first != nil })
        let url = try #require(server.lines.first.flatMap { line in
            line.range(of: "http://").map { String(line[$0.lowerBound...].prefix { $0 != " " }) }
        })
        let run = try Self.watch([url, String(repeating: "1", count: 32)])
        #expect(await run.exitStatus(within: 30) == 1, "\(run.standardError)")
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.first?.hasPrefix("topchrome watch: the session store behind \(url) is unavailable (The session store did not answer") == true,
                "\(lines)")
        #expect(lines.last?.hasSuffix("; gave up after 8 attempts") == true, "\(lines)")
        server.process.terminate()
    }

    @Test func usageErrorsExitWith2() async throws {
        for arguments in [[], ["http://127.0.0.1:1"], ["not a url", "id"], ["--auth-token-file"]] {
            let run = try Self.watch(arguments)
            #expect(await run.exitStatus() == 2, "\(arguments)")
            #expect(run.standardError.contains("topchrome watch"), "\(arguments): \(run.standardError)")
        }
    }

    /// A malformed id is a typo, not a session that is gone: a usage error
    /// that says what an id is, before anything is sent.
    @Test func malformedIdIsAUsageError() async throws {
        let server = try TestServer()
        for id in ["not-an-id", String(repeating: "0", count: 32), "../../healthz",
                   String(repeating: "A", count: 32), String(repeating: "a", count: 31)] {
            let run = try Self.watch([server.url.absoluteString, id])
            #expect(await run.exitStatus() == 2, "\(id)")
            #expect(run.standardError.contains("32 lowercase hex digits, not all zeros"), "\(id): \(run.standardError)")
        }
    }

    /// Only http and https URLs, and the refusal says so.
    @Test func urlThatIsNotHTTPSaysWhy() async throws {
        for url in ["ftp://x", "not a url", "http://"] {
            let run = try Self.watch([url, String(repeating: "1", count: 32)])
            #expect(await run.exitStatus() == 2, "\(url)")
            #expect(run.standardError.contains("'\(url)' is not an http or https URL"), "\(url): \(run.standardError)")
        }
    }

    /// A session deleted while the server could not be reached is found
    /// gone on reconnecting: the end a deletion brings (exit 3), not the
    /// error of a session that never existed.
    @Test func aDeletionFoundAfterAnOutageEndsTheWatch() async throws {
        // No state file: the restarted server no longer has the session.
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        server.stop()
        #expect(await eventually { run.standardError.contains("cannot reach") })
        try server.start()
        #expect(await run.exitStatus(within: 15) == 3, "\(run.standardError)")
        #expect(run.standardError.hasSuffix("topchrome watch: session \(session.id) ended: it was deleted or expired\n"))
        #expect(run.lines.count == 1)
    }

    /// A token the server could never accept is a usage error, as it is
    /// for the server's own --auth-token-file.
    @Test func aTokenFileThatIsNotOneWordIsAUsageError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, contents) in [("empty", ""), ("blank", " \n"), ("two-words", "a b\n")] {
            let file = folder.appendingPathComponent(name).path
            try contents.write(toFile: file, atomically: true, encoding: .utf8)
            let run = try Self.watch(["--auth-token-file", file, "http://127.0.0.1:1", String(repeating: "1", count: 32)])
            #expect(await run.exitStatus() == 2, "\(name)")
            #expect(run.standardError.contains("must be one word of printable ASCII"), "\(name): \(run.standardError)")
        }
    }

    /// A server that answers 503 is unavailable, not unreachable.
    @Test func aRefusingServerIsNotCalledUnreachable() async throws {
        // Heartbeats let the server notice the first watcher leave.
        let server = try TestServer {
            $0.limits.maxWatchersPerSession = 1
            $0.sessions.heartbeatSeconds = 1
        }
        let session = try await server.client().createSession()
        let holder = StateRecorder(session.states())
        #expect(await holder.waitFor { !$0.isEmpty })
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.standardError.contains("is unavailable (") }, "\(run.standardError)")
        #expect(!run.standardError.contains("cannot reach"), "\(run.standardError)")
        holder.cancel()
        #expect(await eventually(within: 20) { run.lines.count == 1 }, "it follows once the server lets it")
        #expect(run.standardError.contains("reached \(server.url.absoluteString) again"), "\(run.standardError)")
        try await session.delete()
        #expect(await run.exitStatus() == 3)
    }

    /// A quiet session costs no CPU: the watcher waits for bytes rather than
    /// polling for them. (Reading the stream through FoundationNetworking's
    /// URLSession kept a core busy for as long as the stream was open.)
    @Test(.disabled(if: Self.urlSessionOnLinux, "Linux's URLSession spins a core while it waits (DEVELOPERS.md)"))
    func anIdleWatchUsesNoCPU() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession()
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        // `topchrome watch` execs topchrome-watch: the same process.
        let before = try Self.cpuSeconds(of: run.process.processIdentifier)
        try await Task.sleep(nanoseconds: 2_000_000_000)
        let used = try Self.cpuSeconds(of: run.process.processIdentifier) - before
        #expect(used < 0.2, "\(used) s of CPU in 2 s of an idle stream")
        try await session.delete()
        #expect(await run.exitStatus() == 3)
    }

    /// Set by `make test-client-urlsession`: FoundationNetworking's
    /// URLSession reads the streams, which differs in what it costs and says.
    static var urlSessionOnLinux: Bool {
        #if os(Linux)
        EventStreamTransport.chosen == .urlSession
        #else
        false
        #endif
    }

    /// User plus system time of a process, from /proc (clock ticks of 1/100 s).
    static func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return Double(Int(fields[11])! + Int(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A wrong port is told at once, not mistaken for a quiet session, and
    /// a server never reached ends the command with the reason.
    @Test func unreachableServerIsToldAndGivenUp() async throws {
        let run = try Self.watch(["http://127.0.0.1:1", String(repeating: "1", count: 32)])
        #expect(await eventually { run.standardError.contains("cannot reach http://127.0.0.1:1 (") },
                "told while still trying")
        #expect(await run.exitStatus(within: 30) == 1, "\(run.standardError)")
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.count == 2, "once for the outage, once for giving up: \(lines)")
        // Our words, not libcurl's ("Failed to connect to … Couldn't connect to server"),
        // on the libcurl path; the URLSession path has FoundationNetworking's.
        if !Self.urlSessionOnLinux {
            #expect(lines.first == "topchrome watch: cannot reach http://127.0.0.1:1 (connection refused); retrying")
        }
        #expect(lines.last?.contains("gave up after 8 attempts") == true)
        #expect(run.lines.isEmpty)
    }

    /// An outage of a followed session is told once, however many attempts
    /// fail, and its end is told too; the states go on.
    @Test func outageIsToldOnceAndItsEnd() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestServer { $0.stateFile.path = folder.appendingPathComponent("state.jsonl").path }
        let session = try await server.client().createSession(inset: 59)
        let run = try Self.watch([server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 })
        #expect(run.standardError.isEmpty)

        server.stop()
        #expect(await eventually { run.standardError.contains("cannot reach \(server.url.absoluteString) (") })
        // Reconnection waits are at most 2 s, so more attempts fail meanwhile.
        try await Task.sleep(nanoseconds: 3_000_000_000)
        try server.start()
        #expect(await eventually { run.standardError.contains("reached \(server.url.absoluteString) again") },
                "\(run.standardError)")
        #expect(run.standardError.split(separator: "\n").count == 2, "\(run.standardError)")
        try await session.setInset(40)
        #expect(await eventually { run.lines.count == 2 }, "\(run.lines)")
        try await session.delete()
        #expect(await run.exitStatus() == 3)
    }

    /// The token file of the server's own flag works for the watcher too.
    @Test func bearerTokenFromTheServersTokenFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "watch-token\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let server = try TestServer { $0.auth.token = "watch-token" }
        let session = try await ChromeService(baseURL: server.url, bearerToken: "watch-token").createSession()
        let refused = try Self.watch([server.url.absoluteString, session.id])
        #expect(await refused.exitStatus() == 1, "401 without the token: \(refused.standardError)")
        let run = try Self.watch(["--auth-token-file", file.path, server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 }, "\(run.standardError)")
        try await session.delete()
        #expect(await run.exitStatus() == 3)
    }

    /// A token rotated in the file is read when the server refuses the old
    /// one: the watch goes on across a restart with a new token.
    @Test func aTokenRotatedInTheFileIsUsedWithoutARestart() async throws {
        let folder = try StateFolder()
        let file = folder.url.appendingPathComponent("token").path
        try "first-token\n".write(toFile: file, atomically: true, encoding: .utf8)
        let server = try TestServer { $0.auth.token = "first-token"; $0.stateFile.path = folder.stateFile }
        let session = try await ChromeService(baseURL: server.url, bearerToken: "first-token").createSession()
        let run = try Self.watch(["--auth-token-file", file, server.url.absoluteString, session.id])
        #expect(await eventually { run.lines.count == 1 }, "\(run.standardError)")
        server.stop()
        server.reconfigure { $0.auth.token = "second-token" }
        try "second-token\n".write(toFile: file, atomically: true, encoding: .utf8)
        try server.start()
        _ = try await ChromeService(baseURL: server.url, bearerToken: "second-token").session(id: session.id).setInset(30)
        #expect(await eventually { run.lines.count == 2 }, "the change after the rotation: \(run.lines) \(run.standardError)")
    }

    /// Runs a program just copied, again while exec answers "Text file busy":
    /// a process another test starts meanwhile can inherit the copy's open
    /// descriptor, and Linux refuses to run a file open for writing.
    static func runFreshCopy(_ program: URL, _ arguments: [String], environment: [String: String]) async throws -> Run {
        for _ in 0..<50 {
            do {
                return try Run(program, arguments, environment: environment)
            } catch let error as NSError where (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == Int(ETXTBSY) {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
        }
        return try Run(program, arguments, environment: environment)
    }

    /// Without `topchrome-watch` beside it or on PATH, `topchrome watch` says
    /// so, like a usage error.
    @Test func missingWatchProgramIsAClearError() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("topchrome")
        let program = Self.buildFolder.appendingPathComponent("topchrome")
        // Linked where it can be: a link opens no file for writing that a server
        // another test starts could inherit and hold past every retry (seen: 5 s).
        do { try FileManager.default.linkItem(at: program, to: alone) } catch { try FileManager.default.copyItem(at: program, to: alone) }
        let run = try await Self.runFreshCopy(alone, ["watch", "http://127.0.0.1:1", "id"], environment: ["PATH": folder.path])
        #expect(await run.exitStatus() == 2)
        #expect(run.standardError.contains("topchrome-watch"), "\(run.standardError)")

        let found = try await Self.runFreshCopy(alone, ["watch"], environment: ["PATH": Self.buildFolder.path])
        #expect(await found.exitStatus() == 2, "usage from topchrome-watch, found on PATH")
        #expect(found.standardError.contains("usage: topchrome watch"), "\(found.standardError)")
    }
}
