import TopChromeCore

/// A session's behaviour as the library writes it beside the rest of its
/// state, in replies and change messages: five words, `behavior snap
/// chosenHeight trackedHeightOffset lastOffset`, `-` for none, absent
/// altogether for a session that reveals at the top as every session did
/// before behaviours (so their replies and messages stay as they were).
extension ChromeFunctions {
    /// The words for `state`, or nil when it has the default behaviour.
    static func behaviorWords(_ state: ChromeState) -> String? {
        guard state.behavior != .revealAtTop || state.snap || state.chosenCollapsibleHeight != nil
                || state.trackedHeightOffset.bitPattern != 0 || state.lastOffset != nil else { return nil }
        return [state.behavior.rawValue, state.snap ? "1" : "0", state.chosenCollapsibleHeight.map { "\(Double($0))" } ?? "-",
                "\(Double(state.trackedHeightOffset))", state.lastOffset.map { "\($0)" } ?? "-"].joined(separator: " ")
    }

    /// `state` with the behaviour the words give; nil if they are not the library's.
    /// The heights are floats written as the doubles they are, so they come back exactly.
    static func withBehavior(_ words: String, _ state: ChromeState) -> ChromeState? {
        let fields = words.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 5, let behavior = RevealBehavior(rawValue: String(fields[0])),
              let snap = revealed(String(fields[1])), let tracked = float(fields[3]) else { return nil }
        var chosen: Float?
        if fields[2] != "-" {
            guard let height = float(fields[2]) else { return nil }
            chosen = height
        }
        var lastOffset: Double?
        if fields[4] != "-" {
            guard let offset = Double(fields[4]), offset.isFinite else { return nil }
            lastOffset = offset
        }
        return ChromeState(inset: state.inset, isRevealed: state.isRevealed, version: state.version,
                           lastAppliedSeq: state.lastAppliedSeq, behavior: behavior, snap: snap,
                           chosenCollapsibleHeight: chosen, trackedHeightOffset: tracked, lastOffset: lastOffset)
    }

    /// A float the library wrote as a double: refused unless it is one exactly.
    private static func float(_ text: Substring) -> Float? {
        guard let value = Double(text), value.isFinite else { return nil }
        return Float(exactly: value)
    }
}
