import Foundation
import Testing

/// The journal's promise, tried as an operator meets it: a client creates,
/// changes and deletes sessions at a steady rate, the server is killed
/// with SIGKILL at a random moment, and the restarted server must hold
/// every change acknowledged before the loss bound of `--fsync` — a second
/// with `everysec`, nothing with `always` — and no session whose delete
/// was acknowledged as long ago.
@Suite(.serialized) struct KillNineDrillTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    /// `everysec` flushes every second; a change waits at most that, plus
    /// the flush's own write and sync, and a timer that fires a little late.
    static let everysecBound = 1.5

    @Test func everysecLosesAtMostTheLastSecond() throws {
        let losses = try drill(policy: "everysec", kills: 20)
        let oldest = losses.map(\.age).max() ?? 0
        print("kill -9 drill, everysec: \(losses.count) acknowledged changes lost over 20 kills, the oldest \(oldest) s before its kill")
        #expect(oldest <= Self.everysecBound, "\(losses.filter { $0.age > Self.everysecBound })")
    }

    @Test func alwaysLosesNothingAcknowledged() throws {
        let losses = try drill(policy: "always", kills: 20)
        #expect(losses.isEmpty, "\(losses)")
    }

    /// An acknowledged change the restarted server did not have.
    struct Loss: CustomStringConvertible {
        var what: String
        /// Seconds between its acknowledgement and the kill.
        var age: Double
        var description: String { "\(what), acknowledged \(age) s before the kill" }
    }

    /// What the client was told, per session: its acknowledged seqs with
    /// when, and when its create and delete were answered.
    final class Model: @unchecked Sendable {
        let lock = NSLock()
        var acknowledged: [String: [(seq: Int, at: Date)]] = [:]
        var created: [String: Date] = [:]
        var deleted: [String: Date] = [:]
        /// Deletes sent: one cut off by the kill may or may not have been done.
        var deleting: Set<String> = []
        var nextSeq: [String: Int] = [:]
        var live: [String] = []
        var stop = false
    }

    func drill(policy: String, kills: Int) throws -> [Loss] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kill-drill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stateFile = folder.appendingPathComponent("state.jsonl").path
        let arguments = ["--port", "0", "--state-file", stateFile, "--fsync", policy, "--log-level", "warn"]
        var server = try RunningServer(arguments)
        _ = try server.waitUntilListening()
        var losses: [Loss] = []
        var random = SystemRandomNumberGenerator()
        var carried: [String: Int] = [:]
        var acknowledged = 0
        for _ in 0..<kills {
            let model = Model()
            for (id, seq) in carried {
                model.live.append(id)
                model.nextSeq[id] = seq + 1
                model.created[id] = .distantPast
            }
            let done = DispatchSemaphore(value: 0)
            let port = server.port
            Thread { load(port: port, model: model); done.signal() }.start()
            usleep(UInt32.random(in: 400_000...1_600_000, using: &random))
            let killedAt = Date()
            server.signal(SIGKILL)
            _ = server.waitForExit(within: 10)
            model.lock.withLock { model.stop = true }
            done.wait()

            server = try RunningServer(arguments)
            let line = try server.waitUntilListening()
            #expect(line.contains("last_stop=unclean"), "\(line)")
            // The start folded the journal into the snapshot before listening.
            let restored = try Self.lastSeqs(in: stateFile)
            losses += model.lock.withLock { Self.losses(model, restored, killedAt: killedAt) }
            acknowledged += model.lock.withLock { model.acknowledged.values.map(\.count).reduce(model.created.count + model.deleted.count, +) }
            carried = restored
        }
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        #expect(acknowledged > kills * 50, "the load ran")
        return losses
    }

    /// Every acknowledged change that `restored` lacks, with its age at the kill.
    static func losses(_ model: Model, _ restored: [String: Int], killedAt: Date) -> [Loss] {
        var losses: [Loss] = []
        for (id, at) in model.deleted where restored[id] != nil {
            losses.append(Loss(what: "the delete of \(id) came back", age: killedAt.timeIntervalSince(at)))
        }
        for (id, at) in model.created where !model.deleting.contains(id) {
            guard let kept = restored[id] else {
                losses.append(Loss(what: "session \(id) is gone", age: killedAt.timeIntervalSince(at)))
                continue
            }
            if let lost = model.acknowledged[id]?.first(where: { $0.seq > kept }) {
                losses.append(Loss(what: "session \(id) is back at seq \(kept), acknowledged \(lost.seq)",
                                   age: killedAt.timeIntervalSince(lost.at)))
            }
        }
        return losses
    }

    /// Creates, reports to and deletes sessions at a steady ~300 operations
    /// a second until the server goes away.
    func load(port: Int, model: Model) {
        guard let client = try? TestHTTPClient(port: port) else { return }
        var random = SystemRandomNumberGenerator()
        while !model.lock.withLock({ model.stop }) {
            let started = Date()
            let (live, choice) = model.lock.withLock { (model.live, Int.random(in: 0..<100, using: &random)) }
            do {
                if live.count < 20 || choice < 15 {
                    let response = try client.request("POST", "/v1/sessions")
                    guard response.status == 201, let id = try response.json["id"] as? String else { return }
                    model.lock.withLock {
                        model.created[id] = Date()
                        model.live.append(id)
                        model.nextSeq[id] = 1
                    }
                } else if choice < 22 {
                    let id = live.randomElement(using: &random)!
                    model.lock.withLock { _ = model.deleting.insert(id) }
                    let response = try client.request("DELETE", "/v1/sessions/\(id)")
                    guard response.status == 204 else { return }
                    model.lock.withLock {
                        model.deleted[id] = Date()
                        model.live.removeAll { $0 == id }
                    }
                } else {
                    let id = live.randomElement(using: &random)!
                    let seq = model.lock.withLock { model.nextSeq[id, default: 1] }
                    model.lock.withLock { model.nextSeq[id] = seq + 1 }
                    let offset = seq % 2 == 0 ? 0 : 600
                    let response = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset), "seq": \#(seq)}"#)
                    guard response.status == 200 else { return }
                    model.lock.withLock { model.acknowledged[id, default: []].append((seq, Date())) }
                }
            } catch {
                return
            }
            let spent = Date().timeIntervalSince(started)
            if spent < 0.003 { usleep(UInt32((0.003 - spent) * 1e6)) }
        }
    }

    /// Each session's last seq in the state file (0 for none).
    static func lastSeqs(in path: String) throws -> [String: Int] {
        var seqs: [String: Int] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").dropFirst() {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            seqs[try #require(object["id"] as? String)] = object["lastSeq"] as? Int ?? 0
        }
        return seqs
    }
}
