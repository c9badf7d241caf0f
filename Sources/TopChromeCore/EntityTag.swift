/// What tells apart two states of one session that carry the same version.
///
/// A version alone is not enough to name a state: a failover can lose the
/// last changes a primary acknowledged, a restart can come from an older
/// backup, and the next change then reuses a version for a different state.
/// A client holding the lost state would get 304 for the new one, or pass
/// `If-Match` over a state it never saw. So every state is named by its
/// version and a random tag that a lost state never shares with the one that
/// replaces it: the memory store's tag is drawn once per start (its epoch),
/// Redis draws one for every write that makes a new version.
public struct StateTag: Sendable, Hashable {
    /// 48 random bits: two states of a session sharing a version share a tag
    /// once in 2^48 failovers, and the ETag stays short.
    public static let hexDigits = 12
    static let mask: UInt64 = (1 << 48) - 1

    /// The tag's 48 bits, in the low bits.
    public let bits: UInt64

    /// A tag made of the low 48 bits of `bits`.
    public init(bits: UInt64) {
        self.bits = bits & Self.mask
    }

    /// A fresh tag from the kernel's random source.
    public static func random() -> StateTag {
        var generator = SystemRandomNumberGenerator()
        return StateTag(bits: generator.next())
    }

    /// Exactly twelve lower-case hex digits, as `writeHex` writes them: a tag
    /// written any other way is not one the server gave, and never matches.
    /// Inlinable: a reply from Redis carries one, and an unspecialized loop
    /// over `some Collection` cost more than the rest of the reply's decoding.
    @inlinable
    public init?(hex: some Collection<UInt8>) {
        guard hex.count == Self.hexDigits else { return nil }
        var value: UInt64 = 0
        for digit in hex {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value << 4 | UInt64(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = value << 4 | UInt64(digit - UInt8(ascii: "a") + 10)
            default: return nil
            }
        }
        bits = value
    }
}

/// A state's name for clients, `<version>.<tag>`: the ETag (quoted) and the
/// event id. Compared as a pair, so a lost state never matches the one that
/// took its version.
public struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    public let version: UInt64
    public let tag: StateTag

    /// The longest text: twenty digits, a dot, the tag.
    public static let maxLength = 20 + 1 + StateTag.hexDigits

    public init(version: UInt64, tag: StateTag) {
        self.version = version
        self.tag = tag
    }

    /// Parses `<version>.<tag>` exactly as `write` writes it: the version's
    /// digits without a leading zero or sign, the tag's twelve lower-case hex
    /// digits. Anything else (a bare `3`, the format before tags) names no state.
    public init?(_ text: some Collection<UInt8>) {
        guard let dot = text.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let digits = text[..<dot]
        guard let first = digits.first, first != UInt8(ascii: "0"), digits.count <= 20,
              digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let version = UInt64(String(decoding: digits, as: UTF8.self)),
              let tag = StateTag(hex: text[text.index(after: dot)...]) else { return nil }
        self.init(version: version, tag: tag)
    }
}
