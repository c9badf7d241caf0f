/// SplitMix64, seeded: random yet repeatable, so a failing run can be
/// replayed from its seed. Tests name ``seed`` in what they report on failure.
public struct SplitMix: RandomNumberGenerator, Sendable {
    /// Where the sequence started.
    public let seed: UInt64
    public private(set) var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
