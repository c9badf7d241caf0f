/// The opening handshake's checks and answer (RFC 6455 §4.2), from header
/// values: no HTTP here, so the server's plumbing and the tests share it.
public enum WebSocketHandshake {
    /// Why an upgrade request is refused; the server answers it with a problem.
    public enum Refusal: Error, Equatable, Sendable {
        /// No `Upgrade: websocket` and `Connection: Upgrade`: a plain GET (426).
        case notAnUpgrade
        /// `Sec-WebSocket-Version` other than 13 (426 with the version supported).
        case unsupportedVersion
        /// `Sec-WebSocket-Key` is not 16 bytes in base64 (400).
        case badKey
    }

    public static let supportedVersion = "13"

    /// The `Sec-WebSocket-Accept` value for an acceptable request.
    public static func accept(upgrade: String?, connection: String?, version: String?,
                              key: String?) throws(Refusal) -> String {
        guard let upgrade, Self.lowercased(upgrade).split(separator: ",").contains(where: { trimmed($0) == "websocket" }),
              let connection, Self.lowercased(connection).split(separator: ",").contains(where: { trimmed($0) == "upgrade" })
        else { throw .notAnUpgrade }
        guard version.map({ trimmed(Substring($0)) }) == supportedVersion else { throw .unsupportedVersion }
        guard let key, isValidKey(trimmed(Substring(key))) else { throw .badKey }
        return acceptValue(forKey: trimmed(Substring(key)))
    }

    /// base64(SHA-1(key + the protocol's GUID)), §4.2.2 item 5.4.
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(SHA1.digest(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
    }

    /// 16 bytes in base64: 22 characters of the alphabet and "==".
    static func isValidKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { Base64.alphabet.contains($0) }
    }

    private static func lowercased(_ text: String) -> String { text.lowercased() }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
