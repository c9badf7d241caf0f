/// A session's id: 128 bits from the system's cryptographic random source.
///
/// Whoever knows an id can read and change that session, so an id must not be
/// guessable; it is written as 32 lowercase hex digits, which are URL-safe.
///
/// The all-zero id is no id: it is never drawn, never parsed, and so never
/// reaches the store from a request or a state file. A value anyone can
/// write down without knowing a session is exactly what an id must not be;
/// and refusing it everywhere keeps it from ever naming a real session.
public struct SessionID: Sendable, Hashable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh id. `SystemRandomNumberGenerator` reads the kernel's CSPRNG
    /// (getrandom). Never the all-zero id, which parsing refuses: a session
    /// that had it could be neither reached nor restored. Drawing it is a
    /// one-in-2^128 event, so the loop practically never repeats.
    public static func random() -> SessionID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = SessionID(high: generator.next(), low: generator.next())
            if !id.isZero { return id }
        }
    }

    private var isZero: Bool { high | low == 0 }
}
