import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TopChromeClient
import TopChromeServer
import var TopChromeTesting.testTimeScale

/// A real TopChrome server in this process on a loopback port, which a test
/// can stop and start again on the same port (with the same state file).
final class TestServer: @unchecked Sendable {
    private let lock = NSLock()
    private var service: TopChromeService?
    private var configuration: ServiceConfiguration

    init(_ configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        var configuration = ServiceConfiguration()
        configuration.http.port = 0
        configuration.http.threads = 2
        configuration.logging.level = .warn
        configure(&configuration)
        self.configuration = configuration
        try start()
    }

    deinit { service?.stop() }

    var port: Int { lock.withLock { configuration.http.port } }
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func start() throws {
        let service = TopChromeService(configuration: lock.withLock { configuration })
        try service.start()
        lock.withLock {
            configuration.http.port = service.port
            self.service = service
        }
    }

    /// What SIGHUP does: files read again (the bearer token's among them).
    func reload() {
        lock.withLock { service }?.reload()
    }

    /// Changes what the next `start()` starts with.
    func reconfigure(_ change: (inout ServiceConfiguration) -> Void) {
        lock.withLock { change(&configuration) }
    }

    /// A graceful stop: streams end, the state file is written.
    func stop() {
        let service = lock.withLock { () -> TopChromeService? in
            defer { self.service = nil }
            return self.service
        }
        service?.stop()
    }

    /// A client that retries quickly, so that tests do not wait out real
    /// backoffs, and gives a report up after 5 s rather than two minutes: a
    /// session left retrying when its test ends (its server stopped) must
    /// be done before the test process exits. A report body still on the
    /// wire then is taken for a leak by LeakSanitizer (a `Data`'s storage
    /// pointer carries its enum's tag bits, which it cannot follow). Tests
    /// of a longer outage say how long they need.
    func client(_ adjust: (inout ChromeService.Configuration) -> Void = { _ in }) -> ChromeService {
        var configuration = ChromeService.Configuration()
        configuration.retry = RetryPolicy(initialDelay: 0.02, maximumDelay: 0.1, maximumAttempts: 50, maximumRetryAfter: 0.1)
        configuration.requestTimeout = 10
        configuration.reportRetention = 5
        adjust(&configuration)
        return ChromeService(baseURL: url, bearerToken: nil, configuration: configuration)
    }

    /// The same client, its bearer token from `tokens` (see `ChromeService.init(baseURL:tokens:)`).
    func client(tokens: @escaping @Sendable (_ refused: String?) async throws -> String?) -> ChromeService {
        ChromeService(baseURL: url, configuration: client().configuration, tokens: tokens)
    }

    /// The requests answered so far for `method` and `route`, by the server's
    /// own count (`/metrics`), with `status` or with any.
    func requests(_ method: String, _ route: String, status: Int? = nil) async throws -> Int {
        let prefix = #"topchrome_http_requests_total{method="\#(method)",route="\#(route)",status=""#
        return try await metrics().split(separator: "\n").reduce(0) { total, line in
            guard line.hasPrefix(prefix) else { return total }
            let rest = line.dropFirst(prefix.count)
            if let status, !rest.hasPrefix("\(status)\"") { return total }
            return total + (Int(rest.split(separator: " ").last ?? "") ?? 0)
        }
    }

    /// A gauge of `/metrics`, e.g. `topchrome_watchers`.
    func gauge(_ name: String) async throws -> Int? {
        try await metrics().split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    private func metrics() async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("metrics"))
        return String(decoding: data, as: UTF8.self)
    }
}

struct TimedOut: Error {}

/// Polls `condition` every 10 ms for up to `seconds` (times
/// `testTimeScale`): servers and streams act asynchronously, and every
/// wait in these tests is bounded.
func eventually(within seconds: Double = 30, isolation: isolated (any Actor)? = #isolation,
                _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds * testTimeScale)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return try await condition()
}

/// Runs `body`, or throws `TimedOut` after `seconds` (times `testTimeScale`).
func within<T: Sendable>(_ seconds: Double = 10, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * testTimeScale * 1_000_000_000))
            throw TimedOut()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// Reads a stream of states in the background and keeps what it saw.
final class StateRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [SessionState] = []
    private var ending: Result<Void, any Error>?
    private var task: Task<Void, Never>?

    init(_ states: AsyncThrowingStream<SessionState, any Error>) {
        let task = Task { [self] in
            do {
                for try await state in states { lock.withLock { seen.append(state) } }
                lock.withLock { ending = .success(()) }
            } catch {
                lock.withLock { ending = .failure(error) }
            }
        }
        lock.withLock { self.task = task }
    }

    var states: [SessionState] { lock.withLock { seen } }
    var versions: [UInt64] { states.map(\.version) }
    /// How the stream ended, if it has.
    var end: Result<Void, any Error>? { lock.withLock { ending } }

    func waitFor(within seconds: Double = 10, _ condition: ([SessionState]) -> Bool) async -> Bool {
        await eventually(within: seconds) { condition(states) }
    }

    func waitForEnd(within seconds: Double = 10) async -> Result<Void, any Error>? {
        _ = await eventually(within: seconds) { end != nil }
        return end
    }

    /// Cancels the reading task, as an app leaving the screen does.
    func cancel() { lock.withLock { task }?.cancel() }
}
