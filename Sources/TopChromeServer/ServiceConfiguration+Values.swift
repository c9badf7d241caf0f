import Redis

/// How the values of options with a form of their own are read: the store's
/// address, and origins allowed to call from a browser.
extension ServiceConfiguration {
    /// `memory`, `redis://host:port[,host:port…]` (`rediss://` over TLS), or
    /// `redis-sentinel://host:port[,host:port…]/NAME` (the sentinels, and the
    /// master they watch; `rediss-sentinel://` over TLS to both): hosts may be names, or IPv6 addresses in
    /// brackets. Without brackets a colon in the host is refused, since
    /// `fe80::1` would read as host `fe80:`, port 1.
    static func storage(_ value: String, _ source: String) throws(UsageError) -> SessionStorage {
        if value == "memory" { return .memory }
        let sentinelForm = "redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME"
        if let scheme = ["redis-sentinel://", "rediss-sentinel://"].first(where: value.hasPrefix) {
            let rest = value.dropFirst(scheme.count)
            guard let slash = rest.lastIndex(of: "/") else {
                throw UsageError(description: "\(source): '\(value)' needs the name of the master the sentinels watch, as in \(value)/mymaster (the form is \(sentinelForm))")
            }
            let name = rest[rest.index(after: slash)...]
            // As Sentinel itself takes it: no spaces, since `+switch-master`
            // messages separate the name from the addresses by spaces.
            guard !name.isEmpty, name.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
                throw UsageError(description: "\(source): '\(name)' is not a master name Sentinel takes: printable, no spaces (the form is \(sentinelForm))")
            }
            let usage = UsageError(description: "\(source) must be \(sentinelForm), not '\(value)'")
            return .redis(.sentinels(try nodes(rest[..<slash], source, scheme: scheme, usage: usage), masterName: String(name),
                                     transport: scheme.hasPrefix("rediss") ? .tls : .plain))
        }
        let usage = UsageError(description: "\(source) must be memory or redis://HOST:PORT[,HOST:PORT...] (rediss:// over TLS, or \(sentinelForm)), not '\(value)'")
        guard let scheme = ["redis://", "rediss://"].first(where: value.hasPrefix) else { throw usage }
        return .redis(.seeds(try nodes(value.dropFirst(scheme.count), source, scheme: scheme, usage: usage),
                             transport: scheme == "rediss://" ? .tls : .plain))
    }

    /// `host:port[,host:port…]`, as `storage` takes it after the scheme.
    private static func nodes(_ list: Substring, _ source: String, scheme: String, usage: UsageError) throws(UsageError) -> [RedisNode] {
        var nodes: [RedisNode] = []
        for address in list.split(separator: ",", omittingEmptySubsequences: false) {
            // A host alone (`redis://h`, `redis://[::1]`): Redis has no port
            // a client may assume, so say which form is wanted.
            let inner = address.dropFirst().dropLast()
            let bracketed = address.first == "[" && address.last == "]" && inner.contains(":") && !inner.contains("[") && !inner.contains("]")
            let bare = !address.isEmpty && !address.contains(":") && !address.contains("[") && !address.contains("]")
            if bracketed || bare, address.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) && !"/@,".unicodeScalars.contains($0) }) {
                let example = scheme != "redis-sentinel://" ? "\(scheme)\(address):6379 (the form is \(scheme)HOST:PORT[,HOST:PORT...])"
                    : "redis-sentinel://\(address):26379/mymaster (the form is redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME)"
                throw UsageError(description: "\(source): '\(address)' needs a port, as in \(example)")
            }
            guard var node = RedisNode(address), let colon = address.lastIndex(of: ":"),
                  address[address.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }),
                  node.host.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) && !"/@,".unicodeScalars.contains($0) })
            else { throw usage }
            if node.host.hasPrefix("[") && node.host.hasSuffix("]") {
                node.host = String(node.host.dropFirst().dropLast())
                guard node.host.contains(":") else { throw usage }
            } else if node.host.contains(":") {
                throw usage
            }
            guard !node.host.isEmpty, !node.host.contains("["), !node.host.contains("]") else { throw usage }
            nodes.append(node)
        }
        return nodes
    }

    /// Origins as browsers send them in `Origin`, to be compared byte for
    /// byte: anything a browser would never send is refused here, not left
    /// to never match. `*` and `null` are refused: `*` lets every page on the
    /// web call the API from its visitors' browsers (and reach a server on a
    /// private network no outsider could), and `null` is the origin of
    /// sandboxed frames and local files, which any page can take on.
    static func crossOrigins(_ value: String, _ source: String) throws(UsageError) -> [String] {
        let origins = value.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
        guard !origins.isEmpty else {
            throw UsageError(description: "\(source) must name an origin, as in https://app.example.com")
        }
        for origin in origins { try checkOrigin(origin, source) }
        return origins
    }

    private static func checkOrigin(_ origin: String, _ source: String) throws(UsageError) {
        func refuse(_ why: String) -> UsageError { UsageError(description: "\(source): '\(origin)' \(why)") }
        if origin == "*" {
            throw refuse("would let every web page call this API from its visitors' browsers; name each origin, as in https://app.example.com")
        }
        if origin.lowercased() == "null" {
            throw refuse("is the origin of sandboxed frames and local files, which any page can take on; name a real origin, as in https://app.example.com")
        }
        let form = "must be an origin as browsers send it: http or https, a host and a port only if it is not the scheme's default, as in https://app.example.com or http://127.0.0.1:5173"
        guard let separator = origin.firstRange(of: "://") else { throw refuse(form) }
        let scheme = origin[..<separator.lowerBound], authority = origin[separator.upperBound...]
        guard scheme == "http" || scheme == "https" else {
            throw refuse(scheme.lowercased() == "http" || scheme.lowercased() == "https" ? "must be written in lower case, as browsers send it" : form)
        }
        if let slash = authority.firstIndex(where: { "/?#".contains($0) }) {
            throw refuse("has a path, query or fragment; an origin ends after the host and port: \(scheme)://\(authority[..<slash])")
        }
        guard origin.unicodeScalars.allSatisfy({ !("A"..."Z").contains($0) }) else {
            throw refuse("must be written in lower case, as browsers send it: \(origin.lowercased())")
        }
        // The host is a name or IPv4 address, or an IPv6 address in brackets; then the port, if any.
        var host = authority[...], port: Substring?
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { throw refuse(form) }
            host = authority[...close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { throw refuse(form) }
                port = rest.dropFirst()
            }
            guard host.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }),
                  host.contains(":") else { throw refuse(form) }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                port = authority[authority.index(after: colon)...]
            }
            guard !host.isEmpty, host.first != ".", host.last != ".",
                  host.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "." })
            else { throw refuse(form) }
        }
        if let port {
            guard let number = Int(port), (1...65_535).contains(number), port.first != "0", port.allSatisfy({ ("0"..."9").contains($0) }) else {
                throw refuse(form)
            }
            if (scheme == "http" && number == 80) || (scheme == "https" && number == 443) {
                throw refuse("names the scheme's default port, which browsers leave out: \(scheme)://\(host)")
            }
        }
    }
}
