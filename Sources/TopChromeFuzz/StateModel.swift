import StrictJSON
import TopChromeCore

/// The state a change leads to, and the members of a state's body.
///
/// A session that reveals at the top, as every session did before there
/// were behaviours, is held to the README's rules (`RulesModel`), written
/// apart from the server's. The other behaviours, and a report that names
/// the scrollable range, are computed by the core's `ChromeRules`: this
/// target checks what the HTTP layer makes of them (routes, bodies,
/// refusals, answers); the rules themselves are held to their
/// specification by the core's tests and to the Redis library's by the
/// differential test.
enum StateModel {
    static func after(_ kind: HTTPModel.Resource, body: [UInt8], before: ChromeState, threshold: Double) -> ChromeState {
        let rules = ChromeRules(revealThreshold: threshold)
        switch kind {
        case .inset:
            let inset = BodyModel.inset(body) ?? .nan
            guard isPlain(before) else { return rules.apply(.setInset(inset), to: before) }
            return RulesModel.apply([.inset(inset)], to: before, threshold: threshold)
        case .behavior:
            guard let settings = BodyModel.behavior(body) else { return before }
            return rules.apply(.setBehavior(settings), to: before)
        case .scroll:
            let reports = BodyModel.scroll(body) ?? []
            guard isPlain(before), reports.allSatisfy({ $0.contentHeight == nil && $0.viewportHeight == nil }) else {
                return rules.apply(reports.map(ChromeInput.scroll), to: before)
            }
            return RulesModel.apply(reports.map { .scroll($0) }, to: before, threshold: threshold)
        case .disappear:
            guard isPlain(before) else { return rules.apply(.disappear, to: before) }
            return RulesModel.apply([.disappear], to: before, threshold: threshold)
        default:
            return before
        }
    }

    /// Today's behaviour, with nothing left of another one (a session
    /// changed back to `revealAtTop` may still hold a tracked offset).
    private static func isPlain(_ state: ChromeState) -> Bool {
        state.hasDefaultBehavior && state.trackedHeightOffset == 0 && state.lastOffset == nil
    }

    /// The README's members; those of the behaviour only for a session
    /// that named one, so that the others read as they always did.
    static func members(of state: ChromeState) -> Set<String> {
        var members: Set<String> = ["id", "inset", "isRevealed", "version"]
        if state.lastAppliedSeq != nil { members.insert("lastSeq") }
        if !state.hasDefaultBehavior {
            members.formUnion(["behavior", "collapsibleHeight", "snap", "collapsedFraction", "heightOffset"])
        }
        return members
    }

    /// The behaviour's members say what the state holds (the heights are
    /// floats, written as their own shortest text).
    static func behaviorMatches(_ members: [String: JSONValue], _ state: ChromeState) -> Bool {
        guard !state.hasDefaultBehavior else { return true }
        guard members["behavior"] == .string(state.behavior.rawValue), members["snap"] == .bool(state.snap),
              case let .number(height, _)? = members["collapsibleHeight"], Float(height) == state.collapsibleHeight,
              case let .number(fraction, _)? = members["collapsedFraction"], fraction == state.collapsedFraction,
              case let .number(offset, _)? = members["heightOffset"], Float(offset) == state.heightOffset else { return false }
        return true
    }
}
