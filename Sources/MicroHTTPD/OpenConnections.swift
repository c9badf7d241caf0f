#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Locking

/// The connections libmicrohttpd holds, counted by client address, and the
/// policy that admits new ones: the server's, not the library's
/// (`MHD_OPTION_PER_IP_CONNECTION_LIMIT` and `MHD_OPTION_CONNECTION_LIMIT`
/// refuse silently, or leave clients waiting in the backlog), so that every
/// refusal is counted by its reason.
///
/// Admission reads the counts and the connection is counted when
/// libmicrohttpd reports it started (in the same thread, at once), so
/// with several threads the counts may pass a cap by one per other thread.
final class OpenConnections: @unchecked Sendable {
    private let lock = PthreadLock()
    private var members: [ObjectIdentifier: OpenConnection] = [:]
    /// Open connections by client block (an IPv6 address's /64 counts as one client).
    private var perAddress: [SubscriberBlock: Int] = [:]
    let counts: ConnectionCounts
    private let limits: HTTPServerConfiguration

    init(limits: HTTPServerConfiguration, counts: ConnectionCounts = ConnectionCounts()) {
        self.limits = limits
        self.counts = counts
    }

    /// The accept policy: whether a connection from `peer` may be set up.
    func admit(_ peer: UnsafePointer<sockaddr>?) -> Bool {
        let address = peer.flatMap(ClientAddress.init)
        let counted = address.flatMap { limits.trustedProxies.trusts($0) ? nil : $0.subscriberBlock }
        let refusal: ConnectionRefusal? = lock.withLock {
            if let counted, limits.maxConnectionsPerAddress > 0, perAddress[counted, default: 0] >= limits.maxConnectionsPerAddress {
                return .perAddressLimit
            }
            if let budget = limits.descriptorBudget, budget < limits.maxConnections, members.count >= budget {
                return .descriptorBudget
            }
            return members.count >= limits.maxConnections ? .connectionLimit : nil
        }
        guard let refusal else { return true }
        counts.count(refusal)
        return false
    }

    /// libmicrohttpd set up `connection`: it is counted until ``closed(_:)``.
    func opened(_ connection: OpaquePointer, isEncrypted: Bool) -> OpenConnection {
        let address = CMHD_client_address(connection).flatMap(ClientAddress.init)
        let counted = address.flatMap { limits.trustedProxies.trusts($0) ? nil : $0.subscriberBlock }
        let member = OpenConnection(descriptor: CMHD_connection_descriptor(connection), countedBlock: counted,
                                    isEncrypted: isEncrypted)
        lock.withLock {
            members[ObjectIdentifier(member)] = member
            if let counted { perAddress[counted, default: 0] += 1 }
        }
        counts.changeOpen(by: 1)
        return member
    }

    /// libmicrohttpd is closing the connection; its socket is still open
    /// until this returns, and the sweep touches sockets only under the
    /// same lock, so it never writes to a number that names another socket.
    func closed(_ member: OpenConnection) {
        lock.withLock {
            guard members.removeValue(forKey: ObjectIdentifier(member)) != nil else { return }
            if let counted = member.countedBlock {
                let remaining = perAddress[counted, default: 1] - 1
                perAddress[counted] = remaining > 0 ? remaining : nil
            }
        }
        counts.changeOpen(by: -1)
    }

    var count: Int { lock.withLock { members.count } }

    /// Notes when requests began (`now`, in the sweep's milliseconds) and
    /// answers 408 to those that began `timeout` milliseconds ago or more
    /// and are still not read whole. A connection waiting for its next
    /// request begins one when the kernel has received bytes on it since
    /// the last look.
    func sweep(now: Int, timeout: Int) {
        typealias Phase = OpenConnection.Phase
        var timedOut = 0
        lock.withLock {
            for member in members.values {
                let phase = member.phase.load(ordering: .relaxed)
                switch phase {
                case Phase.answering, Phase.timedOut:
                    continue
                case Phase.waitingUnmarked:
                    member.bytesMark = CMHD_bytes_received(member.descriptor)
                    _ = member.phase.compareExchange(expected: phase, desired: Phase.waiting, ordering: .relaxed)
                case Phase.waiting:
                    let received = CMHD_bytes_received(member.descriptor)
                    guard received != member.bytesMark else { continue }
                    member.bytesMark = received
                    _ = member.phase.compareExchange(expected: phase, desired: Phase.receivingSince + now, ordering: .relaxed)
                case Phase.headReceived:
                    _ = member.phase.compareExchange(expected: phase, desired: Phase.receivingSince + now, ordering: .relaxed)
                default:
                    guard now - (phase - Phase.receivingSince) >= timeout,
                          member.phase.compareExchange(expected: phase, desired: Phase.timedOut,
                                                       ordering: .acquiringAndReleasing).exchanged
                    else { continue }
                    Self.answerTimedOut(member)
                    timedOut += 1
                }
            }
        }
        for _ in 0..<timedOut { counts.count(.requestTimeout) }
    }

    /// 408 and the socket shut both ways: the client reads the answer, and
    /// libmicrohttpd, reading the end of the stream, closes the connection.
    /// Written past the library, which has written nothing for this request
    /// (its head or body is still being read). Over TLS only the shutdown.
    private static func answerTimedOut(_ member: OpenConnection) {
        if !member.isEncrypted {
            requestTimeoutAnswer.withUnsafeBytes {
                _ = send(member.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
        }
        shutdown(member.descriptor, Int32(SHUT_RDWR))
    }

    /// An RFC 9457 problem, as the API answers its own.
    private static let requestTimeoutAnswer: [UInt8] = {
        let body = #"{"type":"about:blank","title":"Request Timeout","status":408,"#
            + #""detail":"The request's head and body did not arrive within the time allowed."}"#
        return Array(("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n"
            + "Content-Type: application/problem+json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
    }()
}
