import FoundationEssentials
import MicroHTTPD

/// How the server listens and treats its connections: where, on how many
/// threads, how long a connection or a request may take, and which peers
/// and web pages it trusts.
public struct HTTPSettings: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var threads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// Seconds a graceful stop waits for in-flight requests.
    public var shutdownTimeout = 10.0
    /// Seconds an idle connection is kept open; 0 = forever.
    public var idleTimeout = 60
    /// Seconds a request's head and body may take to arrive; past them 408.
    public var requestTimeout = 10.0
    /// Bytes per connection for the request line and headers (larger get 431).
    public var connectionMemory = 8192
    /// Proxies whose `X-Forwarded-For` names the client in the access log.
    public var trustedProxies: [AddressRange] = []
    /// Origins of web pages allowed to call the API from a browser (CORS),
    /// as browsers send them (`https://app.example.com`); none by default.
    public var corsOrigins: [String] = []

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "host", placeholder: "ADDR", help: "Address to listen on (default {default}).", default: { $0.http.host }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard !value.isEmpty else { throw .init(description: "\(source) must not be empty") }
            config.http.host = value
        },
        .number("port", "N", help: "TCP port, 0 for any free one (default {default}).", \.http.port, in: 0...65_535),
        .number("threads", "N", help: "Threads answering requests (default: cores).", \.http.threads, in: 1...256, showsDefault: false),
        .number("shutdown-timeout", "S", help: "Seconds a graceful stop waits for requests (default {default}).", \.http.shutdownTimeout, in: 0...3600),
        .number("idle-timeout", "S", help: "Seconds an idle connection stays open; 0 = forever (default {default}).", \.http.idleTimeout, in: 0...86_400),
        .number("request-timeout", "S", help: "Seconds a request's head and body may take to arrive, else 408 and the connection closes; 0 = no limit (default {default}).",
                \.http.requestTimeout, in: 0...3600),
        .number("connection-memory", "B", help: "Bytes per connection for request line and headers; more gets 431 (default {default}).",
                \.http.connectionMemory, in: 4096...(1 << 20)),
        .init(name: "trusted-proxy", placeholder: "CIDR", help: "Log the client X-Forwarded-For names when the peer is in CIDR, and exempt the peer from --max-connections-per-ip (repeatable, or comma-separated).") { value, source, config throws(ServiceConfiguration.UsageError) in
            for text in value.split(separator: ",", omittingEmptySubsequences: false) {
                guard let range = AddressRange(text) else {
                    throw .init(description: "\(source) must be addresses or CIDR blocks (10.0.0.0/8, ::1), comma-separated, not '\(text)'")
                }
                config.http.trustedProxies.append(range)
            }
        },
        .init(name: "cors-origin", placeholder: "ORIGIN", help: "Let web pages from ORIGIN (scheme://host[:port]) call the API from a browser; repeatable (the variable: a list separated by commas or spaces).") { value, source, config throws(ServiceConfiguration.UsageError) in
            for origin in try ServiceConfiguration.crossOrigins(value, source) where !config.http.corsOrigins.contains(origin) {
                config.http.corsOrigins.append(origin)
            }
        },
    ]
}

extension ServiceConfiguration {
    /// The HTTP server's configuration: the listener, its limits and TLS.
    public var httpServer: HTTPServerConfiguration {
        var server = HTTPServerConfiguration()
        server.host = http.host
        server.port = http.port
        server.threads = http.threads
        server.maxBodyBytes = limits.maxBodyBytes
        server.connectionTimeoutSeconds = http.idleTimeout
        server.maxConnections = limits.maxConnections
        server.connectionMemoryBytes = http.connectionMemory
        server.maxConnectionsPerAddress = limits.maxConnectionsPerIP
        server.requestTimeout = http.requestTimeout > 0 ? .milliseconds(Int((http.requestTimeout * 1000).rounded())) : nil
        server.trustedProxies = TrustedProxies(http.trustedProxies)
        server.tls = tls.credentials
        server.tlsPriorities = tls.priorities
        return server
    }
}
