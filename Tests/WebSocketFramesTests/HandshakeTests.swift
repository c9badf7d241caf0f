import Testing
@testable import WebSocketFrames

@Suite struct HandshakeTests {
    /// RFC 6455 §1.3's example key and answer.
    @Test func acceptsTheRFCsExample() throws {
        #expect(try WebSocketHandshake.accept(upgrade: "websocket", connection: "keep-alive, Upgrade", version: "13",
                                              key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func sha1AndBase64MatchTheirStandardsVectors() {
        #expect(Base64.encode(SHA1.digest(Array("abc".utf8))) == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(Base64.encode(SHA1.digest(Array(String(repeating: "a", count: 1000).utf8)))
                == "KR6abGaZSUm1e6XmUDYemPw2sbo=")
        // Where the padding takes a block of its own.
        #expect(Base64.encode(SHA1.digest([UInt8](repeating: 0x61, count: 56))) == "wtszD2CDhUyZ1LW/tujynyAb5pk=")
        #expect(Base64.encode(SHA1.digest([UInt8](repeating: 0x61, count: 64))) == "AJi6gktcFkJ716ESKlpEKiXsZE0=")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foo".utf8)) == "Zm9v")
    }

    @Test func refusesAPlainGet() {
        #expect(throws: WebSocketHandshake.Refusal.notAnUpgrade) {
            try WebSocketHandshake.accept(upgrade: nil, connection: "Upgrade", version: "13", key: "dGhlIHNhbXBsZSBub25jZQ==")
        }
        #expect(throws: WebSocketHandshake.Refusal.notAnUpgrade) {
            try WebSocketHandshake.accept(upgrade: "websocket", connection: "close", version: "13", key: "dGhlIHNhbXBsZSBub25jZQ==")
        }
    }

    @Test(arguments: [nil, "8", "14", ""] as [String?])
    func refusesOtherVersions(_ version: String?) {
        #expect(throws: WebSocketHandshake.Refusal.unsupportedVersion) {
            try WebSocketHandshake.accept(upgrade: "WebSocket", connection: "Upgrade", version: version, key: "dGhlIHNhbXBsZSBub25jZQ==")
        }
    }

    @Test(arguments: [nil, "", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=x", "dGhlIHNhbXBsZSBub25j*Q=="] as [String?])
    func refusesBadKeys(_ key: String?) {
        #expect(throws: WebSocketHandshake.Refusal.badKey) {
            try WebSocketHandshake.accept(upgrade: "websocket", connection: "Upgrade", version: "13", key: key)
        }
    }
}
