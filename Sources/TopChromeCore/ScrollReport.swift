/// Where a scroll view stands, as a client reports it.
public struct ScrollReport: Sendable, Hashable {
    public enum Axis: String, Sendable, Hashable, CaseIterable {
        case vertical
        case horizontal
    }

    /// Where the report falls in a gesture; only its end matters, to snapping.
    public enum Phase: String, Sendable, Hashable, CaseIterable {
        case began
        case changed
        case ended
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
    public var phase: Phase?
    /// The scroll view's content and visible heights; given both, offsets
    /// past the end (the bottom rubber band) count as the end.
    public var contentHeight: Double?
    public var viewportHeight: Double?

    public init(contentOffsetY: Double, contentInsetTop: Double = 0, axis: Axis = .vertical, seq: UInt64? = nil,
                phase: Phase? = nil, contentHeight: Double? = nil, viewportHeight: Double? = nil) {
        self.contentOffsetY = contentOffsetY
        self.contentInsetTop = contentInsetTop
        self.axis = axis
        self.seq = seq
        self.phase = phase
        self.contentHeight = contentHeight
        self.viewportHeight = viewportHeight
    }

    /// The offset that counts: a scroll view with a top inset starts at
    /// `-contentInsetTop`, so without adding it back "at the top" would never be zero.
    public var effectiveOffset: Double {
        contentOffsetY + contentInsetTop
    }

    /// `effectiveOffset` within the scrollable range when the report gives
    /// both heights: the rubber band at the bottom springs back past the
    /// end, and that pull-down must not read as scrolling up.
    public var scrollableOffset: Double {
        let offset = effectiveOffset
        guard let contentHeight, let viewportHeight else { return offset }
        return offset.atLeast(0).atMost((contentHeight - viewportHeight).atLeast(0))
    }
}
