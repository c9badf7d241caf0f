import CMicroHTTPD
import Synchronization

/// An answer that hands the connection to another protocol (101 Switching
/// Protocols, e.g. WebSocket): once libmicrohttpd has sent it, `upgraded`
/// is given the socket and owns it. `headers` are the protocol's (`Upgrade`,
/// `Sec-WebSocket-Accept`); libmicrohttpd adds `Connection: Upgrade`.
public struct UpgradeResponse: Sendable {
    public var headers: HTTPHeaders
    /// See ``MicroHTTPDResponse/endpoint``.
    public var endpoint: Int?
    /// Called once, on the server's thread: it must not block (hand the
    /// socket to the protocol's own event loop).
    public var upgraded: @Sendable (UpgradedSocket) -> Void

    public init(headers: HTTPHeaders, upgraded: @escaping @Sendable (UpgradedSocket) -> Void) {
        self.headers = headers
        self.upgraded = upgraded
    }
}

/// A connection after a 101: its descriptor to read and write, non-blocking (with TLS, one
/// end of a socketpair libmicrohttpd relays), and the bytes the client sent
/// after its request that libmicrohttpd had already read. libmicrohttpd
/// still owns the descriptor: it is closed through ``close()``, once, and
/// never with close(2).
public final class UpgradedSocket: @unchecked Sendable {
    public let descriptor: Int32
    /// The TCP socket to the client: `descriptor` itself, or under TLS the
    /// one libmicrohttpd relays to.
    let networkDescriptor: Int32
    public let bytesAlreadyRead: [UInt8]
    /// libmicrohttpd's handle for the connection: valid until the close.
    private let handle: OpaquePointer
    private let closed = Atomic<Bool>(false)

    init(descriptor: Int32, networkDescriptor: Int32, bytesAlreadyRead: [UInt8], handle: OpaquePointer) {
        self.descriptor = descriptor
        self.networkDescriptor = networkDescriptor
        self.bytesAlreadyRead = bytesAlreadyRead
        self.handle = handle
    }

    /// Closes the socket and ends the connection; later calls do nothing.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = CMHD_upgrade_close(handle)
    }
}

/// libmicrohttpd's upgrade handler: the answer's `upgraded` was kept in the
/// connection's context, which is alive until the connection completes.
let upgradeConnection: MHD_UpgradeHandler = { _, connection, contextPointer, extra, extraCount, socket, handle in
    guard let contextPointer, let handle else { return }
    // What follows an upgrade is small messages both ways (a WebSocket's
    // state, then its answer): with Nagle's rule the second waits for the
    // client's delayed ACK, 40 ms a message.
    let network = connection.map { CMHD_connection_descriptor($0) } ?? socket
    var noDelay: Int32 = 1
    setsockopt(network, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
    let context = contextPointer.assumingMemoryBound(to: RequestContext.self)
    guard let upgraded = context.pointee.upgraded else {
        _ = CMHD_upgrade_close(handle)
        return
    }
    context.pointee.upgraded = nil
    let already = extra.map { Array(UnsafeRawBufferPointer(start: $0, count: extraCount)) } ?? []
    upgraded(UpgradedSocket(descriptor: socket, networkDescriptor: network, bytesAlreadyRead: already, handle: handle))
}
