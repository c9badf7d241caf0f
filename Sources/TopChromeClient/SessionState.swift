import Foundation
import TopChromeCore

/// A session's top chrome as the service holds it and answers it (the
/// API's `ChromeState`, with the session's id). Not named `ChromeState`:
/// that is the core's state, which the service keeps and the client
/// predicts with, and an app that imports both modules must name each.
///
/// `version` grows by one on every change a watcher sees, so a client can
/// tell a newer state from an older one that arrived late.
public struct SessionState: Codable, Sendable, Hashable {
    public var id: String
    /// How tall status bar and island are together; content starts this far down.
    public var inset: Double
    /// Whether the island shows: at the top it does; below, as `behavior` says.
    public var isRevealed: Bool
    /// As the core counts it (`TopChromeCore.ChromeState.version`).
    public var version: UInt64
    /// The highest report `seq` the session applied, `nil` while none
    /// carried one. A `ChromeSession` numbers its reports above it, so a
    /// session attached again (an app relaunched) is never taken as stale.
    public var lastSeq: UInt64?
    /// How the island answers scrolling; `revealAtTop` from a service that names none.
    public var behavior: RevealBehavior
    /// How far the chrome collapses, in points.
    public var collapsibleHeight: Double
    /// Whether a gesture's end settles the chrome fully shown or fully hidden.
    public var snap: Bool
    /// 0 shown … 1 hidden, in hundredths: what an animated bar follows.
    public var collapsedFraction: Double
    /// How far the chrome is moved up, from `-collapsibleHeight` (hidden) to 0 (shown).
    public var heightOffset: Double

    /// A state with the original behaviour (`revealAtTop`, the whole inset
    /// collapsing), unless told otherwise.
    public init(id: String, inset: Double, isRevealed: Bool, version: UInt64, lastSeq: UInt64? = nil,
                behavior: RevealBehavior = .revealAtTop, collapsibleHeight: Double? = nil, snap: Bool = false,
                collapsedFraction: Double? = nil, heightOffset: Double? = nil) {
        self.id = id
        self.inset = inset
        self.isRevealed = isRevealed
        self.version = version
        self.lastSeq = lastSeq
        self.behavior = behavior
        let height = collapsibleHeight ?? inset
        self.collapsibleHeight = height
        self.snap = snap
        self.collapsedFraction = collapsedFraction ?? (isRevealed ? 0 : 1)
        self.heightOffset = heightOffset ?? (isRevealed ? 0 : -height)
    }

    private enum CodingKeys: String, CodingKey {
        case id, inset, isRevealed, version, lastSeq, behavior, collapsibleHeight, snap, collapsedFraction, heightOffset
    }

    /// A service from before behaviours sends none of their members: its
    /// sessions are `revealAtTop`, and read as such.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let behaviorName = try container.decodeIfPresent(String.self, forKey: .behavior)
        guard let behavior = RevealBehavior(rawValue: behaviorName ?? RevealBehavior.revealAtTop.rawValue) else {
            throw DecodingError.dataCorruptedError(forKey: .behavior, in: container,
                                                   debugDescription: "unknown behaviour \(behaviorName ?? "")")
        }
        self.init(id: try container.decode(String.self, forKey: .id),
                  inset: try container.decode(Double.self, forKey: .inset),
                  isRevealed: try container.decode(Bool.self, forKey: .isRevealed),
                  version: try container.decode(UInt64.self, forKey: .version),
                  lastSeq: try container.decodeIfPresent(UInt64.self, forKey: .lastSeq),
                  behavior: behavior,
                  collapsibleHeight: try container.decodeIfPresent(Double.self, forKey: .collapsibleHeight),
                  snap: try container.decodeIfPresent(Bool.self, forKey: .snap) ?? false,
                  collapsedFraction: try container.decodeIfPresent(Double.self, forKey: .collapsedFraction),
                  heightOffset: try container.decodeIfPresent(Double.self, forKey: .heightOffset))
    }

    /// The behaviour's members only where a behaviour was chosen, so a
    /// session that never named one is written as it always was.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(inset, forKey: .inset)
        try container.encode(isRevealed, forKey: .isRevealed)
        try container.encode(version, forKey: .version)
        try container.encodeIfPresent(lastSeq, forKey: .lastSeq)
        guard self != SessionState(id: id, inset: inset, isRevealed: isRevealed, version: version, lastSeq: lastSeq) else { return }
        try container.encode(behavior.rawValue, forKey: .behavior)
        try container.encode(collapsibleHeight, forKey: .collapsibleHeight)
        try container.encode(snap, forKey: .snap)
        try container.encode(collapsedFraction, forKey: .collapsedFraction)
        try container.encode(heightOffset, forKey: .heightOffset)
    }
}

