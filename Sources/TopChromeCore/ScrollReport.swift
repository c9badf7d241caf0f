/// Where a scroll view stands, as a client reports it.
public struct ScrollReport: Sendable, Hashable {
    public enum Axis: String, Sendable, Hashable, CaseIterable {
        case vertical
        case horizontal
    }

    /// Sequence numbers a client may send: integers a JSON number holds exactly.
    public static let allowedSeqs: ClosedRange<UInt64> = 0...((1 << 53) - 1)

    public var contentOffsetY: Double
    /// The scroll view's top content inset. It makes the view start at a
    /// negative offset, so it is added back to find "at the top".
    public var contentInsetTop: Double
    public var axis: Axis
    /// The client's order of reports; reports without one are always applied.
    public var seq: UInt64?

    public init(contentOffsetY: Double, contentInsetTop: Double = 0, axis: Axis = .vertical, seq: UInt64? = nil) {
        self.contentOffsetY = contentOffsetY
        self.contentInsetTop = contentInsetTop
        self.axis = axis
        self.seq = seq
    }

    /// The offset that counts: a scroll view with a top inset starts at
    /// `-contentInsetTop`, so without adding it back "at the top" would never be zero.
    public var effectiveOffset: Double {
        contentOffsetY + contentInsetTop
    }
}
