import Foundation
import Testing
import TopChromeTesting

/// The executable under a small descriptor limit (`nofile` 128, hard 256,
/// which the server raises it to): thousands of event streams and long-polls are answered up to the
/// descriptor budget and refused past it, and the process never traps for
/// want of a descriptor. Before the budget it died with SIGILL (libdispatch
/// failing to open `/proc/<tid>/stat`) at a few hundred streams.
@Suite(.serialized) struct DescriptorBudgetLiveTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    static func startServer() throws -> RunningServer {
        let server = try RunningServer(["--port", "0", "--threads", "2", "--log-level", "warn",
                                        "--max-connections-per-ip", "0", "--max-watchers-per-session", "10000"],
                                       descriptorLimit: (128, 256))
        _ = try server.waitUntilListening()
        return server
    }

    /// `count` watchers, each sending its request; then, once the server
    /// has seen them all, those it closed are counted refused, the rest (a
    /// stream's head, a long-poll waiting, a 503 for too many watchers, or a
    /// close not yet seen) answered: the server's own count of refusals is
    /// the exact figure (``refusals(_:)``).
    static func flood(_ port: Int, _ count: Int, request: String, closeAtOnce: Bool) -> (answered: Int, refused: Int) {
        var clients: [TestHTTPClient] = []
        var refused = 0
        for _ in 0..<count {
            guard let client = try? TestHTTPClient(port: port), (try? client.send(raw: Array(request.utf8))) != nil else {
                refused += 1
                continue
            }
            if closeAtOnce { continue }  // released at once: the client closes
            clients.append(client)
        }
        // The kernel hands connections over in order: once a last one is
        // answered or closed, the server has looked at every one before it.
        if let probe = try? TestHTTPClient(port: port) {
            try? probe.send(raw: Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            _ = eventually(within: 10) { probe.hasPendingInput() }
        }
        var answered = 0
        for client in clients {
            // Closed, or reset (the request it sent was never read).
            if client.hasPendingInput(), (try? client.readHead()) == nil { refused += 1 } else { answered += 1 }
        }
        return (answered, refused)
    }

    /// Connections the server closed at once for want of descriptors, from `/metrics`.
    static func refusals(_ client: TestHTTPClient) -> Int {
        let prefix = "topchrome_connections_refused_total{reason=\"descriptor_budget\"} "
        guard let text = try? client.request("GET", "/metrics").text,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return -1 }
        return Int(line.dropFirst(prefix.count)) ?? -1
    }

    static func gauge(_ name: String, _ client: TestHTTPClient) -> Int {
        guard let text = try? client.request("GET", "/metrics").text,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }) else { return -1 }
        return Int(line.dropFirst(name.count + 1)) ?? -1
    }

    @Test func thousandsOfWatchersUnderADescriptorLimitOf256() throws {
        let server = try Self.startServer()
        let port = server.port
        let id = try TestHTTPClient(port: port).json("POST", "/v1/sessions", "{}").json["id"] as? String ?? ""
        let etag = try TestHTTPClient(port: port).request("GET", "/v1/sessions/\(id)").header("ETag") ?? ""
        let held = try TestHTTPClient(port: port)  // open before the flood
        #expect(try held.request("GET", "/healthz").status == 200)

        let stream = "GET /v1/sessions/\(id)/events HTTP/1.1\r\nHost: x\r\n\r\n"
        let poll = "GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nPrefer: wait=30\r\nIf-None-Match: \(etag)\r\n\r\n"
        for (request, closeAtOnce) in [(stream, false), (stream, true), (poll, false), (poll, true)] {
            let refusedBefore = Self.refusals(held)
            let outcome = Self.flood(port, 2000, request: request, closeAtOnce: closeAtOnce)
            print("nofile 256, 2,000 \(request.contains("events") ? "streams" : "long-polls")\(closeAtOnce ? " closed at once" : ""): \(outcome)")
            #expect(server.process.isRunning, "alive after 2,000 \(request.contains("events") ? "streams" : "long-polls")")
            if !closeAtOnce {
                #expect(outcome.answered > 50, "those within the budget are served: \(outcome)")
                // How many of the rest the server has turned away by now
                // depends on how fast the kernel hands them over (some wait
                // unaccepted, or for a SYN-ACK again): some are refused,
                // and the budget holds.
                #expect(eventually(within: 20) { Self.refusals(held) - refusedBefore > 0 },
                        "past the budget refused: \(outcome)")
                #expect(Self.gauge("topchrome_connections_open", held) <= Self.gauge("topchrome_connections_budget", held) + 2,
                        "no more open than the budget (and the two connections the test held before)")
            }
            #expect(try held.request("GET", "/healthz").status == 200, "a connection open before still served")
            // They left: new watchers are served again.
            #expect(eventually(within: 10) {
                guard let client = try? TestHTTPClient(port: port) else { return false }
                client.setReadTimeout(seconds: 2)
                return (try? client.send(raw: Array(stream.utf8))) != nil && (try? client.readHead().status) == 200
            })
        }
        let metrics = try held.request("GET", "/metrics").text
        #expect(metrics.contains("process_max_fds 256\n"), "the soft limit raised to the hard one")
        #expect(!metrics.contains("topchrome_connections_refused_total{reason=\"descriptor_budget\"} 0\n"))
        #expect(server.process.isRunning)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        #expect(server.log.contains("descriptor limit"), "the start says it serves fewer than configured")
    }
}