/// The core's types an app names, so that `import TopChromeClient` alone is
/// enough, and an app that imports `TopChromeCore` too names the same
/// types, not two of each.
public typealias RevealBehavior = TopChromeCore.RevealBehavior
/// Where a report stands (`ScrollReport.Phase`: `.ended` lets `snap` settle).
public typealias ScrollReport = TopChromeCore.ScrollReport
/// Which scroll view a report comes from. Only the outer vertical one moves
/// the island: a horizontal row always stands at y = 0 and would bring it
/// back while the page is far down.
public typealias ScrollAxis = ScrollReport.Axis

/// An error answer of the service, as its `application/problem+json` body
/// (RFC 9457) says it.
public struct Problem: Codable, Sendable, Hashable {
    public var type: String?
    public var title: String?
    public var status: Int
    public var detail: String?
    /// With a 413 (`urn:topchrome:problem:content-too-large`): the largest body the service takes.
    public var maxBodyBytes: Int?

    public init(type: String? = nil, title: String? = nil, status: Int, detail: String? = nil, maxBodyBytes: Int? = nil) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Why a request to the service did not succeed.
public enum TopChromeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The session does not exist (any more): deleted, expired, or never
    /// created. Its queue and its event streams end with this.
    case sessionGone(id: String)
    /// The service refused the request and would refuse it again (a 4xx
    /// other than 404 and 429): the problem says why.
    case rejected(Problem)
    /// The service stayed unavailable (503, 429) through every retry.
    case unavailable(Problem)
    /// No answer through every retry (connection refused, reset, timed
    /// out), with the `URLError` code that says which (`.notConnectedToInternet`,
    /// `.timedOut`, `.cannotConnectToHost`…) where the system gave one.
    case transport(String, code: URLError.Code? = nil)

    /// A failure to reach the service, in these words, keeping its code.
    static func transport(_ error: any Error) -> TopChromeError {
        .transport(error.localizedDescription, code: (error as? URLError)?.code)
    }
    /// An answer that is not what the API promises (an event stream that is
    /// not `text/event-stream`: a captive portal or a proxy's page).
    case malformedResponse(String)
    /// A value the API cannot take (a non-finite offset or inset): refused
    /// before anything is sent.
    case invalidValue(String)
    /// An outage outlasted `Configuration.maximumQueuedReports`: this many
    /// of the oldest reports were dropped unsent.
    case reportsDropped(Int)

    public var description: String {
        switch self {
        case let .sessionGone(id): "session \(id) is gone"
        case let .rejected(problem), let .unavailable(problem):
            "\(problem.status) \(problem.title ?? "")\(problem.detail.map { ": " + $0 } ?? "")"
        case let .transport(reason, _): "no answer: \(reason)"
        case let .malformedResponse(reason): "malformed response: \(reason)"
        case let .invalidValue(reason): "invalid value: \(reason)"
        case let .reportsDropped(count): "\(count) of the oldest reports were dropped: more waited than the client keeps"
        }
    }
}

/// `localizedDescription` and alerts read the description, not "error 3".
extension TopChromeError: LocalizedError {
    public var errorDescription: String? { description }
}

/// Where a `RemoteTopChrome` stands with the service's event stream.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    /// Opening the stream (the first time, or after a clean end).
    case connecting
    /// The stream is open: `inset` and `isRevealed` are the service's.
    case live
    /// The stream failed or was cut (`lastError` says why); the next
    /// attempt follows after this many seconds.
    case retrying(after: Double)
    /// Not following: not started, cancelled, or ended for good (the
    /// session is gone, or the service refused: `lastError` says which).
    case stopped

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .live: "live"
        case let .retrying(after): "retrying in \((after * 10).rounded() / 10) s"
        case .stopped: "stopped"
        }
    }
}
