/// How the server listens and what it tolerates from clients.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IP literal or a host name (`0.0.0.0` inside containers).
    public var host: String = "127.0.0.1"
    /// TCP port; 0 picks a free one, readable from ``HTTPServer/port`` after start.
    public var port: Int = 8080
    /// Threads answering requests, each with its own epoll loop. One per core
    /// is the fast choice: requests are short and never block.
    public var threads: Int = 1
    /// Bodies longer than this are read and discarded rather than buffered,
    /// so a huge upload cannot grow the server's memory.
    public var maxBodyBytes: Int = 65_536
    /// Seconds a connection may sit idle before it is closed, so idle or
    /// stalled clients cannot hold connections forever. 0 disables.
    public var connectionTimeoutSeconds: Int = 60
    /// Open connections from one client address at most; further ones are
    /// closed at once, so one client cannot take every connection. 0: no limit.
    /// Peers in ``trustedProxies`` are exempt (behind a load balancer every
    /// client has the balancer's address).
    public var maxConnectionsPerAddress: Int = 0
    /// Open connections at most; further ones are closed at once (and
    /// counted, ``ConnectionRefusal/connectionLimit``).
    public var maxConnections: Int = 10_000
    /// Connections the process's descriptors allow, when fewer than
    /// `maxConnections`: further ones are closed at once and counted
    /// apart (``ConnectionRefusal/descriptorBudget``). Running out of
    /// descriptors is no refusal but a crash: the runtime needs some too.
    public var descriptorBudget: Int?
    /// Time a request's head and body may take to arrive, from its first
    /// byte; past it the client gets 408 and the connection closes, so a
    /// client trickling a head cannot hold a connection (an idle timeout
    /// does not stop it: it is never idle). Nil: no limit.
    public var requestTimeout: Duration? = .seconds(10)
    /// Memory each connection may use for the request line, headers and
    /// the response head; headers that do not fit get 431. libmicrohttpd
    /// clears this area for every request and keeps it for every open
    /// stream, so it is kept small (its own default is 32 KiB).
    public var connectionMemoryBytes: Int = 8192
    /// Pending connections the kernel queues before accept.
    public var listenBacklog: Int32 = 1024
    /// Proxies whose `X-Forwarded-For` names the client in ``HTTPExchange/client``.
    public var trustedProxies = TrustedProxies()
    /// Serve HTTPS (through libmicrohttpd's GnuTLS) with these; nil serves plain HTTP.
    public var tls: TLSCredentials?
    /// What HTTPS handshakes may agree on (versions, key exchanges, ciphers).
    public var tlsPriorities = TLSPriorities.recommended

    public init() {}
}

/// A certificate chain and its private key, both PEM text.
public struct TLSCredentials: Sendable, Equatable {
    public var certificatePEM: String
    public var privateKeyPEM: String

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }
}
