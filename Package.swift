// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "TopChrome",
    // For the client library on Apple platforms (Observation); Linux ignores it.
    platforms: [.macOS(.v14), .iOS(.v17)],
    // What a package depending on this one sees: the client library, and
    // the core (shared by an app for local prediction). The server's own
    // libraries (MicroHTTPD, Redis) are targets, not products.
    products: [
        .executable(name: "topchrome", targets: ["topchrome"]),
        .library(name: "TopChromeCore", targets: ["TopChromeCore"]),
        .library(name: "TopChromeClient", targets: ["TopChromeClient"]),
        .executable(name: "topchrome-watch", targets: ["topchrome-watch"]),
    ],
    targets: [
        // The domain: state, rules, ids, reports and the store seam's
        // protocols (SessionStore, SessionChangeFeed, SessionSubscriber,
        // LaterAnswer), in the Swift standard library alone (no imports, no dependencies), so
        // that an app can link it. SourceBoundaryTests keep it so.
        .target(name: "TopChromeCore"),

        // Who watches which session, and how a change reaches them: every
        // store's subscriptions, and the outbox that tells watchers after
        // the store's lock is released.
        .target(name: "SessionWatching", dependencies: ["TopChromeCore", "Locking"]),

        // The store's side of an answer that comes later: the lock-guarded
        // PendingAnswer its I/O thread completes (the core's LaterAnswer).
        .target(name: "LaterAnswers", dependencies: ["TopChromeCore", "Locking"]),

        // What the rules did, counted across sessions and threads for /metrics.
        .target(name: "RuleStatistics", dependencies: ["TopChromeCore", "Locking"]),

        // Sessions in this process: sharded tables of packed slots, idle
        // expiry, changes told to watchers after a shard's lock is released.
        .target(name: "MemorySessionStore", dependencies: ["TopChromeCore", "SessionWatching", "RuleStatistics"]),

        // WebSocket (RFC 6455) as bytes: the opening handshake's checks and
        // accept value, a server's frame reader and the frame writer. No C,
        // no HTTP, so it is unit-tested and fuzzed as it is.
        .target(name: "WebSocketFrames"),

        // A strict RFC 8259 reader and a small writer for request and response bodies.
        .target(name: "StrictJSON"),

        // Sessions kept in a file across restarts, written atomically.
        .target(name: "SessionSnapshots", dependencies: ["TopChromeCore", "StrictJSON", "Locking"]),

        // Debian's libmicrohttpd, seen from Swift through a few C shims, and
        // the GnuTLS it does TLS with (the server hands it the certificate).
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev", "libgnutls28-dev"])]
        ),

        // State that threads share: one lock, a pthread mutex (see
        // PthreadLock.swift for why), and counters striped across threads.
        .target(name: "Locking"),

        // A small general HTTP/1.1 server over libmicrohttpd; knows nothing of TopChrome.
        .target(name: "MicroHTTPD", dependencies: ["CMicroHTTPD", "Locking", "WebSocketFrames"]),

        // Debian's hiredis (0.14), seen from Swift; connections and reply parsing.
        // No pkgConfig: hiredis.pc's only flag, -D_FILE_OFFSET_BITS=64, is one
        // SwiftPM drops with a warning; the headers are in /usr/include.
        .systemLibrary(
            name: "CHiredis",
            providers: [.apt(["libhiredis-dev"])]
        ),

        // Debian's OpenSSL (3.0), for `rediss://`: hiredis 0.14 has no TLS, so
        // the Redis client reads and writes through OpenSSL and hiredis only
        // parses the replies.
        .systemLibrary(
            name: "COpenSSL",
            providers: [.apt(["libssl-dev"])]
        ),

        // Access tokens: compact JWS with JWT claims, verified against a JWKS
        // (EdDSA, ES256, HS256 through libcrypto) and minted with Ed25519.
        // No HTTP in it: the API asks it what a token allows.
        .target(name: "AccessTokens", dependencies: ["COpenSSL", "StrictJSON"]),

        // A general Redis and Redis Cluster client over hiredis: pipelined
        // connections with deadlines and reconnection, slot routing, redirections.
        // Knows nothing of TopChrome.
        .target(name: "Redis", dependencies: ["CHiredis", "COpenSSL", "Locking"]),

        // The chrome's rules inside Redis, as a Redis Function library, and a
        // typed call for each function through the Redis client. What the
        // Redis session store is built on; held equal to ChromeRules by the
        // shared vectors in its tests.
        .target(
            name: "RedisSessionStore",
            dependencies: ["TopChromeCore", "SessionWatching", "LaterAnswers", "RuleStatistics", "Redis", "Locking"],
            exclude: ["topchrome.lua", "topchrome-rules.lua"],
            plugins: ["EmbedFunctionLibrary"]
        ),

        // The v1 API: routing, JSON in and out, problem details, watchers, /metrics.
        // Sees the store only through the core's SessionStore and SessionChangeFeed.
        .target(
            name: "TopChromeAPI",
            dependencies: ["TopChromeCore", "RuleStatistics", "MicroHTTPD", "StrictJSON", "Locking", "BuildInfo", "AccessTokens",
                           "WebSocketFrames"],
            plugins: ["EmbedOpenAPI"]
        ),

        // The commit the binary is built from, for --version and /metrics:
        // a module of its own, so a new commit recompiles only this.
        .target(name: "BuildInfo", plugins: ["EmbedBuildCommit"]),

        // The application's wiring: configuration, which store and how it is
        // set up, the state file, logs, and what runs periodically.
        .target(
            name: "TopChromeServer",
            dependencies: ["TopChromeAPI", "TopChromeCore", "SessionWatching", "RuleStatistics", "MemorySessionStore", "MicroHTTPD", "StrictJSON",
                           "SessionSnapshots", "Locking", "Redis", "RedisSessionStore", "BuildInfo", "AccessTokens"]
        ),

        // `make bench`: the memory store's cost per scroll report, without HTTP.
        .executableTarget(name: "TopChromeBench", dependencies: ["TopChromeCore", "MemorySessionStore"]),

        // Build-time only: compiles the top-level openapi.yaml into TopChromeAPI.
        .executableTarget(name: "EmbedFile"),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["EmbedFile"]),
        // Build-time only: compiles RedisSessionStore's topchrome.lua into it.
        .plugin(name: "EmbedFunctionLibrary", capability: .buildTool(), dependencies: ["EmbedFile"]),
        // Build-time only: writes the git commit into BuildInfo (runs git; "unknown" without it).
        .plugin(name: "EmbedBuildCommit", capability: .buildTool()),

        // The executable: read configuration, start, wait for a signal, stop.
        .executableTarget(name: "topchrome", dependencies: ["TopChromeServer"]),

        // Debian's libcurl, seen from Swift: the client reads event streams
        // with it on Linux (CurlEventStream.swift says why not URLSession).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),

        // The client library for apps: ordered, batched reports with retries,
        // the event stream with its reconnections, and the chrome predicted
        // by the core's rules until the service answers. Foundation (and
        // libcurl on Linux) and the core only: no server code.
        .target(
            name: "TopChromeClient",
            dependencies: ["TopChromeCore", .target(name: "CCurl", condition: .when(platforms: [.linux]))]
        ),

        // `topchrome watch URL ID`, run by `topchrome` as a separate program so
        // the server binary does not link the client's Foundation networking.
        .executableTarget(name: "topchrome-watch", dependencies: ["TopChromeClient"]),

        // libFuzzer targets over everything that reads untrusted bytes (Tests/scripts/fuzz.sh,
        // Fuzz/README.md). Built with -DFUZZING and libFuzzer + AddressSanitizer;
        // a plain build replays inputs through the same checks.
        .executableTarget(
            name: "TopChromeFuzz",
            dependencies: ["TopChromeServer", "TopChromeAPI", "TopChromeCore", "MemorySessionStore", "MicroHTTPD",
                           "StrictJSON", "SessionSnapshots", "TopChromeClient", "Redis", "RedisSessionStore", "TopChromeTesting",
                           "WebSocketFrames", "AccessTokens"]
        ),

        // What tests (and the fuzz harness) share: a loopback listener, a seeded
        // generator, the API asked in this process, a store that answers later.
        // No test framework in it, so the fuzz binary can link it.
        .target(name: "TopChromeTesting", dependencies: ["MicroHTTPD", "TopChromeCore", "LaterAnswers", "WebSocketFrames"]),
        // The API's contract as every transport's tests ask it: the API in
        // this process on either store path, and the checks of its answers.
        .target(name: "ContractTestSupport",
                dependencies: ["TopChromeTesting", "TopChromeAPI", "MemorySessionStore", "TopChromeCore"],
                path: "Tests/ContractTestSupport"),
        .testTarget(name: "TopChromeTestingTests",
                    dependencies: ["TopChromeTesting", "TopChromeCore", "TopChromeAPI", "MemorySessionStore"]),

        .testTarget(name: "TopChromeCoreTests", dependencies: ["TopChromeCore", "TopChromeTesting"]),
        .testTarget(name: "MemorySessionStoreTests",
                    dependencies: ["MemorySessionStore", "SessionWatching", "TopChromeCore", "TopChromeTesting"]),
        .testTarget(name: "StrictJSONTests", dependencies: ["StrictJSON"]),
        .testTarget(name: "WebSocketFramesTests", dependencies: ["WebSocketFrames"]),
        .testTarget(name: "AccessTokensTests", dependencies: ["AccessTokens", "StrictJSON", "COpenSSL", "TopChromeTesting"]),
        .testTarget(name: "SessionSnapshotsTests", dependencies: ["SessionSnapshots", "MemorySessionStore"]),
        .testTarget(name: "LockingTests", dependencies: ["Locking"]),
        .testTarget(name: "MicroHTTPDTests", dependencies: ["MicroHTTPD", "TopChromeTesting", "WebSocketFrames"]),
        // Real redis-server instances and clusters for tests, started and stopped by them.
        .target(name: "RedisTestSupport", dependencies: ["Redis", "TopChromeTesting"], path: "Tests/RedisTestSupport"),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "RedisTestSupport", "TopChromeTesting"]),
        .testTarget(
            name: "RedisSessionStoreTests",
            dependencies: ["RedisSessionStore", "TopChromeCore", "MemorySessionStore", "Redis", "RedisTestSupport",
                           "TopChromeTesting"]
        ),
        .testTarget(name: "TopChromeAPITests",
                    dependencies: ["TopChromeAPI", "RuleStatistics", "MemorySessionStore", "StrictJSON", "TopChromeCore", "TopChromeTesting",
                                   "COpenSSL", "ContractTestSupport"]),
        .testTarget(name: "TopChromeServerTests", dependencies: ["TopChromeServer", "TopChromeAPI", "StrictJSON", "TopChromeTesting"]),
        .testTarget(
            name: "LiveServerTests",
            dependencies: ["TopChromeServer", "TopChromeAPI", "TopChromeCore", "MemorySessionStore", "MicroHTTPD", "topchrome", "Redis",
                           "RedisTestSupport", "TopChromeTesting", "ContractTestSupport", "AccessTokens", "WebSocketFrames"]
        ),
        .testTarget(
            name: "TopChromeClientTests",
            dependencies: ["TopChromeClient", "TopChromeCore", "TopChromeServer", "topchrome", "topchrome-watch", "TopChromeTesting",
                           "AccessTokens"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
