#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A listening socket on a free loopback port, for a test that plays the
/// other end of a connection: a server that answers wrongly, too little,
/// or never.
///
/// Each connection is served on a thread of its own, which closes it once
/// `serve` returns. From outside, sockets are only shut down, never closed:
/// closed from outside, a socket's number could be another test's socket by
/// the time the thread next uses it.
public final class LoopbackListener: Sendable {
    public let port: Int
    private let sockets: Sockets

    /// `serve`: what is done with each connection (its socket), on a thread
    /// of its own; it ends when the listener stops, as reads then fail. Nil:
    /// connections are never accepted, so a client's connect succeeds (the
    /// backlog takes it) and its read waits. `host`: another address of
    /// 127.0.0.0/8 keeps out clients of other tests that still knock on a
    /// port of 127.0.0.1 the kernel has given this listener again.
    public init(host: String = "127.0.0.1", backlog: Int32 = 8, serve: (@Sendable (Int32) -> Void)?) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw LoopbackSocketError(call: "socket", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, backlog) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else {
            let error = LoopbackSocketError(call: "bind", errno: errno)
            close(listener)
            throw error
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        sockets = Sockets(listener: listener, accepting: serve != nil)
        guard let serve else { return }
        let sockets = sockets
        Thread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else {
                    sockets.close(listener)
                    return
                }
                guard sockets.admit(connection) else { continue }
                Thread {
                    serve(connection)
                    sockets.close(connection)
                }.start()
            }
        }.start()
    }

    /// Connections accepted so far.
    public var accepted: Int { sockets.lock.withLock { sockets.accepted } }

    /// Accepts no more connections and ends the open ones (their threads
    /// close them). Also done when the listener is released.
    public func stop() {
        sockets.stop()
    }

    deinit { sockets.stop() }

    /// A loopback port where nothing listens (taken, then let go).
    public static func freePort() throws -> Int {
        try LoopbackListener(serve: nil).port
    }

    /// Sends all of `bytes` on `connection`, as far as the peer takes them.
    public static func send(_ bytes: [UInt8], on connection: Int32) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// What the threads share with the test; not the listener itself,
    /// whose release stops them.
    private final class Sockets: @unchecked Sendable {
        let lock = NSLock()
        private var listener: Int32?
        private let accepting: Bool
        private var open: Set<Int32> = []
        var accepted = 0
        private var stopped = false

        init(listener: Int32, accepting: Bool) {
            self.listener = listener
            self.accepting = accepting
        }

        /// Counts a new connection; false, and closed, if the listener has stopped.
        func admit(_ connection: Int32) -> Bool {
            lock.withLock {
                accepted += 1
                guard !stopped else {
                    _ = Glibc.close(connection)
                    return false
                }
                open.insert(connection)
                return true
            }
        }

        /// Shuts every socket still open down; their threads then close
        /// them. A listener no thread waits on is closed here.
        func stop() {
            lock.withLock {
                guard !stopped else { return }
                stopped = true
                if let listener {
                    if accepting {
                        shutdown(listener, Int32(SHUT_RDWR))
                    } else {
                        _ = Glibc.close(listener)
                        self.listener = nil
                    }
                }
                for socket in open { shutdown(socket, Int32(SHUT_RDWR)) }
            }
        }

        func close(_ socket: Int32) {
            lock.withLock {
                if listener == socket { listener = nil } else { open.remove(socket) }
                _ = Glibc.close(socket)
            }
        }
    }
}
