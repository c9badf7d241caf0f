import Foundation
import Redis
import Testing
@testable import TopChromeServer

@Suite struct ServiceConfigurationTests {
    @Test func defaults() throws {
        let configuration = try serve([])
        #expect(configuration.http.host == "127.0.0.1")
        #expect(configuration.http.port == 8080)
        #expect(configuration.http.threads >= 1)
        #expect(configuration.limits.maxSessions == 1_000_000)
        #expect(configuration.limits.maxBodyBytes == 65_536)
        #expect(configuration.sessions.revealThreshold == 1)
        #expect(configuration.sessions.ttl == 3600)
        #expect(configuration.http.shutdownTimeout == 10)
        #expect(configuration.http.requestTimeout == 10)
        #expect(configuration.limits.maxConnectionsPerIP == 64)
        #expect(configuration.httpServer.requestTimeout == .seconds(10))
        #expect(configuration.httpServer.maxConnectionsPerAddress == 64)
    }

    @Test func flagsInBothForms() throws {
        let configuration = try serve(["--port", "0", "--host=0.0.0.0", "--threads", "2", "--max-sessions=5",
                                       "--max-body-bytes", "1024", "--reveal-threshold", "2.5", "--session-ttl", "0",
                                       "--shutdown-timeout", "0.5", "--idle-timeout", "5", "--max-connections", "100"])
        #expect(configuration.http.port == 0)
        #expect(configuration.http.host == "0.0.0.0")
        #expect(configuration.http.threads == 2)
        #expect(configuration.limits.maxSessions == 5)
        #expect(configuration.limits.maxBodyBytes == 1024)
        #expect(configuration.sessions.revealThreshold == 2.5)
        #expect(configuration.sessions.ttl == 0)
        #expect(configuration.http.shutdownTimeout == 0.5)
        #expect(configuration.http.idleTimeout == 5)
        #expect(configuration.limits.maxConnections == 100)
    }

