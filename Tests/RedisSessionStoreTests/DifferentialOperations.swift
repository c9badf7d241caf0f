import RedisTestSupport
import TopChromeCore
import TopChromeTesting

/// One operation of the differential run, on one session.
enum DifferentialOperation: Sendable, CustomStringConvertible {
    case create(inset: Double, settings: RevealSettings)
    /// Puts a state in place, as a state file or a backup would: reaches the
    /// version cap, and versions past the memory store's 40-bit slots.
    case restore(ChromeState)
    case read
    case apply([ChromeInput], if: DifferentialCondition)
    case remove(if: DifferentialCondition)

    var description: String {
        switch self {
        case let .create(inset, settings): "create(inset: \(inset), \(Self.describe(settings)))"
        case let .restore(state): "restore \(Exact(state))"
        case .read: "read"
        case let .apply(inputs, condition): "apply [\(inputs.map(Self.describe).joined(separator: ", "))] if \(condition)"
        case let .remove(condition): "remove if \(condition)"
        }
    }

    private static func describe(_ input: ChromeInput) -> String {
        switch input {
        case let .scroll(report):
            "scroll(y \(report.contentOffsetY), top \(report.contentInsetTop)\(report.axis == .horizontal ? ", horizontal" : "")"
                + "\(report.seq.map { ", seq \($0)" } ?? "")\(report.phase.map { ", \($0)" } ?? "")"
                + "\(report.contentHeight.map { ", content \($0)" } ?? "")\(report.viewportHeight.map { ", viewport \($0)" } ?? ""))"
        case let .setInset(inset): "setInset(\(inset))"
        case .disappear: "disappear"
        case let .setBehavior(settings): "setBehavior(\(describe(settings)))"
        }
    }

    private static func describe(_ settings: RevealSettings) -> String {
        "\(settings.behavior), height \(settings.collapsibleHeight.map { "\($0)" } ?? "inset"), snap \(settings.snap)"
    }
}

/// An `If-Match` / `If-None-Match` by what it says of the session's own
/// names, made concrete for each store from the tags that store gave: the
/// memory store names every state with its epoch, Redis with a tag per
/// write, so the same condition is different text in each.
indirect enum DifferentialCondition: Sendable, CustomStringConvertible {
    case always, never
    /// The session's current name.
    case current
    /// A name the session had before (the `n`th, modulo how many), or a
    /// version it does not have yet when it had none.
    case stale(Int)
    /// The current version with a tag neither store gave: a lost state that had the version.
    case otherTag
    case currentOrStale(Int)
    case notCurrent
    case notStale(Int)
    case all([DifferentialCondition])

    var description: String {
        switch self {
        case .always: "always"
        case .never: "never"
        case .current: "If-Match current"
        case let .stale(n): "If-Match stale #\(n)"
        case .otherTag: "If-Match current version, other tag"
        case let .currentOrStale(n): "If-Match current or stale #\(n)"
        case .notCurrent: "If-None-Match current"
        case let .notStale(n): "If-None-Match stale #\(n)"
        case let .all(conditions): "all of (\(conditions.map(\.description).joined(separator: "; ")))"
        }
    }

    /// A tag no store gives (their tags are random; one equal to this is moved off it).
    static let unseenTag = StateTag(bits: 0x0000_dead_5ea1)

    /// The condition in a store's terms. `current` nil: no session (the
    /// condition does not matter then). `older`: the names it had before, oldest first.
    func concrete(current: EntityTag?, older: [EntityTag]) -> VersionCondition {
        let current = current ?? EntityTag(version: 1, tag: Self.unseenTag)
        func stale(_ n: Int) -> EntityTag {
            older.isEmpty ? EntityTag(version: current.version + 1, tag: current.tag) : older[n % older.count]
        }
        switch self {
        case .always: return .always
        case .never: return .never
        case .current: return .oneOf([current])
        case let .stale(n): return .oneOf([stale(n)])
        case .otherTag:
            let other = current.tag == Self.unseenTag ? StateTag(bits: Self.unseenTag.bits ^ 1) : Self.unseenTag
            return .oneOf([EntityTag(version: current.version, tag: other)])
        case let .currentOrStale(n): return .oneOf([current, stale(n)])
        case .notCurrent: return .noneOf([current])
        case let .notStale(n): return .noneOf([stale(n)])
        case let .all(conditions): return .all(conditions.map { $0.concrete(current: current, older: older) })
        }
    }
}

/// Random operations, weighted towards what the rules decide: offsets at,
/// just under and just past the threshold, insets that need 17 digits or
/// keep a sign on zero, seqs that repeat, go back or sit at the largest allowed.
struct DifferentialGenerator {
    var rng: SplitMix
    let threshold: Double

    private static let maxWhole: UInt64 = (1 << 53) - 1

