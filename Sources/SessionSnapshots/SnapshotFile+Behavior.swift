import StrictJSON
import TopChromeCore

/// A session's behaviour in the state file: members written only where the
/// session chose one or is under way in one, so a file of sessions that never
/// did reads as it always has.
extension SnapshotFile {
    static let sessionMembers: Set<String> = [
        "id", "inset", "isRevealed", "version", "lastSeq",
        "behavior", "snap", "collapsibleHeight", "heightOffset", "lastOffset",
    ]

    static func writeBehavior(of state: ChromeState, to object: inout JSONWriter.ObjectWriter) {
        if state.behavior != .revealAtTop { object.member("behavior") { $0.string(state.behavior.rawValue) } }
        if state.snap { object.member("snap") { $0.bool(true) } }
        if let height = state.chosenCollapsibleHeight { object.member("collapsibleHeight") { $0.number(Double(height)) } }
        if state.trackedHeightOffset.bitPattern != 0 { object.member("heightOffset") { $0.number(Double(state.trackedHeightOffset)) } }
        if let offset = state.lastOffset { object.member("lastOffset") { $0.number(offset) } }
    }

    func readBehavior(_ members: [String: JSONValue], line: JSONLine, into state: ChromeState) throws(Failure) -> ChromeState {
        var behavior = RevealBehavior.revealAtTop
        if let value = members["behavior"] {
            guard case let .string(name) = value, let parsed = RevealBehavior(rawValue: name) else { throw corrupt(line, "no valid behavior") }
            behavior = parsed
        }
        var snap = false
        if let value = members["snap"] {
            guard case let .bool(parsed) = value else { throw corrupt(line, "no valid snap") }
            snap = parsed
        }
        var chosen: Float?
        if let value = members["collapsibleHeight"] {
            guard let height = Self.float(value) else { throw corrupt(line, "no valid collapsibleHeight") }
            chosen = height
        }
        var tracked: Float = 0
        if let value = members["heightOffset"] {
            guard let offset = Self.float(value) else { throw corrupt(line, "no valid heightOffset") }
            tracked = offset
        }
        var lastOffset: Double?
        if let value = members["lastOffset"] {
            guard case let .number(offset, _) = value, offset.isFinite else { throw corrupt(line, "no valid lastOffset") }
            lastOffset = offset
        }
        return ChromeState(inset: state.inset, isRevealed: state.isRevealed, version: state.version, lastAppliedSeq: state.lastAppliedSeq,
                           behavior: behavior, snap: snap, chosenCollapsibleHeight: chosen, trackedHeightOffset: tracked,
                           lastOffset: lastOffset)
    }

    /// A float written as the double it widens to; nil for anything else.
    private static func float(_ value: JSONValue) -> Float? {
        guard case let .number(number, _) = value, number.isFinite else { return nil }
        return Float(exactly: number)
    }
}
