import Foundation
import Redis

#if canImport(Glibc)
import Glibc
#endif
import TopChromeTesting

/// Why a test could not start its Redis.
public struct RedisTestSetupError: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

/// A real `redis-server` on a free loopback port, in its own temporary
/// directory, killed when stopped or released (and at exit, should a test
/// leave one behind).
public final class RedisServer: @unchecked Sendable {
    public static let executable = "/usr/bin/redis-server"

    public let port: Int
    public let directory: URL
    private var arguments: [String]
    /// Serves TLS only, with this PKI's server certificate.
    public let pki: TestPKI?
    /// Before the options: a sentinel's configuration file and `--sentinel`.
    private var leading: [String] = []
    private let lock = NSLock()
    private var process: Process?
    /// The ports of a stopped server, kept from others until it restarts.
    private var heldPorts: [Int32] = []

    /// Starts a server with `arguments` added to the test defaults (no
    /// persistence, loopback only), on a free port. A cluster node also gets
    /// a free port for its cluster bus (by default port + 10000, which is
    /// past 65535 for the high ports the kernel hands out).
    /// With `tls`, the port is a TLS port (`--tls-port`, `--port 0`) that
    /// verifies client certificates from the PKI's CA when given one.
    /// With `sentinelConfiguration`, a sentinel (`redis-server FILE
    /// --sentinel`) that starts from those lines, in a file it may rewrite.
    public init(_ arguments: [String] = [], clusterNode: Bool = false, tls: TestPKI? = nil,
                sentinelConfiguration: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw RedisTestSetupError(description: "\(Self.executable) is missing: run scripts/install-deps.sh --test (installs redis-server and redis-tools)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.arguments = arguments
        pki = tls
        if let tls {
            self.arguments += ["--tls-cert-file", tls.serverCertificate, "--tls-key-file", tls.serverKey,
                               "--tls-ca-cert-file", tls.caFile, "--tls-auth-clients", "optional"]
        }
        if let sentinelConfiguration {
            let file = directory.appendingPathComponent("sentinel.conf")
            try Data(sentinelConfiguration.utf8).write(to: file)
            leading = [file.path, "--sentinel"]
        }
        if clusterNode {
            self.arguments += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", String(try LoopbackListener.freePort())]
        }
        // Redis has no `--port 0`: take a port the kernel just handed out,
        // and take another if someone else grabbed it meanwhile.
        var lastError: Error?
        for _ in 0..<5 {
            let candidate = try LoopbackListener.freePort()
            do {
                process = try Self.launch(port: candidate, directory: directory,
                                          arguments: Self.portArguments(candidate, tls: tls != nil) + self.arguments, leading: leading)
                port = candidate
                return
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    private static func portArguments(_ port: Int, tls: Bool) -> [String] {
        tls ? ["--port", "0", "--tls-port", String(port)] : ["--port", String(port)]
    }

    /// `redis-cli` to this server (over TLS when it serves TLS).
    @discardableResult
    public func cli(_ arguments: [String]) throws -> String {
        let tls = pki.map { ["--tls", "--cacert", $0.caFile] } ?? []
        return try redisCLI(tls + ["-h", "127.0.0.1", "-p", String(port)] + arguments)
    }

    deinit {
        stop()
        releasePorts()
        try? FileManager.default.removeItem(at: directory)
    }

    public var node: RedisNode { RedisNode(host: "127.0.0.1", port: port) }

    public var pid: Int32? { lock.withLock { process?.processIdentifier } }

    /// Starts the server again on the same port, with the same files.
    public func restart() throws {
        let process = try Self.launch(port: port, directory: directory, arguments: Self.portArguments(port, tls: pki != nil) + arguments,
                                      leading: leading)
        lock.withLock { self.process = process }
        releasePorts()
    }

    /// Kills the server at once (`kill -9`): no goodbye to its clients or cluster.
    public func stop() {
        guard let process = lock.withLock({ () -> Process? in defer { self.process = nil }; return self.process }) else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
        RunningServers.forget(process.processIdentifier)
        holdPorts()
    }

    /// While a server is down, a port the kernel hands out (to a server
    /// another test starts, here or in another process) could be its own,
    /// and its restart would find it taken. A socket bound to it with
    /// SO_REUSEADDR, never listening, keeps the kernel from handing it out
    /// and lets Redis (which also sets SO_REUSEADDR) bind it again.
    private func holdPorts() {
        var ports = [port]
        if let flag = arguments.firstIndex(of: "--cluster-port"), let bus = Int(arguments[flag + 1]) { ports.append(bus) }
        let sockets = ports.compactMap(Self.hold)
        lock.withLock { heldPorts += sockets }
    }

    private func releasePorts() {
        for socket in lock.withLock({ () -> [Int32] in defer { heldPorts = [] }; return heldPorts }) { close(socket) }
    }

    private static func hold(_ port: Int) -> Int32? {
        boundLoopbackSocket(port: port, reuseAddress: true)
    }

    public func signal(_ signal: Int32) {
        if let pid { kill(pid, signal) }
    }

    private static func launch(port: Int, directory: URL, arguments: [String], leading: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = leading + [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", directory.path, "--logfile", "redis.log",
        ] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        RunningServers.remember(process.processIdentifier)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if !process.isRunning {
                RunningServers.forget(process.processIdentifier)
                let log = (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
                throw RedisTestSetupError(description: "redis-server on port \(port) exited: \(log.suffix(500))")
            }
            if acceptsConnections(port: port) { return process }
            usleep(10_000)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
        RunningServers.forget(process.processIdentifier)
        throw RedisTestSetupError(description: "redis-server on port \(port) did not listen within 10 s")
    }
}

/// The servers still running, killed when the test process exits: the
/// shared cluster lives as long as the test run, and nothing may outlive it.
enum RunningServers {
    nonisolated(unsafe) private static var pids = Set<Int32>()
    private static let lock = NSLock()
    private static let registered: Void = {
        atexit {
            RunningServers.lock.withLock {
                for pid in RunningServers.pids { kill(pid, SIGKILL) }
            }
        }
    }()

    static func remember(_ pid: Int32) {
        _ = registered
        lock.withLock { _ = pids.insert(pid) }
    }

    static func forget(_ pid: Int32) {
        lock.withLock { _ = pids.remove(pid) }
    }
}

/// A TCP socket bound to 127.0.0.1:`port`, not listening; nil when the
/// port is taken.
public func boundLoopbackSocket(port: Int, reuseAddress: Bool) -> Int32? {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { return nil }
    var on: Int32 = reuseAddress ? 1 : 0
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { close(socket); return nil }
    return socket
}

/// Runs `redis-cli` and returns what it printed.
@discardableResult
public func redisCLI(_ arguments: [String]) throws -> String {
    let executable = "/usr/bin/redis-cli"
    guard FileManager.default.isExecutableFile(atPath: executable) else {
        throw RedisTestSetupError(description: "\(executable) is missing: run scripts/install-deps.sh --test (installs redis-server and redis-tools)")
    }
    let (status, text) = try Process.runToEnd(executable, arguments)
    guard status == 0 else {
        throw RedisTestSetupError(description: "redis-cli \(arguments.joined(separator: " ")) failed: \(text)")
    }
    return text
}

@discardableResult
public func redisCLI(port: Int, _ arguments: String...) throws -> String {
    try redisCLI(["-h", "127.0.0.1", "-p", String(port)] + arguments)
}

private func acceptsConnections(port: Int) -> Bool {
    guard let socket = try? connectedSocket(port: port) else { return false }
    close(socket)
    return true
}

/// Polls `condition` until it holds or `seconds` (times `testTimeScale`)
/// pass: servers and connections come and go asynchronously.
public func eventually(within seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds * testTimeScale)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A command deadline a test shortens so a silent server is noticed soon,
/// scaled like `eventually`: on a loaded machine or under a sanitizer, a
/// live server's answer can take longer than the bare figure, and would
/// read as a silence the test did not make.
public func timeScaled(_ duration: Duration) -> Duration {
    duration * testTimeScale
}

/// A counter the metrics hooks bump from I/O threads.
public final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    public init() {}

    public var value: Int { lock.withLock { count } }

    public func increment() {
        lock.withLock { count += 1 }
    }
}

/// Bytes waiting unread in the receive queues of the established TCP
/// connections to `port` on this machine (Linux's `/proc/net/tcp`): what a
/// stopped server has been sent and not yet read.
public func unreadBytes(atPort port: Int) -> Int {
    ["/proc/net/tcp", "/proc/net/tcp6"].reduce(0) { total, table in
        // Read to the end: /proc's files say they are empty.
        let text = FileHandle(forReadingAtPath: table).map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
        return total + text.split(separator: "\n").dropFirst().reduce(0) { sum, line in
            // sl local_address rem_address st tx_queue:rx_queue …
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[3] == "01",
                  let localPort = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }), localPort == port,
                  let unread = fields[4].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) else { return sum }
            return sum + unread
        }
    }
}
