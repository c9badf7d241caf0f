import Foundation
import RedisTestSupport
import Testing
import TopChromeTesting
@testable import TopChromeServer

/// `topchrome check-config [flags]`: what a start would refuse, found
/// without serving; exit 0, 2 for configuration to fix, 3 for a Redis
/// store that could not be reached.
@Suite struct CheckConfigTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    static func check(_ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32?, output: String, errors: String) {
        try CommandLineTests.run(["check-config"] + arguments, environment: environment)
    }

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("check-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// It never listens: a configuration for the port a running server
    /// holds (the one it will replace) is valid, and nothing is served.
    @Test func aValidConfigurationExits0WithoutServing() throws {
        let running = try RunningServer(["--port", "0", "--log-level", "warn"])
        _ = try running.waitUntilListening()
        let run = try Self.check(["--port", String(running.port)])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasSuffix("topchrome check-config: the configuration is valid\n"), "\(run.output)")
        #expect(!run.output.contains("listening"))
    }

    /// Flags and environment are read as a start reads them: a bad value is exit 2.
    @Test func badFlagsAndEnvironmentExit2() throws {
        for (arguments, environment) in [(["--port", "99999"], [String: String]()),
                                         ([], ["TOPCHROME_THREADS": "zero"]),
                                         (["--auth-token-file", "/no/such/file"], [:])] {
            let run = try Self.check(arguments, environment: environment)
            #expect(run.status == 2, "\(arguments) \(environment)")
            #expect(run.errors.hasPrefix("topchrome: "), "\(run.errors)")
        }
    }

    /// A token shorter than 32 characters works but is warned of, at start
    /// and in check-config (exit 0: it is the operator's choice); a long
    /// one is not.
    @Test func aShortTokenIsWarnedOf() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let short = folder.appendingPathComponent("short").path, long = folder.appendingPathComponent("long").path
        try "x\n".write(toFile: short, atomically: true, encoding: .utf8)
        try (String(repeating: "a1", count: 16) + "\n").write(toFile: long, atomically: true, encoding: .utf8)
        let warned = try Self.check(["--auth-token-file", short])
        #expect(warned.status == 0, "\(warned.errors)")
        #expect(warned.errors.contains("topchrome check-config: warning: --auth-token-file: the token in '\(short)' is 1 characters"),
                "\(warned.errors)")
        let quiet = try Self.check(["--auth-token-file", long])
        #expect(quiet.status == 0)
        #expect(!quiet.errors.contains("warning"), "\(quiet.errors)")

        let server = try RunningServer(["--port", "0", "--auth-token-file", short])
        _ = try server.waitUntilListening()
        #expect(server.standardOutput.contains(" warn topchrome: --auth-token-file: the token in '\(short)' is 1 characters"),
                "\(server.standardOutput)")
        let longServer = try RunningServer(["--port", "0", "--auth-token-file", long])
        _ = try longServer.waitUntilListening()
        #expect(!longServer.standardOutput.contains(" warn "), "\(longServer.standardOutput)")
    }

    /// A JWKS is read as a start reads it: its keys are named, and a set
    /// that cannot be trusted (an HMAC secret of 6 bytes) is exit 2.
    @Test func tokenKeysAreReadAsAStartReadsThem() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("good.json").path, weak = folder.appendingPathComponent("weak.json").path
        try #"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},{"kty":"oct","kid":"b","k":"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"}]}"#
            .write(toFile: good, atomically: true, encoding: .utf8)
        try #"{"keys":[{"kty":"oct","k":"c2hvcnQ"}]}"#.write(toFile: weak, atomically: true, encoding: .utf8)
        let read = try Self.check(["--token-keys", good])
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output.contains("access token keys: 2 keys (EdDSA, HS256)"), "\(read.output)")
        let refused = try Self.check(["--token-keys", weak])
        #expect(refused.status == 2)
        #expect(refused.errors.contains("--token-keys"), "\(refused.errors)")
    }

    /// The cut-off file holds one time, as `--tokens-not-before` takes it
    /// (an editor's final newline aside); anything else, or both ways of
    /// setting the cut-off at once, is exit 2 naming the option.
    @Test func aCutOffFileHoldsOneTime() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let keys = folder.appendingPathComponent("keys.json").path, cutOff = folder.appendingPathComponent("cut-off").path
        try #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#
            .write(toFile: keys, atomically: true, encoding: .utf8)
        try " 1800000000\n".write(toFile: cutOff, atomically: true, encoding: .utf8)
        let read = try Self.check(["--token-keys", keys, "--tokens-not-before-file", cutOff])
        #expect(read.status == 0, "\(read.errors)")
        let both = try Self.check(["--token-keys", keys, "--tokens-not-before-file", cutOff, "--tokens-not-before", "1800000000"])
        #expect(both.status == 2)
        #expect(both.errors.contains("--tokens-not-before-file"), "\(both.errors)")
        for bad in ["", "tomorrow", "-1", "1800000000 1800000001"] {
            try "\(bad)\n".write(toFile: cutOff, atomically: true, encoding: .utf8)
            let refused = try Self.check(["--token-keys", keys, "--tokens-not-before-file", cutOff])
            #expect(refused.status == 2, "'\(bad)'")
            #expect(refused.errors.contains("--tokens-not-before-file"), "\(refused.errors)")
        }
    }

    /// The minting key is read as a start reads it: named by its kid, and a
    /// private key of another kind (the TLS key), no key at all, or a key
    /// without the global token that alone mints is exit 2.
    @Test func aSigningKeyMustBeAnEd25519PrivateKey() throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        defer { try? FileManager.default.removeItem(at: pki.directory) }
        let good = pki.directory.appendingPathComponent("signing.pem").path, notPEM = pki.directory.appendingPathComponent("text").path
        try TokenMintingLiveTests.pem(seed: 7).write(toFile: good, atomically: true, encoding: .utf8)
        try "not a key\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let token = pki.directory.appendingPathComponent("token").path
        try "admin-token-0123456789abcdef0123456\n".write(toFile: token, atomically: true, encoding: .utf8)
        let read = try Self.check(["--token-signing-key", good, "--token-max-ttl", "120", "--auth-token-file", token])
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output.contains("token signing key: Ed25519, kid ed25519-"), "\(read.output)")
        let alone = try Self.check(["--token-signing-key", good])
        #expect(alone.status == 2)
        #expect(alone.errors.contains("--auth-token-file"), "\(alone.errors)")
        for bad in ["\(pki.directory.path)/server.key", notPEM] {
            let refused = try Self.check(["--token-signing-key", bad, "--auth-token-file", token])
            #expect(refused.status == 2, "\(bad)")
            #expect(refused.errors.contains("--token-signing-key"), "\(refused.errors)")
        }
    }

    /// TLS files are loaded as the server would load them: a key that does
    /// not belong to the certificate is found now, not at the next start.
    @Test func tlsFilesThatCannotServeExit2() throws {
        let pki = try AccessLiveTests.ThrowawayPKI()
        defer { try? FileManager.default.removeItem(at: pki.directory) }
        let folder = pki.directory.path
        let good = try Self.check(["--tls-cert", "\(folder)/server.pem", "--tls-key", "\(folder)/server.key"])
        #expect(good.status == 0, "\(good.errors)")
        #expect(good.output.contains("ok: TLS: the certificate and key can serve HTTPS"), "\(good.output)")
        let mismatched = try Self.check(["--tls-cert", "\(folder)/server.pem", "--tls-key", "\(folder)/ca.key"])
        #expect(mismatched.status == 2)
        #expect(mismatched.errors.contains("topchrome check-config: the TLS certificate and key cannot serve HTTPS: the key does not belong to the certificate"),
                "\(mismatched.errors)")
    }

    /// The state file as a start reads it: well formed, within
    /// --max-sessions, in a folder that takes snapshots.
    @Test func theStateFileIsReadAsAStartReadsIt() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("state.jsonl").path
        // Two sessions, written by a server's stop.
        let server = try RunningServer(["--port", "0", "--state-file", path, "--log-level", "warn"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        for _ in 0..<2 { #expect(try client.request("POST", "/v1/sessions").status == 201) }
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 5) == 0)

        let fits = try Self.check(["--state-file", path])
        #expect(fits.status == 0, "\(fits.errors)")
        #expect(fits.output.contains("ok: state file '\(path)': 2 sessions"), "\(fits.output)")
        let tooMany = try Self.check(["--state-file", path, "--max-sessions", "1"])
        #expect(tooMany.status == 2)
        // Named by what it holds and the limit, not at a "line 0".
        #expect(tooMany.errors.contains("holds 2 sessions, more than --max-sessions 1"), "\(tooMany.errors)")
        #expect(!tooMany.errors.contains("line"), "\(tooMany.errors)")

        let corrupt = folder.appendingPathComponent("corrupt.jsonl").path
        try "not a state file\n".write(toFile: corrupt, atomically: true, encoding: .utf8)
        let unreadable = try Self.check(["--state-file", corrupt])
        #expect(unreadable.status == 2)
        #expect(unreadable.errors.contains(corrupt), "\(unreadable.errors)")

        let nowhere = try Self.check(["--state-file", folder.appendingPathComponent("no/such/folder/state.jsonl").path])
        #expect(nowhere.status == 2)
        #expect(nowhere.errors.contains("cannot take a file"), "\(nowhere.errors)")
    }

    /// A Redis store must answer PING (after AUTH with the password file):
    /// a refused password is configuration (2); no answer at all may be an
    /// outage, and has a code of its own (3).
    @Test func aRedisStoreIsAskedToAnswer() throws {
        let redis = try RedisServer(["--requirepass", "right-password"])
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let right = folder.appendingPathComponent("right").path
        let wrong = folder.appendingPathComponent("wrong").path
        try "right-password\n".write(toFile: right, atomically: true, encoding: .utf8)
        try "wrong-password\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        let store = "redis://127.0.0.1:\(redis.port)"

        let answered = try Self.check(["--store", store, "--redis-password-file", right])
        #expect(answered.status == 0, "\(answered.errors)")
        #expect(answered.output.contains("ok: Redis 127.0.0.1:\(redis.port): answered PING after AUTH"), "\(answered.output)")

        for password in [[], ["--redis-password-file", wrong]] {
            let refused = try Self.check(["--store", store] + password)
            #expect(refused.status == 2, "\(password)")
            #expect(refused.errors.contains("Redis 127.0.0.1:\(redis.port) refused the connection: "), "\(refused.errors)")
        }

        let port = try LoopbackListener.freePort()
        let away = try Self.check(["--store", "redis://127.0.0.1:\(port)", "--redis-timeout", "0.5"])
        #expect(away.status == 3, "\(away.errors)")
        #expect(away.errors.contains("Redis 127.0.0.1:\(port) could not be reached ("), "\(away.errors)")
        #expect(away.output.contains("the configuration is valid, but the Redis store did not answer"), "\(away.output)")

        // One seed of two away while the other answers: the client finds the
        // nodes from either, so it is a warning, not an outage.
        let oneOfTwo = try Self.check(["--store", "redis://127.0.0.1:\(port),127.0.0.1:\(redis.port)", "--redis-password-file", right,
                                       "--redis-timeout", "0.5"])
        #expect(oneOfTwo.status == 0, "\(oneOfTwo.errors)")
        #expect(oneOfTwo.errors.contains("warning: Redis 127.0.0.1:\(port) could not be reached"), "\(oneOfTwo.errors)")
    }

    /// A sentinel that wants a password says so, and it is configuration
    /// to fix, not a Redis away.
    @Test
    func aSentinelThatWantsAPasswordSaysSo() throws {
        let sentinel = try RedisServer(["--requirepass", "sentinel-password"])
        let refused = try Self.check(["--store", "redis-sentinel://127.0.0.1:\(sentinel.port)/mymaster"])
        #expect(refused.status == 2, "\(refused.output) \(refused.errors)")
        #expect(refused.errors.contains("NOAUTH") && !refused.errors.contains("connectionLost"), "\(refused.errors)")
    }

    /// What to check follows from why Redis refused: the password, or the
    /// TLS part that failed.
    @Test(arguments: [
        ("WRONGPASS invalid username-password pair or user is disabled.", "--redis-password-file"),
        ("TLS: the certificate of redis.internal was refused: hostname mismatch", "that --store names the server as its certificate does"),
        ("TLS: the certificate of 10.0.0.5 was refused: IP address mismatch", "that --store names the server as its certificate does"),
        ("TLS: the certificate of redis.internal was refused: unable to get local issuer certificate", "--redis-ca-file"),
        ("TLS read: error:0A00045C:SSL routines::tlsv13 alert certificate required", "--redis-cert and --redis-key"),
    ])
    func aRefusalSaysWhatToCheck(_ reason: String, _ advice: String) {
        #expect(RedisRefusalAdvice.check(reason).contains(advice))
    }
}
