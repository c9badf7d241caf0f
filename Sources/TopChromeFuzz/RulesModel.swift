import TopChromeCore

/// The README's rules, applied to a state.
enum RulesModel {
    enum Input {
        case scroll(ScrollReport), inset(Double), disappear
    }

    static func apply(_ inputs: [Input], to state: ChromeState, threshold: Double) -> ChromeState {
        var inset = state.inset, revealed = state.isRevealed, version = state.version
        var lastSeq = state.lastAppliedSeq
        func set(inset newInset: Double? = nil, revealed newRevealed: Bool? = nil) {
            let nextInset = newInset ?? inset, nextRevealed = newRevealed ?? revealed
            guard nextInset != inset || nextRevealed != revealed else { return }
            inset = nextInset
            revealed = nextRevealed
            version += 1
        }
        for input in inputs {
            switch input {
            case let .scroll(report):
                if let seq = report.seq {
                    if let last = lastSeq, seq <= last { continue }  // stale: ignored
                    lastSeq = seq
                }
                if report.axis == .vertical {
                    set(revealed: report.contentOffsetY + report.contentInsetTop <= threshold)
                }
            case let .inset(value): set(inset: value)
            case .disappear: set(revealed: true)
            }
        }
        return ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: lastSeq)
    }
}