    mutating func operation() -> DifferentialOperation {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<4: .create(inset: inset(), settings: Bool.random(using: &rng) ? RevealSettings() : settings())
        case 4..<7: .restore(state())
        case 7..<15: .read
        case 15..<92: .apply((0..<Int.random(in: 0...4, using: &rng)).map { _ in input() }, if: condition())
        default: .remove(if: condition())
        }
    }

    mutating func condition(depth: Int = 0) -> DifferentialCondition {
        let n = Int.random(in: 0..<8, using: &rng)
        switch Int.random(in: 0..<20, using: &rng) {
        case 0..<9: return .always
        case 9..<12: return .current
        case 12: return .stale(n)
        case 13: return .otherTag
        case 14: return .currentOrStale(n)
        case 15: return .notCurrent
        case 16: return .notStale(n)
        case 17: return .never
        default: return depth > 0 ? .current : .all((0..<Int.random(in: 0...3, using: &rng)).map { _ in condition(depth: 1) })
        }
    }

    /// Every behaviour, heights within, at and past the inset, snapping or not.
    mutating func settings() -> RevealSettings {
        let height: Float? = switch Int.random(in: 0..<5, using: &rng) {
        case 0: nil
        case 1: [0, -0.0, 56.3, 0.1, 10_000].randomElement(using: &rng)!
        default: Float(Int.random(in: 0...8, using: &rng)) * 10 + [0, 0.5, 1.0 / 3].randomElement(using: &rng)!
        }
        return RevealSettings(behavior: RevealBehavior.allCases.randomElement(using: &rng)!, collapsibleHeight: height,
                              snap: Int.random(in: 0..<3, using: &rng) == 0)
    }

    mutating func input() -> ChromeInput {
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: return .setInset(inset())
        case 1: return .disappear
        case 2: return .setBehavior(settings())
        default:
            let top = [0, 0, 0, 44, -44, 0.2, 20.5].randomElement(using: &rng)!
            let near = [threshold, threshold.nextUp, threshold.nextDown, threshold + 0.1, threshold - 0.1].randomElement(using: &rng)!
            let offset: Double = switch Int.random(in: 0..<6, using: &rng) {
            case 0, 1: near - top
            case 2: [0, -0.0, -30, 300, 1e300, -1e300, .leastNonzeroMagnitude].randomElement(using: &rng)!
            case 3: Double.random(in: -100...1000, using: &rng)
            default: near
            }
            let horizontal = Int.random(in: 0..<8, using: &rng) == 0
            // Offsets that move by a little, by a lot, past the bottom; gestures that end.
            let moved = Int.random(in: 0..<3, using: &rng) == 0 ? offset : Double(Int.random(in: -20...400, using: &rng)) + [0, 0.25, 0.1].randomElement(using: &rng)!
            let phase = [nil, nil, ScrollReport.Phase.changed, .ended].randomElement(using: &rng)!
            let heights: (Double?, Double?) = switch Int.random(in: 0..<4, using: &rng) {
            case 0: (1000, 700)
            case 1: ([0, 300.5, 2e300].randomElement(using: &rng)!, [0, 500, 1e300].randomElement(using: &rng)!)
            case 2: (Bool.random(using: &rng) ? 900 : nil, nil)
            default: (nil, nil)
            }
            return .scroll(ScrollReport(contentOffsetY: moved, contentInsetTop: top,
                                        axis: horizontal ? .horizontal : .vertical, seq: seq(), phase: phase,
                                        contentHeight: heights.0, viewportHeight: heights.1))
        }
    }

    mutating func seq() -> UInt64? {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0..<4: nil
        case 4..<9: UInt64.random(in: 0...40, using: &rng)
        default: Self.maxWhole - UInt64.random(in: 0...2, using: &rng)
        }
    }

    mutating func inset() -> Double {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: [0, -0.0, 44.5, 0.1, 1.0 / 3, 0.30000000000000004, 123456789.00000001].randomElement(using: &rng)!
        case 1: [Double.leastNonzeroMagnitude, 2.2250738585072014e-308, 1.7976931348623157e308, -5].randomElement(using: &rng)!
        case 2: finiteBits()
        default: Double(Int.random(in: 0...3, using: &rng)) * 20
        }
    }

    /// Any finite double, so every bit of the text round trip is tried.
    mutating func finiteBits() -> Double {
        while true {
            let value = Double(bitPattern: rng.next())
            if value.isFinite { return value }
        }
    }

    mutating func state() -> ChromeState {
        let version: UInt64 = switch Int.random(in: 0..<4, using: &rng) {
        case 0: UInt64.random(in: 1...9, using: &rng)
        case 1: (1 << 40) - 2 + UInt64.random(in: 0...3, using: &rng)
        default: Self.maxWhole - UInt64.random(in: 0...3, using: &rng)
        }
        let seq: UInt64? = Bool.random(using: &rng) ? nil : [UInt64.random(in: 0...40, using: &rng), Self.maxWhole - 1].randomElement(using: &rng)!
        guard Bool.random(using: &rng) else {
            return ChromeState(inset: inset(), isRevealed: Bool.random(using: &rng), version: version, lastAppliedSeq: seq)
        }
        let settings = settings()
        return ChromeState(inset: inset(), isRevealed: Bool.random(using: &rng), version: version, lastAppliedSeq: seq,
                           behavior: settings.behavior, snap: settings.snap, chosenCollapsibleHeight: settings.collapsibleHeight,
                           trackedHeightOffset: -(settings.collapsibleHeight ?? 30) * Float(Int.random(in: 0...4, using: &rng)) / 4,
                           lastOffset: [nil, 0, 250.5, -1e300].randomElement(using: &rng)!)
    }
}