    @Test func environmentTwinsAndFlagsWin() throws {
        let environment = ["TOPCHROME_PORT": "9000", "TOPCHROME_MAX_SESSIONS": "7", "TOPCHROME_REVEAL_THRESHOLD": "3"]
        let fromEnvironment = try serve([], environment)
        #expect(fromEnvironment.http.port == 9000)
        #expect(fromEnvironment.limits.maxSessions == 7)
        #expect(fromEnvironment.sessions.revealThreshold == 3)
        #expect(try serve(["--port", "9001"], environment).http.port == 9001)
        #expect(try serve(["--port", "9001"], ["TOPCHROME_PORT": "not a port"]).http.port == 9001,
                "an overridden variable is not read")
    }

    @Test(arguments: [["--port", "70000"], ["--port", "x"], ["--port"], ["--threads", "0"], ["--max-sessions", "-1"],
                      ["--reveal-threshold", "nan"], ["--reveal-threshold", "inf"], ["--shutdown-timeout", "-1"],
                      ["--bogus"], ["extra"], ["--host", ""], ["--max-body-bytes", "1"]])
    func badValuesAreUsageErrors(_ arguments: [String]) {
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(arguments) }
    }

    @Test func badEnvironmentNamesTheVariable() {
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_PORT must be a whole number from 0 to 65535, not 'eighty'")) {
            try serve([], ["TOPCHROME_PORT": "eighty"])
        }
    }

    @Test func secretsAreReadFromFiles() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "  s3cret\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try serve(["--auth-token-file", file.path]).auth.token == "s3cret")
        #expect(try serve([], ["TOPCHROME_AUTH_TOKEN_FILE": file.path]).auth.token == "s3cret")
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--auth-token-file", "/nonexistent/token"]) }
        try "two words".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--auth-token-file", file.path]) }
        // "printable ASCII", as the message says: no control character, inside or at the end.
        for token in ["s3c\u{1}ret", "s3cret\u{7F}", "s3cret\u{0}\n", "s3crét"] {
            try token.write(to: file, atomically: true, encoding: .utf8)
            #expect(throws: ServiceConfiguration.UsageError(
                description: "--auth-token-file: the token in '\(file.path)' must be one word of printable ASCII"),
                "\(token.debugDescription)") { try serve(["--auth-token-file", file.path]) }
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "--tls-cert and --tls-key go together")) {
            try serve(["--tls-cert", file.path])
        }
    }

    @Test func helpAndVersion() throws {
        #expect(try ServiceConfiguration.parse(arguments: ["--help"], environment: [:]) == .help)
        #expect(try ServiceConfiguration.parse(arguments: ["--port", "1", "--version"], environment: [:]) == .version)
        for flag in ["--host", "--port", "--threads", "--max-sessions", "--max-body-bytes", "--reveal-threshold",
                     "--session-ttl", "--shutdown-timeout", "TOPCHROME_PORT"] {
            #expect(ServiceConfiguration.usage.contains(flag))
        }
    }

    /// An empty password file is there and readable: it is said to be empty.
    @Test func anEmptyRedisPasswordFileIsCalledEmpty() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("password-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        for text in ["", "\n"] {
            try text.write(to: file, atomically: true, encoding: .utf8)
            #expect(throws: ServiceConfiguration.UsageError(
                description: "--redis-password-file: '\(file.path)' is empty; it must hold the password")) {
                try serve(["--store", "redis://h:1", "--redis-password-file", file.path])
            }
        }
        for text in ["   \n", "\t\n\n"] {
            try text.write(to: file, atomically: true, encoding: .utf8)
            #expect(throws: ServiceConfiguration.UsageError(
                description: "--redis-password-file: '\(file.path)' holds only white space; it must hold the password")) {
                try serve(["--store", "redis://h:1", "--redis-password-file", file.path])
            }
        }
        try " pass word \n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try serve(["--store", "redis://h:1", "--redis-password-file", file.path]).redis.password == " pass word ",
                "spaces within and around a password are kept: Redis passwords may hold them")
        // A device that reads as empty, as a process substitution of nothing does.
        #expect(throws: ServiceConfiguration.UsageError(description: "--redis-password-file: '/dev/null' is empty; it must hold the password")) {
            try serve(["--store", "redis://h:1", "--redis-password-file", "/dev/null"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "--redis-password-file: cannot read '/nonexistent/password'")) {
            try serve(["--store", "redis://h:1", "--redis-password-file", "/nonexistent/password"])
        }
    }

    /// A file given where a secret belongs is read to its end, but not
    /// without bound: a device that never ends is refused, not read for ever.
    @Test func aFileThatNeverEndsIsRefused() {
        #expect(throws: ServiceConfiguration.UsageError(description: "--auth-token-file: '/dev/zero' is larger than 1 MiB")) {
            try serve(["--auth-token-file", "/dev/zero"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "--auth-token-file: cannot read '/tmp'")) {
            try serve(["--auth-token-file", "/tmp"])
        }
    }

    /// `topchrome help` is `--help`; an unknown word elsewhere is still refused.
    @Test func helpAsAWord() throws {
        #expect(try ServiceConfiguration.parse(arguments: ["help"], environment: [:]) == .help)
        #expect(throws: ServiceConfiguration.UsageError.self) {
            try ServiceConfiguration.parse(arguments: ["--port", "1", "help"], environment: [:])
        }
    }

    /// Every subcommand is named, and every option's description stands
    /// apart from its flag by two spaces at least, in one column.
    @Test func helpNamesEverySubcommandAndKeepsColumnsApart() throws {
        let usage = ServiceConfiguration.usage
        for command in ["topchrome [options]", "topchrome healthcheck", "topchrome watch [--auth-token-file FILE] URL ID"] {
            #expect(usage.contains(command), "\(command)")
        }
        let optionLines = usage.split(separator: "\n").filter { $0.hasPrefix("  --") }
        #expect(optionLines.count >= 25)
        var columns = Set<Int>()
        for line in optionLines {
            let characters = Array(line)
            // The flag and its placeholder are separated by one space; the description by two or more.
            let gap = try #require((2..<characters.count - 1).first { characters[$0] == " " && characters[$0 + 1] == " " },
                                   "no two-space gap: \(line)")
            let description = try #require((gap..<characters.count).first { characters[$0] != " " })
            columns.insert(description)
            #expect(characters[..<gap].filter { $0 == " " }.count <= 3, "\(line)")
        }
        #expect(columns.count == 1, "descriptions in one column")
    }
}
