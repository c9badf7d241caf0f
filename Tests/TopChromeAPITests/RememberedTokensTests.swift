import AccessTokens
import Testing
@testable import TopChromeAPI

@Suite struct RememberedTokensTests {
    private func grant(expiresAt: Int64) -> RememberedTokens.Grant {
        .init(access: AccessToken(sessionID: nil, scope: [.read], expiresAt: expiresAt, issuedAt: nil), session: nil)
    }

    /// Distinct tokens of one length whose signatures (last 16 bytes) differ.
    private func token(_ number: Int) -> ArraySlice<UInt8> {
        ArraySlice(Array("header.payload.".utf8) + Array(String(1_000_000_000_000_000 + number).utf8))
    }

    @Test func aTokenIsFoundAgainByItsBytesInAnotherBuffer() {
        var tokens = RememberedTokens(capacity: 64)
        tokens.remember(grant(expiresAt: 42), as: token(1))
        #expect(tokens.grant(for: ArraySlice(Array(token(1))))?.access.expiresAt == 42)
        #expect(tokens.grant(for: token(2)) == nil)
    }

    @Test func aForgedPayloadUnderAKnownSignatureIsNotTakenForTheToken() {
        var tokens = RememberedTokens(capacity: 64)
        let real = Array("eyJhbGciOi.eyJzaWQiOiJhIn0.signature-0123456789abcdef".utf8)
        var forged = real
        forged[12] = UInt8(ascii: "X")  // same length and signature: same hash
        tokens.remember(grant(expiresAt: 42), as: ArraySlice(real))
        #expect(tokens.grant(for: ArraySlice(forged)) == nil)
        #expect(tokens.grant(for: ArraySlice(real)) != nil)
    }

    @Test func tokensWithOneHashTakeOneSlotSoCraftedOnesCannotPileUp() {
        var tokens = RememberedTokens(capacity: 64)
        let first = Array("aaaa.bbbb.signature-0123456789abcdef".utf8)
        for letter in UInt8(ascii: "a")...UInt8(ascii: "z") {
            var crafted = first
            crafted[0] = letter
            tokens.remember(grant(expiresAt: 42), as: ArraySlice(crafted))
        }
        #expect(tokens.count == 1)
        #expect(tokens.grant(for: ArraySlice(first)) == nil)
    }

    @Test func memoryStaysBoundedAndTheNewestIsAlwaysFound() {
        var tokens = RememberedTokens(capacity: 16)
        for number in 0..<1_000 {
            tokens.remember(grant(expiresAt: Int64(number)), as: token(number))
            #expect(tokens.grant(for: token(number)) != nil)
        }
        #expect(tokens.count <= 16)
    }

    @Test func aNewcomerTakesTheSlotOfTheTokenThatExpiresFirst() {
        // Four slots, all within every token's reach.
        var tokens = RememberedTokens(capacity: RememberedTokens.reach)
        let expiries: [Int64] = [300, 100, 400, 200]
        for (number, expiry) in expiries.enumerated() {
            tokens.remember(grant(expiresAt: expiry), as: token(number))
        }
        tokens.remember(grant(expiresAt: 500), as: token(9))
        #expect(tokens.grant(for: token(1)) == nil)
        for number in [0, 2, 3, 9] { #expect(tokens.grant(for: token(number)) != nil) }
        #expect(tokens.count == 4)
    }

    @Test func forgetAndRemoveAllEmptyTheTable() {
        var tokens = RememberedTokens(capacity: 64)
        tokens.remember(grant(expiresAt: 42), as: token(1))
        tokens.remember(grant(expiresAt: 42), as: token(2))
        tokens.forget(token(1))
        #expect(tokens.grant(for: token(1)) == nil)
        #expect(tokens.count == 1)
        tokens.forget(token(3))
        #expect(tokens.count == 1)
        tokens.removeAll()
        #expect(tokens.grant(for: token(2)) == nil)
        #expect(tokens.count == 0)
    }
}
