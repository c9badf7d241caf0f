import Foundation
import class TopChromeTesting.LoopbackListener

/// A server on a loopback port that answers whatever it is sent with
/// `reply`, and keeps each connection open: a Redis gone wrong.
final class FakeRedis: Sendable {
    private let listener: LoopbackListener

    init(reply: [UInt8], host: String = "127.0.0.1") throws {
        listener = try LoopbackListener(host: host) { client in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(client, &buffer, buffer.count) > 0 {
                LoopbackListener.send(reply, on: client)
            }
        }
    }

    var port: Int { listener.port }

    /// Connections accepted so far.
    var accepted: Int { listener.accepted }
}
